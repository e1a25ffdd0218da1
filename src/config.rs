//! `pipeline.toml`: every setting the pipeline reads, checked in full before any side effect.
//! Unknown keys, wrong types and out-of-range values are errors that name the file and the key.

use crate::release::schema::TargetRow;
use crate::stages::item::Category;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The largest config file read (a real one is a few KB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

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
    #[serde(default)]
    pub online: Online,
    pub author: Author,
    pub repair: Repair,
    #[serde(default)]
    pub audit: Audit,
    #[serde(default)]
    pub assemble: Assemble,
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    pub categories: Categories,
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
    /// Any OpenAI-compatible `/chat/completions` server, one request at a time per slot.
    Online,
    Local,
    File,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Groq => "groq",
            Provider::Openai => "openai",
            Provider::Online => "online",
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
    /// The GGUF file of every model name when `models` is empty (the one-model case).
    #[serde(default = "default_model_path")]
    pub model_path: PathBuf,
    /// Model name (as `author.model`, `repair.models` and `audit.models` spell it) → GGUF file.
    /// When set, every model name the stages use must be here, so a verifier can never run on
    /// the author's weights by accident.
    #[serde(default)]
    pub models: BTreeMap<String, PathBuf>,
    /// Requests decoded together, one llama.cpp sequence each.
    #[serde(default = "default_parallel")]
    pub parallel: u32,
    #[serde(default = "default_threads")]
    pub threads: u32,
    #[serde(default = "default_context")]
    pub context_size: u32,
    #[serde(default = "default_repeat_penalty")]
    pub repeat_penalty: f32,
    /// A llama.cpp chat template name (`chatml`, `llama3`, …) or a Jinja template, for a model
    /// whose GGUF carries none; `""` uses the model's own.
    #[serde(default)]
    pub chat_template: String,
    /// End a reply caught in a loop at once instead of decoding it to `max_tokens`.
    #[serde(default = "default_cut_loops")]
    pub cut_loops: bool,
}

impl Default for Local {
    fn default() -> Self {
        Local {
            model_path: default_model_path(),
            models: BTreeMap::new(),
            parallel: default_parallel(),
            threads: default_threads(),
            context_size: default_context(),
            repeat_penalty: default_repeat_penalty(),
            chat_template: String::new(),
            cut_loops: default_cut_loops(),
        }
    }
}

fn default_model_path() -> PathBuf {
    PathBuf::from("models/SmolLM2-135M-Instruct.Q4_1.gguf")
}
fn default_threads() -> u32 {
    2
}
fn default_parallel() -> u32 {
    4
}
fn default_context() -> u32 {
    4096
}
fn default_repeat_penalty() -> f32 {
    1.15
}
fn default_cut_loops() -> bool {
    true
}

/// `[online]`: how hard the `online` backend may drive its server. The limiter adapts below
/// these ceilings (429s, 503s, rate-limit headers, rising latency); it never goes above them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Online {
    /// Most requests in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Requests per minute, at most; unset: no ceiling but what the server signals.
    #[serde(default)]
    pub rpm: Option<f64>,
    /// Tokens per minute (prompt estimate + `max_tokens`), at most; unset: no ceiling.
    #[serde(default)]
    pub tpm: Option<f64>,
}

impl Default for Online {
    fn default() -> Self {
        Online {
            concurrency: default_concurrency(),
            rpm: None,
            tpm: None,
        }
    }
}

fn default_concurrency() -> usize {
    8
}

impl Local {
    /// The GGUF file that serves model `name`: its `[local.models]` entry, or `model_path` when
    /// that table is empty; `None` for a name the table lacks.
    pub fn model_file(&self, name: &str) -> Option<&Path> {
        if self.models.is_empty() {
            Some(&self.model_path)
        } else {
            self.models.get(name).map(PathBuf::as_path)
        }
    }

    /// The config key that names the file of model `name`, for messages.
    pub fn model_key(&self, name: &str) -> String {
        if self.models.is_empty() {
            MODEL_PATH.to_string()
        } else {
            format!("{MODELS}.\"{name}\"")
        }
    }
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
    /// Round 0's valid items wanted per category, as a multiple of `release.per_category`.
    pub oversample: f64,
    /// Rounds of the whole loop (author → repair → audit → dedup), round 0 included.
    pub max_rounds: u32,
    /// A top-up asks for the missing items ÷ the measured survival rate × (1 + this margin).
    #[serde(default = "default_topup_margin")]
    pub topup_margin: f64,
    /// The most authoring requests all top-up rounds together send; unset, no bound but the
    /// cost guard's. A top-up round over what is left is cut, shared so that each short category
    /// is expected to generate as many tokens: the bound of a run whose requests cost time, not
    /// money.
    #[serde(default)]
    pub max_topup_requests: Option<usize>,
    /// The survival rate `author --dry-run` predicts the loop's rounds from, and the loop sizes
    /// a top-up by before any item survived, for every category without its own
    /// `prior_survival`.
    #[serde(default = "default_prior_survival")]
    pub prior_survival: f64,
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

fn default_topup_margin() -> f64 {
    0.25
}

fn default_prior_survival() -> f64 {
    0.7
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

/// `[audit]`: the answering panel. Sampling keys left unset come from each category's target
/// row (`T`, `p`, `L`), as the benchmark's panel will answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    /// The panel; empty means no audit.
    #[serde(default = "default_panel")]
    pub models: Vec<String>,
    /// Panel models that must reach the key; unset: a majority of the panel.
    #[serde(default)]
    pub min_correct: Option<usize>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    #[serde(default = "default_audit_cost")]
    pub max_cost_usd: f64,
    #[serde(default)]
    pub extra_body: toml::Table,
    /// Ask the context categories' questions once more without their context.
    #[serde(default = "default_context_probe")]
    pub context_probe: bool,
}

impl Default for Audit {
    fn default() -> Self {
        Audit {
            models: default_panel(),
            min_correct: None,
            max_tokens: None,
            temperature: None,
            top_p: None,
            max_cost_usd: default_audit_cost(),
            extra_body: toml::Table::new(),
            context_probe: default_context_probe(),
        }
    }
}

impl Audit {
    /// Panel models that must reach a key for it to pass.
    pub fn min_correct(&self) -> usize {
        self.min_correct.unwrap_or(self.models.len() / 2 + 1)
    }
}

/// The card's pilot panel on Groq.
fn default_panel() -> Vec<String> {
    [
        "llama-3.3-70b-versatile",
        "qwen/qwen3-32b",
        "openai/gpt-oss-120b",
    ]
    .map(String::from)
    .to_vec()
}

fn default_audit_cost() -> f64 {
    10.0
}

fn default_context_probe() -> bool {
    true
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
    crate::quality::dedup::DEFAULT_THRESHOLD
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// One `[categories.<name>]` table: the category's target-action row and how it is authored.
#[derive(Debug, Clone)]
pub struct CategoryConfig {
    /// `c, T, p, d, L`: every record's `target_action`, `T`, `top_p`, `mode` and `max_new`
    /// derive from it.
    pub target: TargetRow,
    pub items_per_request: usize,
    pub max_tokens: Option<u32>,
    /// Fewest words in a prompt of this category; below it the item is junk. Unset: the
    /// validator's default for the category.
    pub min_prompt_words: Option<usize>,
    /// The survival this category's items had with this author in earlier runs: the loop's
    /// estimate leans on it where the run's own rate would stand in. Unset: the run's rate.
    /// 0: the category is not asked at all.
    pub prior_survival: Option<f64>,
}

/// The authoring keys of a category table, beside its target row's.
#[derive(Debug, Clone, Deserialize)]
struct Authoring {
    items_per_request: usize,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    min_prompt_words: Option<usize>,
    #[serde(default)]
    prior_survival: Option<f64>,
}

const AUTHORING_KEYS: [&str; 4] = [
    "items_per_request",
    "max_tokens",
    "min_prompt_words",
    "prior_survival",
];

impl CategoryConfig {
    /// Whether the run asks this category for items: not when its `prior_survival` is 0, the
    /// config's own statement that this author's items of it do not survive.
    pub fn is_asked(&self) -> bool {
        self.prior_survival != Some(0.0)
    }

    /// Reads the table of `category`: its row and its authoring keys, each error naming the
    /// key's full path.
    fn read(category: Category, table: toml::Table) -> Result<CategoryConfig, String> {
        let within = |e: toml::de::Error| {
            e.to_string()
                .trim_end()
                .replace("in `", &format!("in `categories.{category}."))
        };
        if let Some(unknown) = table.keys().find(|key| {
            !TargetRow::KEYS.contains(&key.as_str()) && !AUTHORING_KEYS.contains(&key.as_str())
        }) {
            return Err(format!(
                "unknown key `categories.{category}.{unknown}`, expected one of {}",
                TargetRow::KEYS
                    .iter()
                    .chain(&AUTHORING_KEYS)
                    .map(|key| format!("`{key}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let value = toml::Value::Table(table);
        let target: TargetRow = value.clone().try_into().map_err(within)?;
        let authoring: Authoring = value.try_into().map_err(within)?;
        Ok(CategoryConfig {
            target,
            items_per_request: authoring.items_per_request,
            max_tokens: authoring.max_tokens,
            min_prompt_words: authoring.min_prompt_words,
            prior_survival: authoring.prior_survival,
        })
    }
}

/// The ten category tables, one per [`Category`], so that every category has its row.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "BTreeMap<Category, toml::Table>")]
pub struct Categories([CategoryConfig; 10]);

impl TryFrom<BTreeMap<Category, toml::Table>> for Categories {
    type Error = String;

    fn try_from(mut tables: BTreeMap<Category, toml::Table>) -> Result<Categories, String> {
        let missing = |category: Category| {
            format!("missing table [categories.{category}] (every category needs its target action c, T, p, d, L and items_per_request)")
        };
        let mut rows = Vec::with_capacity(Category::ALL.len());
        for category in Category::ALL {
            let table = tables.remove(&category).ok_or_else(|| missing(category))?;
            rows.push(CategoryConfig::read(category, table)?);
        }
        <[CategoryConfig; 10]>::try_from(rows)
            .map(Categories)
            .map_err(|_| "the category tables do not number ten".to_string())
    }
}

impl Categories {
    pub fn get(&self, category: Category) -> &CategoryConfig {
        &self.0[category.index()]
    }
}

impl Config {
    /// Reads `path` (and the files it extends), applies `--set` overrides, and checks
    /// everything. Relative paths are relative to the folder of the file that sets them.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
        let text = read_text(path)?;
        Config::parse(&text, path, overrides)
    }

    /// Makes each relative path relative to the folder of the file that set it.
    fn resolve_paths(
        &mut self,
        folders: &BTreeMap<&'static str, PathBuf>,
        model_folders: &BTreeMap<String, PathBuf>,
    ) {
        // A `[local.models]` entry is relative to the file that set it; one set only by `--set`
        // is relative to the file that set `local.model_path`, as that key's would be.
        for (name, path) in &mut self.local.models {
            let folder = model_folders.get(name).or_else(|| folders.get(MODEL_PATH));
            if let (true, Some(folder)) = (path.is_relative(), folder) {
                *path = folder.join(&*path);
            }
        }
        for (key, path) in [
            (OUT_DIR, &mut self.release.out_dir),
            (PROMPTS_DIR, &mut self.author.prompts_dir),
            (MODEL_PATH, &mut self.local.model_path),
        ] {
            if let (true, Some(folder)) = (path.is_relative(), folders.get(key)) {
                *path = folder.join(&*path);
            }
        }
    }

    /// Parses `text`, the content of `path`, with the files it extends (read relative to
    /// `path`'s folder) as its base; then applies `--set` overrides and checks everything.
    pub fn parse(text: &str, path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let layered = Layered::of(text, path, 0)?;
        let folders = layered.folders;
        let model_folders = layered.model_folders;
        let file_table = layered.table;
        let mut table = file_table.clone();
        let mut read_as_strings = Vec::new();
        for arg in overrides {
            let set = Override::parse(arg)?;
            set.apply(&mut table)?;
            if set.not_toml.is_some() {
                read_as_strings.push(set);
            }
        }
        let mut config: Config = match toml::Value::Table(table.clone()).try_into() {
            Ok(config) => config,
            Err(e) => {
                let message = e.to_string().trim_end().to_string();
                return Err(
                    blame_override(&file_table, overrides, &read_as_strings, &message)
                        .unwrap_or_else(|| invalid(message)),
                );
            }
        };
        config.table = table;
        config.resolve_paths(&folders, &model_folders);
        let mut sets = overrides.iter().filter_map(|arg| Override::parse(arg).ok());
        config.check().map_err(|message| {
            // The last --set of a key is the one in effect, so it is the one to blame.
            match sets.rfind(|set| message.contains(&format!("`{}`", set.key()))) {
                Some(set) => ConfigError::BadOverride {
                    arg: set.arg,
                    message,
                },
                None => invalid(message),
            }
        })?;
        Ok(config)
    }

    /// SHA-256 of the settings that decide a release's content: everything but where and how
    /// requests run (`[api]`, `[local]`, `[online]`, `[prices]`, `release.out_dir`).
    pub fn content_fingerprint(&self) -> String {
        let mut table = self.table.clone();
        for operational in ["api", "local", "online", "prices"] {
            table.remove(operational);
        }
        if let Some(release) = table.get_mut("release").and_then(toml::Value::as_table_mut) {
            release.remove("out_dir");
        }
        let text = toml::to_string(&table).unwrap_or_default();
        crate::util::digest::sha256_hex(text.as_bytes())
    }

    /// The category table of `category` (every category has one).
    pub fn category(&self, category: Category) -> &CategoryConfig {
        self.categories.get(category)
    }

    /// The most tokens an authoring reply of `category` may generate: its table's
    /// `max_tokens`, else `author.max_tokens`.
    pub fn author_max_tokens(&self, category: Category) -> u32 {
        self.category(category)
            .max_tokens
            .unwrap_or(self.author.max_tokens)
    }

    fn check_audit(&self) -> Result<(), String> {
        let au = &self.audit;
        for model in &au.models {
            model_name(model, "audit.models")?;
            require(
                !model.ends_with(crate::quality::panel::NO_CONTEXT_SUFFIX),
                "audit.models",
                "model names that do not end in `/no-context` (it marks the context probe's custom_ids)",
            )?;
        }
        let mut seen = std::collections::BTreeSet::new();
        require(
            au.models.iter().all(|m| seen.insert(m)),
            "audit.models",
            "distinct model names",
        )?;
        if let Some(n) = au.min_correct {
            whole(n, "audit.min_correct", 0, au.models.len())?;
        }
        if let Some(t) = au.max_tokens {
            whole(t, "audit.max_tokens", 1, MAX_TOKENS)?;
        }
        if let Some(t) = au.temperature {
            number(t, "audit.temperature", 0.0, 2.0)?;
        }
        if let Some(p) = au.top_p {
            require(p > 0.0 && p <= 1.0, "audit.top_p", "a top-p in (0, 1]")?;
        }
        number(au.max_cost_usd, "audit.max_cost_usd", 0.0, MAX_COST_USD)
    }

    /// With `api.provider = "local"` and a `[local.models]` table, every model a stage asks for
    /// must have a file there: a name without one would otherwise be an error hours into a run.
    fn check_local_models(&self) -> Result<(), String> {
        if self.api.provider != Provider::Local || self.local.models.is_empty() {
            return Ok(());
        }
        let used = std::iter::once(("author.model", &self.author.model))
            .chain(self.repair.models.iter().map(|m| ("repair.models", m)))
            .chain(self.audit.models.iter().map(|m| ("audit.models", m)));
        for (key, name) in used {
            if !self.local.models.contains_key(name) {
                let known: Vec<&str> = self.local.models.keys().map(String::as_str).collect();
                return Err(format!(
                    "invalid value for `{key}`: model \"{name}\" has no GGUF file in [local.models] (it names {}); add `\"{name}\" = \"models/<file>.gguf\"` to [local.models], or use one of those names",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Every check, table by table; the first that fails names its key.
    fn check(&self) -> Result<(), String> {
        self.check_release()?;
        self.check_api()?;
        self.check_online()?;
        self.check_local()?;
        self.check_author()?;
        self.check_repair()?;
        self.check_audit()?;
        self.check_local_models()?;
        self.check_assemble()?;
        self.check_prices()?;
        self.check_categories()
    }

    /// Checks the `[release]` table: a version usable in a file name, the size, the ids and the
    /// date.
    fn check_release(&self) -> Result<(), String> {
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
        whole(r.per_category, "release.per_category", 1, 1_000_000)?;
        require(
            !r.id_prefix.is_empty(),
            "release.id_prefix",
            "a non-empty string",
        )?;
        require(
            r.date.is_empty() || crate::util::clock::is_iso_date(&r.date),
            "release.date",
            "a date as YYYY-MM-DD, or \"\" for today",
        )?;
        Ok(())
    }

    /// Checks the `[api]` table: the batch limits, timeouts and retries, and the endpoint the
    /// key may go to.
    fn check_api(&self) -> Result<(), String> {
        let a = &self.api;
        seconds(
            a.poll_interval_secs,
            "api.poll_interval_secs",
            0.001,
            3600.0,
        )?;
        whole(
            a.max_requests_per_batch,
            "api.max_requests_per_batch",
            1,
            50_000,
        )?;
        require(
            a.max_bytes_per_batch >= 1_000 && a.max_bytes_per_batch <= 200_000_000,
            "api.max_bytes_per_batch",
            "1000 to 200000000 (the Batch API's 200 MB file limit)",
        )?;
        whole(
            a.max_requests_per_job,
            "api.max_requests_per_job",
            1,
            MAX_REQUESTS,
        )?;
        number(a.batch_discount, "api.batch_discount", 0.0, 1.0)?;
        seconds(
            a.retry_initial_secs,
            "api.retry_initial_secs",
            0.001,
            3600.0,
        )?;
        seconds(
            a.request_timeout_secs,
            "api.request_timeout_secs",
            0.1,
            86_400.0,
        )?;
        whole(a.max_retries, "api.max_retries", 0, 100)?;
        whole(a.max_expiries, "api.max_expiries", 1, 100)?;
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
        match a.provider {
            Provider::Groq | Provider::Openai => {
                crate::runner::endpoint::check_base_url(&a.base_url).map_err(|e| e.to_string())?;
            }
            // Whether plain http is allowed depends on whether a key is set, which the client
            // checks when it starts; the URL's form is checked here.
            Provider::Online => {
                crate::runner::endpoint::check_online_url(&a.base_url, false)
                    .map_err(|e| e.to_string())?;
            }
            Provider::Local | Provider::File => {}
        }
        Ok(())
    }

    /// Checks the `[online]` table: concurrency and the optional rate ceilings.
    fn check_online(&self) -> Result<(), String> {
        let o = &self.online;
        whole(o.concurrency, "online.concurrency", 1, MAX_CONCURRENCY)?;
        if let Some(rpm) = o.rpm {
            per_minute(rpm, "online.rpm", "requests")?;
        }
        if let Some(tpm) = o.tpm {
            per_minute(tpm, "online.tpm", "tokens")?;
        }
        Ok(())
    }

    /// Checks the `[local]` table: threads, model names, the KV cache's size and the chat template.
    fn check_local(&self) -> Result<(), String> {
        let l = &self.local;
        whole(l.threads, "local.threads", 1, 1024)?;
        for (name, path) in &l.models {
            model_name(name, &format!("{MODELS}.\"{name}\""))?;
            require(
                !path.as_os_str().is_empty(),
                &format!("{MODELS}.\"{name}\""),
                "the path of a GGUF file",
            )?;
        }
        whole(l.context_size, "local.context_size", 64, 1 << 20)?;
        whole(l.parallel, "local.parallel", 1, MAX_PARALLEL)?;
        require(
            u64::from(l.context_size) * u64::from(l.parallel) <= MAX_LOCAL_CELLS,
            "local.parallel",
            &format!("at most {MAX_LOCAL_CELLS} tokens of KV cache in all (local.context_size × local.parallel)"),
        )?;
        whole(l.context_size, "local.context_size", 64, 1 << 20)?;
        number(l.repeat_penalty, "local.repeat_penalty", 0.01, 10.0)?;
        require(
            !l.chat_template.contains('\0') && l.chat_template.len() <= 65_536,
            "local.chat_template",
            "a llama.cpp template name or a Jinja template (no NUL characters, at most 64 KB), or \"\" for the model's own",
        )?;
        Ok(())
    }

    /// Checks the `[author]` table: the model, sampling, rounds, cost guard and domains.
    fn check_author(&self) -> Result<(), String> {
        let au = &self.author;
        model_name(&au.model, "author.model")?;
        number(au.temperature, "author.temperature", 0.0, 2.0)?;
        whole(au.max_tokens, "author.max_tokens", 16, MAX_TOKENS)?;
        number(au.oversample, "author.oversample", 1.0, 10.0)?;
        whole(au.max_rounds, "author.max_rounds", 1, 100)?;
        number(au.topup_margin, "author.topup_margin", 0.0, 10.0)?;
        if let Some(max) = au.max_topup_requests {
            whole(max, "author.max_topup_requests", 1, MAX_REQUESTS)?;
        }
        number(au.prior_survival, "author.prior_survival", 0.01, 1.0)?;
        whole(au.max_gold_words, "author.max_gold_words", 1, 100)?;
        number(au.max_cost_usd, "author.max_cost_usd", 0.0, MAX_COST_USD)?;
        number(au.bloat_factor, "author.bloat_factor", 1.0, 100.0)?;
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
        Ok(())
    }

    /// Checks the `[repair]` table: one or more distinct verifier models, their sampling and
    /// cost guard.
    fn check_repair(&self) -> Result<(), String> {
        let rp = &self.repair;
        require(
            !rp.models.is_empty(),
            "repair.models",
            "a list of one or more verifier models",
        )?;
        for model in &rp.models {
            model_name(model, "repair.models")?;
        }
        number(rp.temperature, "repair.temperature", 0.0, 2.0)?;
        whole(rp.max_tokens, "repair.max_tokens", 16, MAX_TOKENS)?;
        number(rp.max_cost_usd, "repair.max_cost_usd", 0.0, MAX_COST_USD)?;
        let mut seen = std::collections::BTreeSet::new();
        require(
            rp.models.iter().all(|m| seen.insert(m)),
            "repair.models",
            "distinct model names",
        )?;
        Ok(())
    }

    /// Checks `[assemble]`: the near-duplicate threshold is a similarity in (0, 1].
    fn check_assemble(&self) -> Result<(), String> {
        require(
            (0.0..=1.0).contains(&self.assemble.near_dup_threshold)
                && self.assemble.near_dup_threshold > 0.0,
            "assemble.near_dup_threshold",
            "a Jaccard similarity in (0, 1]",
        )?;
        Ok(())
    }

    /// Checks `[prices]`: every model's prices per million tokens.
    fn check_prices(&self) -> Result<(), String> {
        for (model, price) in &self.prices {
            let key = format!("prices.\"{model}\"");
            number(
                price.input_per_mtok,
                &format!("{key}.input_per_mtok"),
                0.0,
                MAX_PRICE,
            )?;
            number(
                price.output_per_mtok,
                &format!("{key}.output_per_mtok"),
                0.0,
                MAX_PRICE,
            )?;
        }
        Ok(())
    }

    /// Checks every `[categories.<name>]` table: its target row, items per request and
    /// limits.
    fn check_categories(&self) -> Result<(), String> {
        for category in Category::ALL {
            let key = format!("categories.{category}");
            let table = self.category(category);
            let row = &table.target;
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
                table.items_per_request >= 1 && table.items_per_request <= 50,
                &format!("{key}.items_per_request"),
                "1 to 50",
            )?;
            if let Some(t) = table.max_tokens {
                whole(t, &format!("{key}.max_tokens"), 16, MAX_TOKENS)?;
            }
            if let Some(words) = table.min_prompt_words {
                require(
                    (1..=2000).contains(&words),
                    &format!("{key}.min_prompt_words"),
                    "1 to 2000 words",
                )?;
            }
            if let Some(prior) = table.prior_survival {
                number(prior, &format!("{key}.prior_survival"), 0.0, 1.0)?;
                require(
                    table.is_asked() || self.assemble.allow_short,
                    &format!("{key}.prior_survival"),
                    "above 0 unless assemble.allow_short = true: at 0 the run asks the category for nothing, so the release could never be full",
                )?;
            }
        }
        require(
            Category::ALL
                .into_iter()
                .any(|category| self.category(category).is_asked()),
            "categories.<name>.prior_survival",
            "above 0 in at least one category: at 0 in every one, the run would ask for nothing",
        )
    }
}

/// The top-level key of a profile that overlays another config file: `extends = "pipeline.toml"`.
pub const EXTENDS: &str = "extends";
/// Most files in an `extends` chain (a deeper chain is a cycle or a mistake).
const MAX_EXTENDS_DEPTH: usize = 4;
/// Tables copied whole from the file that sets them rather than merged key by key: they are
/// request-body fragments for one provider, not settings.
const OPAQUE_TABLES: &[&str] = &["extra_body"];
/// The keys that hold paths, each resolved against the folder of the file that sets it.
const OUT_DIR: &str = "release.out_dir";
const PROMPTS_DIR: &str = "author.prompts_dir";
const MODEL_PATH: &str = "local.model_path";
/// The table of model name → GGUF file, each entry resolved like a path key.
const MODELS: &str = "local.models";
const PATH_KEYS: [&str; 3] = [OUT_DIR, PROMPTS_DIR, MODEL_PATH];

/// A config file's table with the files it extends merged under it, and the folder of the file
/// that set each path key.
struct Layered {
    table: toml::Table,
    folders: BTreeMap<&'static str, PathBuf>,
    /// The folder of the file that set each `[local.models]` entry.
    model_folders: BTreeMap<String, PathBuf>,
}

impl Layered {
    fn of(text: &str, path: &Path, depth: usize) -> Result<Layered, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let own: BTreeMap<&'static str, PathBuf> = PATH_KEYS
            .into_iter()
            .filter(|key| lookup(&table, key).is_some())
            .map(|key| (key, folder.clone()))
            .collect();
        let own_models: BTreeMap<String, PathBuf> = lookup(&table, MODELS)
            .and_then(toml::Value::as_table)
            .map(|models| {
                models
                    .keys()
                    .map(|name| (name.clone(), folder.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let base = match table.remove(EXTENDS) {
            None => {
                let folders = PATH_KEYS.into_iter().map(|k| (k, folder.clone())).collect();
                return Ok(Layered {
                    table,
                    folders,
                    model_folders: own_models,
                });
            }
            Some(toml::Value::String(base)) => folder.join(base),
            Some(_) => {
                return Err(invalid(format!(
                    "`{EXTENDS}` must name the config file this one overlays, e.g. {EXTENDS} = \"pipeline.toml\""
                )))
            }
        };
        if depth + 1 >= MAX_EXTENDS_DEPTH {
            return Err(invalid(format!(
                "`{EXTENDS}` chains through more than {MAX_EXTENDS_DEPTH} files (is there a cycle?); extend a file that extends nothing"
            )));
        }
        let mut layered = Layered::of(&read_text(&base)?, &base, depth + 1)?;
        overlay(&mut layered.table, table);
        layered.folders.extend(own);
        layered.model_folders.extend(own_models);
        Ok(layered)
    }
}

/// Merges `top` onto `base`: tables merge key by key (except the opaque ones, which `top`
/// replaces whole), every other value of `top` replaces `base`'s.
fn overlay(base: &mut toml::Table, top: toml::Table) {
    for (key, value) in top {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(under)), toml::Value::Table(over))
                if !OPAQUE_TABLES.contains(&key.as_str()) =>
            {
                overlay(under, over)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The value at a dotted key of `table`.
fn lookup<'t>(table: &'t toml::Table, dotted: &str) -> Option<&'t toml::Value> {
    let mut parts = dotted.split('.');
    let first = table.get(parts.next()?)?;
    parts.try_fold(first, |value, part| value.as_table()?.get(part))
}

/// A config file's text: capped in size, a UTF-8 byte-order mark dropped, UTF-8 required.
fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = crate::util::fsio::read_capped(path, MAX_CONFIG_BYTES).map_err(|source| {
        ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "the file is not UTF-8 text: invalid byte at {}; save it as UTF-8",
                crate::util::fsio::utf8_error_position(bytes, &e)
            ),
        })
}

/// Upper bounds of the open-ended numeric keys: far above any real use, low enough that no
/// arithmetic or allocation derived from them can overflow.
const MAX_TOKENS: u32 = 1_000_000;
const MAX_COST_USD: f64 = 1_000_000.0;
const MAX_PRICE: f64 = 10_000.0;
/// Most local sequences decoded together: far above what a CPU gains from.
pub const MAX_PARALLEL: u32 = 64;
/// Most KV-cache cells of a local context (llama.cpp counts positions in `i32`).
const MAX_LOCAL_CELLS: u64 = 1 << 24;

/// A whole-number key within `lo..=hi`.
fn whole<T: PartialOrd + fmt::Display>(value: T, key: &str, lo: T, hi: T) -> Result<(), String> {
    let ok = value >= lo && value <= hi;
    require(ok, key, &format!("a whole number from {lo} to {hi}"))
}

/// A number key within `lo..=hi` (NaN and infinities are outside every range).
fn number<T: Into<f64> + Copy>(value: T, key: &str, lo: f64, hi: f64) -> Result<(), String> {
    let value = value.into();
    let ok = value.is_finite() && value >= lo && value <= hi;
    require(ok, key, &format!("a number from {lo} to {hi}"))
}

/// Most requests a job, or all top-up rounds together, may be allowed.
const MAX_REQUESTS: usize = 10_000_000;

/// Most requests in flight `online.concurrency` allows: past any server's batch size.
const MAX_CONCURRENCY: usize = 4096;
/// Largest `online.rpm` / `online.tpm`: far above any provider's limit.
const MAX_PER_MINUTE: f64 = 1e12;

/// A rate ceiling: a positive number of `what` per minute.
fn per_minute(value: f64, key: &str, what: &str) -> Result<(), String> {
    let ok = value.is_finite() && value > 0.0 && value <= MAX_PER_MINUTE;
    require(
        ok,
        key,
        &format!("{what} per minute above 0 (at most {MAX_PER_MINUTE:e}), or leave it unset for no ceiling"),
    )
}

/// A duration key in seconds within `lo..=hi`.
fn seconds(value: f64, key: &str, lo: f64, hi: f64) -> Result<(), String> {
    let ok = value.is_finite() && value >= lo && value <= hi;
    require(ok, key, &format!("a number of seconds from {lo} to {hi}"))
}

/// A model name: it goes into request bodies, custom_ids and file fingerprints, so it must be
/// a non-blank single line of printable text.
fn model_name(name: &str, key: &str) -> Result<(), String> {
    let ok = !name.trim().is_empty()
        && name.trim() == name
        && name.chars().count() <= 256
        && !name.chars().any(char::is_control);
    require(
        ok,
        key,
        "model names: non-blank, without surrounding spaces or control characters, at most 256 characters",
    )
}

fn require(ok: bool, key: &str, expected: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("invalid value for `{key}`: expected {expected}"))
    }
}

/// One `--set dotted.key=value`: the key's path (TOML dotted-key syntax, so quoted parts such
/// as `prices."llama-3.3-70b-versatile"` work) and its value, parsed as TOML or else taken as a
/// string (then `not_toml` keeps why, for the error if the key wanted something else).
struct Override {
    arg: String,
    path: Vec<String>,
    value: toml::Value,
    not_toml: Option<String>,
}

impl Override {
    fn parse(arg: &str) -> Result<Override, ConfigError> {
        let bad = |message: &str| ConfigError::BadOverride {
            arg: arg.to_string(),
            message: message.to_string(),
        };
        let (key, raw) = split_at_unquoted_equals(arg).ok_or_else(|| {
            bad(if arg.contains('=') {
                "the key is not a TOML dotted key: a quote in it is never closed"
            } else {
                "expected <dotted.key>=<value>"
            })
        })?;
        let path = dotted_key_path(key.trim()).ok_or_else(|| {
            bad("the key is not a TOML dotted key (bare parts are letters, digits, _ and -; quote other parts, e.g. prices.\"llama-3.3-70b-versatile\".input_per_mtok)")
        })?;
        let raw = raw.trim();
        let parsed = format!("v = {raw}")
            .parse::<toml::Table>()
            .map(|mut t| t.remove("v"));
        let (value, not_toml) = match parsed {
            Ok(Some(value)) => (value, None),
            Ok(None) => (
                toml::Value::String(raw.to_string()),
                Some("no value".into()),
            ),
            Err(e) => {
                let why = e.to_string();
                let why = why
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                (
                    toml::Value::String(raw.to_string()),
                    Some(why.trim().to_string()),
                )
            }
        };
        Ok(Override {
            arg: arg.to_string(),
            path,
            value,
            not_toml,
        })
    }

    fn apply(&self, table: &mut toml::Table) -> Result<(), ConfigError> {
        let bad = |message: String| ConfigError::BadOverride {
            arg: self.arg.clone(),
            message,
        };
        let Some((last, parents)) = self.path.split_last() else {
            return Err(bad("empty key".into()));
        };
        let mut node = table;
        for part in parents {
            let entry = node
                .entry(part.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            node = entry
                .as_table_mut()
                .ok_or_else(|| bad(format!("`{part}` is not a table")))?;
        }
        node.insert(last.clone(), self.value.clone());
        Ok(())
    }

    fn key(&self) -> String {
        self.path.join(".")
    }
}

/// Splits `key=value` at the first `=` outside a quoted key part.
fn split_at_unquoted_equals(arg: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    for (i, c) in arg.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => return Some((&arg[..i], &arg[i + 1..])),
            _ => {}
        }
    }
    None
}

/// The parts of a TOML dotted key (`a."b.c".d` → `a`, `b.c`, `d`), read by the TOML parser.
fn dotted_key_path(key: &str) -> Option<Vec<String>> {
    if key.is_empty() || key.contains(['\n', '\r', '[', ']', '#']) {
        return None;
    }
    let mut table = format!("{key} = 0").parse::<toml::Table>().ok()?;
    let mut path = Vec::new();
    loop {
        if table.len() != 1 {
            return None;
        }
        let (part, value) = table.into_iter().next()?;
        path.push(part);
        match value {
            toml::Value::Table(inner) => table = inner,
            _ => return Some(path),
        }
    }
}

/// When the merged config does not deserialize and an override that was not valid TOML (read as
/// a string) is the cause, an error that says so and names the key, instead of blaming the file.
fn blame_override(
    file_table: &toml::Table,
    overrides: &[String],
    read_as_strings: &[Override],
    error: &str,
) -> Option<ConfigError> {
    read_as_strings.iter().find_map(|suspect| {
        let mut table = file_table.clone();
        for arg in overrides.iter().filter(|a| **a != suspect.arg) {
            Override::parse(arg).ok()?.apply(&mut table).ok()?;
        }
        let without: Result<Config, _> = toml::Value::Table(table).try_into();
        without.is_ok().then(|| {
            let why = error.lines().next().unwrap_or("");
            let not_toml = suspect.not_toml.clone().unwrap_or_default();
            ConfigError::BadOverride {
                arg: suspect.arg.clone(),
                message: format!(
                    "the value is not valid TOML ({not_toml}), so it was read as the string {:?}, which {} does not accept ({why}). Write numbers, booleans and lists as TOML (0.05, true, [\"a\"]) and quote strings (\"…\")",
                    suspect.value.as_str().unwrap_or(""),
                    suspect.key()
                ),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
    }

    /// The field names a `Deserialize` type asks for: serde hands them to `deserialize_struct`,
    /// which this deserializer records before refusing to go on.
    fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
        struct Fields(&'static [&'static str]);
        impl<'de> serde::Deserializer<'de> for &mut Fields {
            type Error = serde::de::value::Error;
            fn deserialize_any<V: serde::de::Visitor<'de>>(
                self,
                _: V,
            ) -> Result<V::Value, Self::Error> {
                Err(serde::de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0 = fields;
                Err(serde::de::Error::custom("fields read"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut fields = Fields(&[]);
        let _ = T::deserialize(&mut fields);
        fields.0
    }

    /// Whether `pipeline.toml` sets `key` in a table `in_section` accepts or names it in a
    /// comment: the dotted `section.key` anywhere, a comment among the table's lines, or one in
    /// the comment block right above the table's header.
    fn documented(text: &str, section: &str, in_section: impl Fn(&str) -> bool, key: &str) -> bool {
        let names = |line: &str| {
            line.match_indices(key).any(|(at, _)| {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                !line[..at].ends_with(word) && !line[at + key.len()..].starts_with(word)
            })
        };
        if text.contains(&format!("{section}.{key}")) {
            return true;
        }
        let (mut current, mut block) = (String::new(), Vec::new());
        for line in text.lines().map(str::trim) {
            if let Some(header) = line.strip_prefix('[') {
                current = header.split(']').next().unwrap_or_default().to_string();
                if in_section(&current) && block.iter().any(|comment: &&str| names(comment)) {
                    return true;
                }
                block.clear();
            } else if let Some(comment) = line.strip_prefix('#') {
                block.push(comment);
                if in_section(&current) && names(comment) {
                    return true;
                }
            } else if !line.is_empty() {
                block.clear();
                let setting = line.split('=').next().unwrap_or_default().trim();
                if in_section(&current) && setting == key {
                    return true;
                }
            }
        }
        false
    }

    #[test]
    fn every_config_key_is_set_or_described_in_pipeline_toml() {
        let text = std::fs::read_to_string(repo_file("pipeline.toml")).unwrap();
        let sections: [(&str, &[&str]); 9] = [
            ("release", field_names::<Release>()),
            ("api", field_names::<Api>()),
            ("local", field_names::<Local>()),
            ("online", field_names::<Online>()),
            ("author", field_names::<Author>()),
            ("repair", field_names::<Repair>()),
            ("audit", field_names::<Audit>()),
            ("assemble", field_names::<Assemble>()),
            ("prices", field_names::<Price>()),
        ];
        let categories: Vec<&str> = TargetRow::KEYS
            .iter()
            .chain(&AUTHORING_KEYS)
            .copied()
            .collect();
        assert_eq!(
            field_names::<Config>(),
            [
                sections.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
                vec!["categories"]
            ]
            .concat(),
            "a new table of Config needs its line in this test"
        );
        let mut missing = Vec::new();
        let categories = ("categories", &categories[..]);
        for (section, fields) in sections.iter().chain([&categories]) {
            assert!(!fields.is_empty(), "{section}: no fields read");
            // `[prices."<model>"]` and `[categories.<name>]` are tables of tables.
            let nested = matches!(*section, "prices" | "categories");
            let in_section = |name: &str| {
                name == *section || (nested && name.starts_with(&format!("{section}.")))
            };
            for key in fields.iter() {
                if !documented(&text, section, in_section, key) {
                    missing.push(format!("{section}.{key}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "pipeline.toml neither sets nor describes these keys: {missing:?}"
        );
    }

    #[test]
    fn shipped_configs_load_and_resolve_paths_next_to_the_file() {
        for name in ["pipeline.toml", "pipeline.local.toml"] {
            let config =
                Config::load(&repo_file(name), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                Category::ALL
                    .iter()
                    .all(|c| config.category(*c).items_per_request >= 1),
                "{name}"
            );
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

    /// The error `Config::load` gives for the shipped pipeline.toml with `args` as overrides.
    fn load_error(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match Config::load(&repo_file("pipeline.toml"), &args) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_numeric_key_has_a_range_checked_at_load() {
        let cases: &[(&[&str], &str)] = &[
            (&["api.retry_initial_secs=1e300"], "api.retry_initial_secs"),
            (&["api.poll_interval_secs=1e300"], "api.poll_interval_secs"),
            (
                &["api.request_timeout_secs=1e300"],
                "api.request_timeout_secs",
            ),
            (
                &["api.request_timeout_secs=nan"],
                "api.request_timeout_secs",
            ),
            (
                &["release.per_category=1000000000000"],
                "release.per_category",
            ),
            (
                &[
                    "release.per_category=1000000000000000000",
                    "author.oversample=10",
                ],
                "release.per_category",
            ),
            (&["api.max_retries=1000000"], "api.max_retries"),
            (&["api.max_expiries=1000000"], "api.max_expiries"),
            (
                &["api.max_requests_per_job=1000000000000"],
                "api.max_requests_per_job",
            ),
            (&["author.max_cost_usd=inf"], "author.max_cost_usd"),
            (&["repair.max_cost_usd=1e300"], "repair.max_cost_usd"),
            (&["author.max_tokens=4000000000"], "author.max_tokens"),
            (&["author.max_rounds=4000000000"], "author.max_rounds"),
            (
                &["author.max_topup_requests=0"],
                "author.max_topup_requests",
            ),
            (
                &["author.max_topup_requests=1000000000000"],
                "author.max_topup_requests",
            ),
            (&["author.max_gold_words=1000000"], "author.max_gold_words"),
            (&["author.bloat_factor=inf"], "author.bloat_factor"),
            (&["local.threads=100000"], "local.threads"),
            (&["local.context_size=4000000000"], "local.context_size"),
            (&["local.repeat_penalty=inf"], "local.repeat_penalty"),
            (
                &["prices.\"qwen/qwen3-32b\".input_per_mtok=inf"],
                "input_per_mtok",
            ),
            (
                &["categories.reasoning.max_tokens=4000000000"],
                "categories.reasoning.max_tokens",
            ),
            (
                &["categories.memory_recall.prior_survival=1.5"],
                "categories.memory_recall.prior_survival",
            ),
            (
                &["categories.memory_recall.prior_survival=nan"],
                "categories.memory_recall.prior_survival",
            ),
        ];
        for (args, key) in cases {
            let err = load_error(args);
            assert!(
                err.contains(key) && err.contains(" to "),
                "{args:?}: the error names the key and its range: {err}"
            );
        }
    }

    #[test]
    fn a_category_at_prior_survival_zero_needs_allow_short_and_another_category_asked() {
        let err = load_error(&["categories.reasoning.prior_survival=0.0"]);
        assert!(
            err.contains("categories.reasoning.prior_survival")
                && err.contains("assemble.allow_short"),
            "{err}"
        );
        let mut every: Vec<String> = Category::ALL
            .iter()
            .map(|c| format!("categories.{c}.prior_survival=0.0"))
            .collect();
        every.push("assemble.allow_short=true".to_string());
        let every: Vec<&str> = every.iter().map(String::as_str).collect();
        let err = load_error(&every);
        assert!(
            err.contains("categories.<name>.prior_survival") && err.contains("at least one"),
            "{err}"
        );
        let local =
            Config::load(&repo_file("pipeline.local.toml"), &[]).expect("the profile loads");
        assert!(!local.category(Category::Reasoning).is_asked());
        assert!(local.category(Category::MemoryRecall).is_asked());
    }

    #[test]
    fn a_set_value_that_is_not_toml_is_blamed_on_the_set_with_its_key() {
        let err = load_error(&["api.poll_interval_secs=0.o5"]);
        assert!(
            err.contains("--set api.poll_interval_secs=0.o5")
                && err.contains("not valid TOML")
                && err.contains("api.poll_interval_secs"),
            "{err}"
        );
    }

    #[test]
    fn quoted_keys_in_set_reach_dotted_model_names() {
        let args = [
            "prices.\"llama-3.3-70b-versatile\".input_per_mtok=1.5".to_string(),
            "prices.'my.model'.input_per_mtok=2".to_string(),
            "prices.'my.model'.output_per_mtok=3".to_string(),
            "prices.\"a=b\".input_per_mtok=4".to_string(),
            "prices.\"a=b\".output_per_mtok=5".to_string(),
        ];
        let config = Config::load(&repo_file("pipeline.toml"), &args).unwrap();
        assert_eq!(config.prices["llama-3.3-70b-versatile"].input_per_mtok, 1.5);
        assert_eq!(config.prices["my.model"].output_per_mtok, 3.0);
        assert_eq!(config.prices["a=b"].output_per_mtok, 5.0);
        let bad = load_error(&["prices.\"unclosed.input_per_mtok=1"]);
        assert!(bad.contains("--set") && bad.contains("dotted key"), "{bad}");
    }

    #[test]
    fn every_model_name_is_checked_at_load() {
        for (args, key) in [
            (&["repair.models=[\"\"]"][..], "repair.models"),
            (&["repair.models=[\"v-a\", \"  \"]"][..], "repair.models"),
            (&["author.model=\"bad\\nname\""][..], "author.model"),
            (&["repair.models=[\"tab\\tname\"]"][..], "repair.models"),
        ] {
            let err = load_error(args);
            assert!(err.contains(key), "{args:?}: {err}");
        }
    }

    #[test]
    fn the_audit_panel_is_checked_at_load() {
        for (args, wanted) in [
            (&["audit.models=[\"a\", \"a\"]"][..], "distinct model names"),
            (&["audit.models=[\"m/no-context\"]"][..], "/no-context"),
            (&["audit.models=[\" \"]"][..], "audit.models"),
            (
                &["audit.models=[\"a\", \"b\"]", "audit.min_correct=3"][..],
                "audit.min_correct",
            ),
            (&["audit.max_tokens=0"][..], "audit.max_tokens"),
            (&["audit.top_p=0"][..], "audit.top_p"),
            (&["audit.max_cost_usd=-1"][..], "audit.max_cost_usd"),
        ] {
            let err = load_error(args);
            assert!(err.contains(wanted), "{args:?}: {err}");
        }
        let load = |set: &str| {
            Config::load(&repo_file("pipeline.toml"), &[set.to_string()]).expect("valid")
        };
        let four = load("audit.models=[\"a\", \"b\", \"c\", \"d\"]");
        assert_eq!(four.audit.min_correct(), 3, "a majority of four");
        assert!(load("audit.models=[]").audit.models.is_empty());
    }

    #[test]
    fn credentials_in_base_url_are_refused_without_showing_them() {
        for url in [
            "https://user:hunter2@api.example.com/v1",
            "http://user:hunter2@127.0.0.1:9/v1",
            "http://user:hunter2@10.1.2.3/v1",
            "https://hunter2@api.example.com/v1",
        ] {
            let err = load_error(&[&format!("api.base_url={url}")]);
            assert!(err.contains("api.base_url"), "{url}: {err}");
            assert!(
                !err.contains("hunter2"),
                "{url}: the secret is shown: {err}"
            );
        }
    }

    #[test]
    fn a_config_that_is_not_utf8_or_not_a_file_is_named_with_a_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipeline.toml");
        let mut bytes = std::fs::read(repo_file("pipeline.toml")).unwrap();
        let third_line = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(1)
            .map(|(i, _)| i + 1)
            .unwrap();
        bytes.insert(third_line + 4, 0xE9);
        std::fs::write(&path, &bytes).unwrap();
        let err = Config::load(&path, &[]).expect_err("not UTF-8").to_string();
        assert!(
            err.contains("UTF-8") && err.contains("line 3, column 5"),
            "{err}"
        );
        let mut with_bom = b"\xEF\xBB\xBF".to_vec();
        with_bom.extend(std::fs::read(repo_file("pipeline.toml")).unwrap());
        std::fs::write(&path, &with_bom).unwrap();
        assert!(Config::load(&path, &[]).is_ok(), "a UTF-8 BOM is accepted");
        let err = Config::load(Path::new("/dev/zero"), &[])
            .expect_err("/dev/zero is refused")
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
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

    /// Every leaf of `top` with its dotted key.
    fn leaves(table: &toml::Table, prefix: &str, out: &mut Vec<(String, toml::Value)>) {
        for (key, value) in table {
            let dotted = format!("{prefix}{key}");
            match value {
                toml::Value::Table(inner) if !inner.is_empty() => {
                    leaves(inner, &format!("{dotted}."), out)
                }
                other => out.push((dotted, other.clone())),
            }
        }
    }

    #[test]
    fn the_local_profile_extends_pipeline_toml_and_holds_only_what_differs() {
        let top: toml::Table = std::fs::read_to_string(repo_file("pipeline.local.toml"))
            .unwrap()
            .parse()
            .unwrap();
        let base: toml::Table = std::fs::read_to_string(repo_file("pipeline.toml"))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            top.get(EXTENDS).and_then(toml::Value::as_str),
            Some("pipeline.toml")
        );
        let mut set = Vec::new();
        leaves(&top, "", &mut set);
        for (key, value) in set.iter().filter(|(key, _)| key != EXTENDS) {
            assert_ne!(
                lookup(&base, key),
                Some(value),
                "{key} repeats pipeline.toml"
            );
        }
        let local = Config::load(&repo_file("pipeline.local.toml"), &[]).unwrap();
        let row = local.category(Category::MemoryUpdate).target;
        assert_eq!(
            (row.c, row.d, row.l),
            (0.45, 1, 512),
            "rows come from the base"
        );
        assert!(
            local.author.extra_body.is_empty(),
            "extra_body is replaced whole"
        );
        assert_eq!(local.author.domains.len(), 12);
    }

    #[test]
    fn an_overlay_merges_tables_replaces_values_and_resolves_paths_where_they_are_set() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        let profile = dir.path().join("profile");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::create_dir_all(&profile).unwrap();
        std::fs::copy(repo_file("pipeline.toml"), shared.join("base.toml")).unwrap();
        std::fs::write(
            profile.join("mine.toml"),
            "extends = \"../shared/base.toml\"\n[release]\nout_dir = \"runs\"\nper_category = 7\n[author.extra_body]\nfoo = 1\n",
        )
        .unwrap();
        let config = Config::load(&profile.join("mine.toml"), &[]).unwrap();
        assert_eq!(config.release.per_category, 7);
        assert_eq!(
            config.release.version, "v2",
            "unset keys come from the base"
        );
        assert_eq!(config.release.out_dir, profile.join("runs"));
        assert_eq!(config.author.prompts_dir, profile.join("../shared/prompts"));
        assert_eq!(
            config.author.extra_body.len(),
            1,
            "the base's reasoning_format is gone"
        );
    }

    #[test]
    fn a_chain_of_extends_that_loops_is_refused_naming_extends() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.toml"), "extends = \"b.toml\"\n").unwrap();
        std::fs::write(dir.path().join("b.toml"), "extends = \"a.toml\"\n").unwrap();
        let err = Config::load(&dir.path().join("a.toml"), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`extends` chains through more than"), "{err}");
        std::fs::write(dir.path().join("c.toml"), "extends = 3\n").unwrap();
        let err = Config::load(&dir.path().join("c.toml"), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`extends` must name the config file"), "{err}");
    }

    #[test]
    fn local_models_resolve_where_they_are_set_and_every_model_used_needs_one() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        let profile = dir.path().join("profile");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::create_dir_all(&profile).unwrap();
        let mut base = std::fs::read_to_string(repo_file("pipeline.toml")).unwrap();
        base.push_str("\n[local.models]\n\"from-base\" = \"base.gguf\"\n");
        std::fs::write(shared.join("base.toml"), base).unwrap();
        std::fs::write(
            profile.join("mine.toml"),
            "extends = \"../shared/base.toml\"\n[local.models]\n\"a.b/c\" = \"m/a.gguf\"\n",
        )
        .unwrap();
        let path = profile.join("mine.toml");
        let config = Config::load(&path, &[]).unwrap();
        assert_eq!(
            config.local.models["from-base"],
            profile.join("../shared/base.gguf")
        );
        assert_eq!(config.local.models["a.b/c"], profile.join("m/a.gguf"));
        assert_eq!(
            config.local.model_file("a.b/c"),
            Some(profile.join("m/a.gguf").as_path())
        );
        assert_eq!(config.local.model_file("qwen/qwen3-32b"), None);
        assert_eq!(config.local.model_key("a.b/c"), "local.models.\"a.b/c\"");
        assert_eq!(config.local.parallel, 4);

        let local = |sets: &[&str]| {
            let mut args = vec!["api.provider=local".to_string()];
            args.extend(sets.iter().map(|s| s.to_string()));
            Config::load(&path, &args)
        };
        let err = local(&[]).unwrap_err().to_string();
        assert!(
            err.contains("`author.model`")
                && err.contains("\"qwen/qwen3-32b\" has no GGUF file in [local.models]")
                && err.contains("a.b/c, from-base"),
            "{err}"
        );
        let named = [
            "author.model=\"a.b/c\"",
            "repair.models=[\"from-base\"]",
            "audit.models=[\"a.b/c\", \"other\"]",
        ];
        let err = local(&named).unwrap_err().to_string();
        assert!(
            err.contains("`audit.models`") && err.contains("\"other\" has no GGUF file"),
            "{err}"
        );
        let config = local(
            &[
                &named[..2],
                &["audit.models=[]", "local.models.other=\"o.gguf\""],
            ]
            .concat(),
        )
        .unwrap();
        assert_eq!(
            config.local.models["other"],
            profile.join("../shared/o.gguf"),
            "a --set entry is relative to the file that set local.model_path"
        );
        let empty =
            Config::load(&repo_file("pipeline.toml"), &["api.provider=local".into()]).unwrap();
        assert_eq!(
            empty.local.model_file("any name"),
            Some(empty.local.model_path.as_path()),
            "without [local.models], model_path serves every name"
        );
        assert_eq!(empty.local.model_key("any name"), "local.model_path");
    }

    #[test]
    fn local_parallel_is_checked() {
        for bad in [
            "local.parallel=0",
            "local.parallel=65",
            "local.parallel=1.5",
        ] {
            let err = load_error(&[bad]);
            assert!(err.contains("local.parallel"), "{bad}: {err}");
        }
        let err = load_error(&["local.parallel=64", "local.context_size=1048576"]);
        assert!(err.contains("local.context_size × local.parallel"), "{err}");
    }

    #[test]
    fn an_out_of_range_set_blames_the_set_in_effect_the_last_of_its_key() {
        let err = load_error(&["release.per_category=4", "release.per_category=0"]);
        assert!(err.starts_with("--set release.per_category=0:"), "{err}");
    }
}
