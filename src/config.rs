//! `pipeline.toml`: every setting the pipeline reads, checked in full before any side effect.
//! Unknown keys, wrong types and out-of-range values are errors that name the file and the key.

use crate::record::Category;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}\n  hint: pass --config <file>, or run from the folder that holds pipeline.toml")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("--set {arg}: {message}")]
    BadOverride { arg: String, message: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub release: Release,
    pub api: Api,
    #[serde(default)]
    pub local: Local,
    pub author: Author,
    pub repair: Repair,
    #[serde(default)]
    pub assemble: Assemble,
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    pub categories: BTreeMap<String, CategoryConfig>,
    /// The merged config (file + overrides) as read, for the content fingerprint.
    #[serde(skip)]
    table: toml::Table,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub version: String,
    pub per_category: usize,
    pub seed: u64,
    pub out_dir: PathBuf,
    #[serde(default = "default_id_prefix")]
    pub id_prefix: String,
    /// `YYYY-MM-DD`; empty means today (UTC). Pin it to rebuild a release byte for byte.
    #[serde(default)]
    pub date: String,
}

fn default_id_prefix() -> String {
    "sas1k-v2".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    Groq,
    Openai,
    Local,
    File,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Groq => "groq",
            Provider::Openai => "openai",
            Provider::Local => "local",
            Provider::File => "file",
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Api {
    pub provider: Provider,
    pub base_url: String,
    pub api_key_env: String,
    pub completion_window: String,
    pub poll_interval_secs: f64,
    pub max_requests_per_batch: usize,
    #[serde(default = "default_max_bytes")]
    pub max_bytes_per_batch: u64,
    #[serde(default = "default_max_requests_per_job")]
    pub max_requests_per_job: usize,
    #[serde(default = "default_batch_discount")]
    pub batch_discount: f64,
    #[serde(default = "default_retry_initial")]
    pub retry_initial_secs: f64,
    #[serde(default = "default_max_retries")]
    pub max_retries: usize,
    #[serde(default = "default_max_expiries")]
    pub max_expiries: usize,
    #[serde(default = "default_timeout")]
    pub request_timeout_secs: f64,
}

fn default_max_bytes() -> u64 {
    200_000_000
}
fn default_max_requests_per_job() -> usize {
    20_000
}
fn default_batch_discount() -> f64 {
    0.5
}
fn default_retry_initial() -> f64 {
    1.0
}
fn default_max_retries() -> usize {
    8
}
fn default_max_expiries() -> usize {
    3
}
fn default_timeout() -> f64 {
    300.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Local {
    #[serde(default = "default_model_path")]
    pub model_path: PathBuf,
    #[serde(default = "default_threads")]
    pub threads: u32,
    #[serde(default = "default_context")]
    pub context_size: u32,
    #[serde(default = "default_repeat_penalty")]
    pub repeat_penalty: f32,
}

impl Default for Local {
    fn default() -> Self {
        Local {
            model_path: default_model_path(),
            threads: default_threads(),
            context_size: default_context(),
            repeat_penalty: default_repeat_penalty(),
        }
    }
}

fn default_model_path() -> PathBuf {
    PathBuf::from("models/SmolLM2-135M-Instruct.Q4_1.gguf")
}
fn default_threads() -> u32 {
    2
}
fn default_context() -> u32 {
    4096
}
fn default_repeat_penalty() -> f32 {
    1.15
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    None,
    JsonObject,
    JsonSchema,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Author {
    pub model: String,
    #[serde(default)]
    pub extra_body: toml::Table,
    pub temperature: f64,
    pub max_tokens: u32,
    pub response_format: ResponseFormat,
    /// Valid items wanted per category, as a multiple of `release.per_category`.
    pub oversample: f64,
    pub max_rounds: u32,
    pub max_gold_words: usize,
    pub max_cost_usd: f64,
    #[serde(default = "default_bloat_factor")]
    pub bloat_factor: f64,
    pub domains: Vec<String>,
    /// The templates folder, relative to the config file.
    #[serde(default = "default_prompts_dir")]
    pub prompts_dir: PathBuf,
    /// With `response_format = "json_schema"`: ask the API to enforce the schema (`"strict":
    /// true`), for providers and models that support strict structured outputs.
    #[serde(default)]
    pub strict_schema: bool,
}

fn default_prompts_dir() -> PathBuf {
    PathBuf::from("prompts")
}

fn default_bloat_factor() -> f64 {
    3.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repair {
    pub models: Vec<String>,
    #[serde(default)]
    pub temperature: f64,
    pub max_tokens: u32,
    #[serde(default)]
    pub extra_body: toml::Table,
    #[serde(default = "default_repair_cost")]
    pub max_cost_usd: f64,
}

fn default_repair_cost() -> f64 {
    10.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assemble {
    #[serde(default = "default_threshold")]
    pub near_dup_threshold: f64,
    #[serde(default)]
    pub allow_short: bool,
    #[serde(default)]
    pub keep_flagged: bool,
}

impl Default for Assemble {
    fn default() -> Self {
        Assemble {
            near_dup_threshold: default_threshold(),
            allow_short: false,
            keep_flagged: false,
        }
    }
}

fn default_threshold() -> f64 {
    0.8
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryConfig {
    pub c: f64,
    #[serde(rename = "T")]
    pub t: f64,
    pub p: f64,
    pub d: u8,
    #[serde(rename = "L")]
    pub l: u32,
    pub items_per_request: usize,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Fewest words in a prompt of this category; below it the item is junk. Unset: the
    /// validator's default for the category.
    #[serde(default)]
    pub min_prompt_words: Option<usize>,
}

impl CategoryConfig {
    /// The category's target-action row, from which every record's `target_action`, `T`,
    /// `top_p`, `mode` and `max_new` derive.
    pub fn target(&self) -> crate::schema::TargetRow {
        crate::schema::TargetRow {
            c: self.c,
            t: self.t,
            p: self.p,
            d: self.d,
            l: self.l,
        }
    }
}

impl Config {
    /// Reads `path`, applies `--set` overrides, and checks everything.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config = Config::parse(&text, path, overrides)?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        config.resolve_paths(base);
        Ok(config)
    }

    /// Makes the config's relative paths relative to the folder that holds the config file.
    fn resolve_paths(&mut self, base: &Path) {
        for path in [
            &mut self.release.out_dir,
            &mut self.author.prompts_dir,
            &mut self.local.model_path,
        ] {
            if path.is_relative() {
                *path = base.join(&*path);
            }
        }
    }

    pub fn parse(text: &str, path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        for arg in overrides {
            apply_override(&mut table, arg)?;
        }
        let mut config: Config = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| invalid(e.to_string().trim_end().to_string()))?;
        config.table = table;
        config.check().map_err(invalid)?;
        Ok(config)
    }

    /// SHA-256 of the settings that decide a release's content: everything but where and how
    /// requests run (`[api]`, `[local]`, `[prices]`, `release.out_dir`).
    pub fn content_fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut table = self.table.clone();
        for operational in ["api", "local", "prices"] {
            table.remove(operational);
        }
        if let Some(release) = table.get_mut("release").and_then(toml::Value::as_table_mut) {
            release.remove("out_dir");
        }
        let text = toml::to_string(&table).unwrap_or_default();
        crate::batch::hex(&Sha256::digest(text.as_bytes()))
    }

    /// The category table of `category` (every category has one once `check` passed).
    pub fn category(&self, category: Category) -> &CategoryConfig {
        &self.categories[category.name()]
    }

    fn check(&self) -> Result<(), String> {
        let r = &self.release;
        require(
            !r.version.trim().is_empty(),
            "release.version",
            "a non-empty string such as \"v2\"",
        )?;
        require(
            r.version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_'),
            "release.version",
            "letters, digits, '.', '-' or '_' (it becomes part of a file name)",
        )?;
        require(
            r.per_category >= 1,
            "release.per_category",
            "a whole number ≥ 1",
        )?;
        require(
            !r.id_prefix.is_empty(),
            "release.id_prefix",
            "a non-empty string",
        )?;
        require(
            r.date.is_empty() || crate::clock::is_iso_date(&r.date),
            "release.date",
            "a date as YYYY-MM-DD, or \"\" for today",
        )?;
        let a = &self.api;
        require(
            a.poll_interval_secs > 0.0 && a.poll_interval_secs.is_finite(),
            "api.poll_interval_secs",
            "a number > 0",
        )?;
        require(
            a.max_requests_per_batch >= 1 && a.max_requests_per_batch <= 50_000,
            "api.max_requests_per_batch",
            "1 to 50000 (the Batch API's line limit)",
        )?;
        require(
            a.max_bytes_per_batch >= 1_000 && a.max_bytes_per_batch <= 200_000_000,
            "api.max_bytes_per_batch",
            "1000 to 200000000 (the Batch API's 200 MB file limit)",
        )?;
        require(
            a.max_requests_per_job >= 1,
            "api.max_requests_per_job",
            "a whole number ≥ 1",
        )?;
        require(
            (0.0..=1.0).contains(&a.batch_discount),
            "api.batch_discount",
            "a fraction from 0 to 1",
        )?;
        require(
            a.retry_initial_secs > 0.0 && a.retry_initial_secs.is_finite(),
            "api.retry_initial_secs",
            "a number > 0",
        )?;
        require(
            a.request_timeout_secs > 0.0 && a.request_timeout_secs.is_finite(),
            "api.request_timeout_secs",
            "a number > 0",
        )?;
        require(
            a.max_expiries >= 1,
            "api.max_expiries",
            "a whole number ≥ 1",
        )?;
        require(
            !a.completion_window.trim().is_empty(),
            "api.completion_window",
            "a window such as \"24h\"",
        )?;
        require(
            !a.api_key_env.trim().is_empty(),
            "api.api_key_env",
            "the name of an environment variable",
        )?;
        if matches!(a.provider, Provider::Groq | Provider::Openai) {
            crate::batch::client::check_base_url(&a.base_url).map_err(|e| e.to_string())?;
        }
        let au = &self.author;
        require(!au.model.trim().is_empty(), "author.model", "a model name")?;
        require(
            (0.0..=2.0).contains(&au.temperature),
            "author.temperature",
            "a number from 0 to 2",
        )?;
        require(
            au.max_tokens >= 16,
            "author.max_tokens",
            "a whole number ≥ 16",
        )?;
        require(
            au.oversample >= 1.0 && au.oversample <= 10.0,
            "author.oversample",
            "a number from 1 to 10",
        )?;
        require(
            au.max_rounds >= 1,
            "author.max_rounds",
            "a whole number ≥ 1",
        )?;
        require(
            au.max_gold_words >= 1,
            "author.max_gold_words",
            "a whole number ≥ 1",
        )?;
        require(
            au.max_cost_usd >= 0.0,
            "author.max_cost_usd",
            "a number ≥ 0",
        )?;
        require(
            au.bloat_factor >= 1.0,
            "author.bloat_factor",
            "a number ≥ 1",
        )?;
        require(
            !au.domains.is_empty(),
            "author.domains",
            "a non-empty list of enterprise domains",
        )?;
        require(
            au.domains.iter().all(|d| !d.trim().is_empty()),
            "author.domains",
            "non-empty domain names",
        )?;
        let rp = &self.repair;
        require(
            !rp.models.is_empty(),
            "repair.models",
            "a list of one or more verifier models",
        )?;
        require(
            (0.0..=2.0).contains(&rp.temperature),
            "repair.temperature",
            "a number from 0 to 2",
        )?;
        require(
            rp.max_tokens >= 16,
            "repair.max_tokens",
            "a whole number ≥ 16",
        )?;
        require(
            rp.max_cost_usd >= 0.0,
            "repair.max_cost_usd",
            "a number ≥ 0",
        )?;
        let mut seen = std::collections::BTreeSet::new();
        require(
            rp.models.iter().all(|m| seen.insert(m)),
            "repair.models",
            "distinct model names",
        )?;
        require(
            (0.0..=1.0).contains(&self.assemble.near_dup_threshold)
                && self.assemble.near_dup_threshold > 0.0,
            "assemble.near_dup_threshold",
            "a Jaccard similarity in (0, 1]",
        )?;
        for (model, price) in &self.prices {
            require(
                price.input_per_mtok >= 0.0 && price.output_per_mtok >= 0.0,
                &format!("prices.\"{model}\""),
                "prices ≥ 0 in USD per million tokens",
            )?;
        }
        for name in self.categories.keys() {
            if Category::from_name(name).is_none() {
                let known: Vec<_> = Category::ALL.iter().map(|c| c.name()).collect();
                return Err(format!(
                    "unknown category [categories.{name}]; expected one of: {}",
                    known.join(", ")
                ));
            }
        }
        for category in Category::ALL {
            let key = format!("categories.{category}");
            let Some(row) = self.categories.get(category.name()) else {
                return Err(format!("missing table [{key}] (every category needs its target action c, T, p, d, L and items_per_request)"));
            };
            require(
                (0.0..=1.0).contains(&row.c),
                &format!("{key}.c"),
                "a fraction from 0 to 1",
            )?;
            require(
                (0.0..=2.0).contains(&row.t),
                &format!("{key}.T"),
                "a temperature from 0 to 2",
            )?;
            require(
                row.p > 0.0 && row.p <= 1.0,
                &format!("{key}.p"),
                "a top-p in (0, 1]",
            )?;
            require(row.d <= 1, &format!("{key}.d"), "0 (STRICT) or 1 (DEEP)")?;
            require(
                row.l >= 1 && row.l <= 2048,
                &format!("{key}.L"),
                "max new tokens from 1 to 2048",
            )?;
            require(
                row.items_per_request >= 1 && row.items_per_request <= 50,
                &format!("{key}.items_per_request"),
                "1 to 50",
            )?;
            if let Some(t) = row.max_tokens {
                require(t >= 16, &format!("{key}.max_tokens"), "a whole number ≥ 16")?;
            }
            if let Some(words) = row.min_prompt_words {
                require(
                    (1..=2000).contains(&words),
                    &format!("{key}.min_prompt_words"),
                    "1 to 2000 words",
                )?;
            }
        }
        Ok(())
    }
}

fn require(ok: bool, key: &str, expected: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("invalid value for `{key}`: expected {expected}"))
    }
}

/// Applies one `--set dotted.key=value`; the value is parsed as TOML, else taken as a string.
fn apply_override(table: &mut toml::Table, arg: &str) -> Result<(), ConfigError> {
    let bad = |message: &str| ConfigError::BadOverride {
        arg: arg.to_string(),
        message: message.to_string(),
    };
    let (key, raw) = arg
        .split_once('=')
        .ok_or_else(|| bad("expected <dotted.key>=<value>"))?;
    let path: Vec<&str> = key.trim().split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(bad("the key has an empty part"));
    }
    let value = parse_override_value(raw.trim());
    let (last, parents) = path.split_last().ok_or_else(|| bad("empty key"))?;
    let mut node = table;
    for part in parents {
        let entry = node
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = entry
            .as_table_mut()
            .ok_or_else(|| bad(&format!("`{part}` is not a table")))?;
    }
    node.insert(last.to_string(), value);
    Ok(())
}

fn parse_override_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
    }

    #[test]
    fn shipped_configs_load_and_resolve_paths_next_to_the_file() {
        for name in ["pipeline.toml", "pipeline.local.toml"] {
            let config =
                Config::load(&repo_file(name), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(config.categories.len(), 10, "{name}");
            assert!(config.author.prompts_dir.is_absolute(), "{name}");
            assert!(
                config
                    .release
                    .out_dir
                    .starts_with(env!("CARGO_MANIFEST_DIR")),
                "{name}"
            );
        }
    }

    #[test]
    fn overrides_parse_toml_values_else_strings() {
        let args = [
            "release.per_category=7".to_string(),
            "api.base_url=http://127.0.0.1:8080/openai/v1".to_string(),
            "repair.models=[\"a\", \"b\"]".to_string(),
        ];
        let config = Config::load(&repo_file("pipeline.toml"), &args).unwrap();
        assert_eq!(config.release.per_category, 7);
        assert_eq!(config.api.base_url, "http://127.0.0.1:8080/openai/v1");
        assert_eq!(config.repair.models, ["a", "b"]);
    }

    #[test]
    fn errors_name_the_file_the_key_and_what_is_expected() {
        let path = repo_file("pipeline.toml");
        let err = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            Config::load(&path, &args).unwrap_err().to_string()
        };
        let unknown = err(&["author.colour=1"]);
        assert!(
            unknown.contains("pipeline.toml") && unknown.contains("colour"),
            "{unknown}"
        );
        let wrong_type = err(&["release.seed=\"many\""]);
        assert!(wrong_type.contains("seed"), "{wrong_type}");
        let range = err(&["categories.reasoning.d=2"]);
        assert!(
            range.contains("categories.reasoning.d") && range.contains("0 (STRICT) or 1 (DEEP)"),
            "{range}"
        );
        let bad_override = err(&["no-equals-sign"]);
        assert!(
            bad_override.contains("<dotted.key>=<value>"),
            "{bad_override}"
        );
    }

    #[test]
    fn a_missing_category_table_is_an_error() {
        let text = std::fs::read_to_string(repo_file("pipeline.toml")).unwrap();
        let cut = text.find("[categories.memory_update]").unwrap();
        let err = Config::parse(&text[..cut], Path::new("p.toml"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("missing table [categories.memory_update]"),
            "{err}"
        );
    }

    #[test]
    fn the_content_fingerprint_ignores_where_requests_run_but_not_what_they_ask() {
        let path = repo_file("pipeline.toml");
        let load = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            Config::load(&path, &args).unwrap().content_fingerprint()
        };
        let base = load(&[]);
        assert_eq!(
            base,
            load(&[
                "api.base_url=http://127.0.0.1:1/v1",
                "release.out_dir=elsewhere"
            ])
        );
        assert_ne!(base, load(&["author.model=other/model"]));
        assert_ne!(base, load(&["release.seed=1"]));
    }
}
