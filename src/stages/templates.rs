//! Prompt templates (`prompts/*.md`): plain text with `{{name}}` placeholders. Loading checks
//! every placeholder against the names the template may use and must use, so a typo is an error
//! naming the file instead of a silently wrong prompt sent to a paid API; a template that is not
//! a regular file or is larger than 1 MB is refused before anything is read into memory.

use crate::stages::item::Category;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("cannot read template {path}: {source}\n  hint: the templates live in the folder named by author.prompts_dir (default: prompts/ beside the config)")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("template {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// The largest template read: a real one is a few KB, and every byte of it is sent (and paid
/// for) in each request rendered from it.
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

/// Placeholders an authoring template may use; the first two are required.
pub const AUTHOR_REQUIRED: &[&str] = &["domain", "count"];
pub const AUTHOR_ALLOWED: &[&str] = &["domain", "count", "max_gold_words"];
/// The verifier template must insert the item's prompt verbatim.
pub const VERIFY_REQUIRED: &[&str] = &["prompt"];
/// So must the audit template (`audit.md`): the panel answers the prompt as the benchmark sends it.
pub const AUDIT_REQUIRED: &[&str] = &["prompt"];

#[derive(Debug, Clone)]
pub struct Template {
    pub path: PathBuf,
    text: String,
}

impl Template {
    /// The prompts of the example items this template shows ([`example_prompts`]).
    pub fn example_prompts(&self) -> Vec<String> {
        example_prompts(&self.text)
    }

    /// The golds of the example items this template shows, in their order.
    pub fn example_golds(&self) -> Vec<Vec<String>> {
        example_items(&self.text)
            .into_iter()
            .map(|item| {
                let golds = item.get("golds").and_then(serde_json::Value::as_array);
                golds
                    .into_iter()
                    .flatten()
                    .filter_map(|gold| gold.as_str().map(str::to_owned))
                    .collect()
            })
            .collect()
    }

    pub fn load(
        path: &Path,
        required: &[&str],
        allowed: &[&str],
    ) -> Result<Template, TemplateError> {
        let bytes = crate::util::fsio::read_capped(path, MAX_TEMPLATE_BYTES).map_err(|source| {
            TemplateError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let text = String::from_utf8(bytes).map_err(|e| TemplateError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "the file is not UTF-8 text: invalid byte at {}; save it as UTF-8",
                crate::util::fsio::utf8_error_position(e.as_bytes(), &e.utf8_error())
            ),
        })?;
        Template::parse(path, text, required, allowed)
    }

    pub fn parse(
        path: &Path,
        text: String,
        required: &[&str],
        allowed: &[&str],
    ) -> Result<Template, TemplateError> {
        let invalid = |message: String| TemplateError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        if text.trim().is_empty() {
            return Err(invalid("the template is empty".into()));
        }
        let used = placeholders(&text).map_err(invalid)?;
        if let Some(unknown) = used.iter().find(|p| !allowed.contains(&p.as_str())) {
            return Err(invalid(format!(
                "unknown placeholder {{{{{unknown}}}}}; allowed: {}",
                allowed
                    .iter()
                    .map(|a| format!("{{{{{a}}}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if let Some(missing) = required.iter().find(|r| !used.iter().any(|u| u == *r)) {
            return Err(invalid(format!(
                "missing required placeholder {{{{{missing}}}}}"
            )));
        }
        Ok(Template {
            path: path.to_path_buf(),
            text,
        })
    }

    /// The template as written, placeholders and all.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Substitutes every placeholder; `vars` must hold each one the template uses.
    pub fn render(&self, vars: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(self.text.len() + 256);
        let mut rest = self.text.as_str();
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            match after.find("}}") {
                Some(end) => {
                    let name = after[..end].trim();
                    let value = vars
                        .iter()
                        .find(|(k, _)| *k == name)
                        .map(|(_, v)| *v)
                        .unwrap_or("");
                    out.push_str(value);
                    rest = &after[end + 2..];
                }
                None => {
                    out.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// The names of all `{{name}}` placeholders in `text`, in order.
fn placeholders(text: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| "a `{{` is never closed by `}}`".to_string())?;
        let name = after[..end].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            return Err(format!(
                "`{{{{{}}}}}` is not a placeholder name (lower-case letters and _)",
                &after[..end]
            ));
        }
        names.push(name.to_string());
        rest = &after[end + 2..];
    }
    Ok(names)
}

/// Every template the pipeline uses, loaded and checked up front.
#[derive(Debug, Clone)]
pub struct Templates {
    pub system: String,
    pub categories: BTreeMap<Category, Template>,
    pub verify: Template,
}

/// The file in `author.prompts_dir` that holds a category's authoring template.
pub fn category_file(category: Category) -> String {
    format!("{category}.md")
}

/// How rejects name the example item of a category's template.
pub fn example_item_name(category: Category) -> String {
    format!("the example item of {}", category_file(category))
}

impl Templates {
    pub fn load(dir: &Path) -> Result<Templates, TemplateError> {
        let system = Template::load(&dir.join("system.md"), &[], &[])?;
        let mut categories = BTreeMap::new();
        for category in Category::ALL {
            let path = dir.join(category_file(category));
            categories.insert(
                category,
                Template::load(&path, AUTHOR_REQUIRED, AUTHOR_ALLOWED)?,
            );
        }
        let verify = Template::load(&dir.join("verify.md"), VERIFY_REQUIRED, VERIFY_REQUIRED)?;
        Ok(Templates {
            system: system.text,
            categories,
            verify,
        })
    }
}

/// The prompts of the example items a category template shows: every line inside a fenced
/// `json` block that is a JSON object with a `"prompt"` string. A model that copies one has
/// written nothing new, and the example is public in the repository.
pub fn example_prompts(template: &str) -> Vec<String> {
    example_items(template)
        .into_iter()
        .filter_map(|item| item.get("prompt")?.as_str().map(str::to_owned))
        .collect()
}

/// The example items of a category template: every line inside a fenced `json` block that is a
/// JSON object with a `"prompt"` string.
fn example_items(template: &str) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let mut items = Vec::new();
    let mut in_json_fence = false;
    for line in template.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_json_fence = !in_json_fence && info.trim().eq_ignore_ascii_case("json");
            continue;
        }
        if !in_json_fence {
            continue;
        }
        if let Ok(serde_json::Value::Object(item)) = serde_json::from_str(trimmed) {
            if item.get("prompt").is_some_and(serde_json::Value::is_string) {
                items.push(item);
            }
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_prompts_are_the_prompt_strings_of_json_fenced_lines() {
        let template = "Intro {\"prompt\": \"not fenced\"}\n\
            ```json\n\
            {\"prompt\": \"Which port?\", \"golds\": [\"5061\"]}\n\
            not json\n\
            [\"an array\"]\n\
            {\"golds\": [\"no prompt\"]}\n\
            ```\n\
            ```text\n\
            {\"prompt\": \"a text fence\"}\n\
            ```\n\
            ```JSON\n\
            {\"prompt\": \"Second?\"}\n\
            ```\n";
        assert_eq!(example_prompts(template), ["Which port?", "Second?"]);
    }

    #[test]
    fn every_shipped_category_template_shows_an_example_item() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        for category in Category::ALL {
            let text = std::fs::read_to_string(dir.join(category_file(category))).unwrap();
            assert_eq!(example_prompts(&text).len(), 1, "{category}");
        }
    }

    fn parse(text: &str) -> Result<Template, TemplateError> {
        Template::parse(
            Path::new("t.md"),
            text.to_string(),
            AUTHOR_REQUIRED,
            AUTHOR_ALLOWED,
        )
    }

    #[test]
    fn renders_known_placeholders() {
        let t =
            parse("Write {{count}} items about {{ domain }}, golds ≤ {{max_gold_words}} words.")
                .unwrap();
        let out = t.render(&[
            ("count", "5"),
            ("domain", "telecom"),
            ("max_gold_words", "4"),
        ]);
        assert_eq!(out, "Write 5 items about telecom, golds ≤ 4 words.");
    }

    #[test]
    fn unknown_placeholder_is_an_error_naming_the_file() {
        let err = parse("{{count}} {{domain}} {{domian}}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.md") && err.contains("{{domian}}"), "{err}");
    }

    #[test]
    fn missing_required_placeholder_is_an_error() {
        let err = parse("Write {{count}} items.").unwrap_err().to_string();
        assert!(
            err.contains("missing required placeholder {{domain}}"),
            "{err}"
        );
    }

    #[test]
    fn unclosed_braces_are_an_error() {
        assert!(parse("{{count}} {{domain}} {{oops").is_err());
    }

    #[test]
    fn the_shipped_templates_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        let templates = Templates::load(&dir).unwrap();
        assert_eq!(templates.categories.len(), 10);
        let rendered = templates.verify.render(&[("prompt", "What is 2 + 2?")]);
        assert!(rendered.contains("What is 2 + 2?"));
    }
}
