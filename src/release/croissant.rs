//! The release's Croissant 1.1 metadata (`croissant.json`): the JSONL as one record set whose
//! fields are the record's columns.

use serde_json::{json, Value};

use super::dataset::{pretty_name, CITATION, LICENSE_FILE, LICENSE_NAME, TAGS};
use super::info::ReleaseInfo;
use crate::release::schema::{Column, Presence, ReleaseRecord, COLUMNS};

/// `croissant.json`: Croissant 1.1 JSON-LD describing the JSONL as one record set. An optional
/// column (`durable`, `stale`, the flags) is declared only when some record has it: mlcroissant
/// reads JSON Lines into a table and fails on a declared column that no line holds.
pub fn render_croissant(
    info: &ReleaseInfo,
    jsonl_name: &str,
    sha256: &str,
    bytes: u64,
    records: &[ReleaseRecord],
) -> String {
    let source = |column: &str| {
        json!({
            "fileObject": { "@id": jsonl_name },
            "extract": { "column": column }
        })
    };
    let fields: Vec<Value> = COLUMNS
        .iter()
        .filter(|column| column_present(column, records))
        .map(|column| {
            let (data_type, array_shape) = column.kind.croissant();
            let mut object = json!({
                "@type": "cr:Field",
                "@id": format!("{RECORD_SET}/{}", column.name),
                "name": column.name,
                "description": column.croissant,
                "dataType": data_type,
            });
            if let (Some(shape), Value::Object(map)) = (array_shape, &mut object) {
                map.insert("isArray".into(), Value::Bool(true));
                map.insert("arrayShape".into(), Value::String(shape));
            }
            if let Value::Object(map) = &mut object {
                map.insert("source".into(), source(column.name));
            }
            object
        })
        .collect();
    let croissant = json!({
        "@context": croissant_context(),
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.1",
        "name": format!("SASEval {}", info.version),
        "description": format!(
            "{}: {} enterprise prompts in 10 categories with short gold answers graded by \
             case-insensitive substring match, for benchmarking context governors under the \
             Strategic Alignment Score protocol.",
            pretty_name(info),
            info.total()
        ),
        "version": semver(&info.version),
        "datePublished": info.date,
        "license": {
            "@type": "sc:CreativeWork",
            "name": format!("{LICENSE_NAME} (placeholder; see {LICENSE_FILE})"),
            "url": LICENSE_FILE
        },
        "keywords": TAGS,
        "inLanguage": "en",
        "citeAs": CITATION,
        "distribution": [{
            "@type": "cr:FileObject",
            "@id": jsonl_name,
            "name": jsonl_name,
            "contentUrl": jsonl_name,
            "contentSize": format!("{bytes} B"),
            "encodingFormat": "application/jsonlines",
            "sha256": sha256
        }],
        "recordSet": [{
            "@type": "cr:RecordSet",
            "@id": RECORD_SET,
            "name": RECORD_SET,
            "description": "One record per JSON line: a prompt, its gold answers and its category's target action.",
            "key": { "@id": format!("{RECORD_SET}/id") },
            "field": fields
        }]
    });
    format!("{croissant:#}\n")
}

const RECORD_SET: &str = "prompts";

/// The release name as the `MAJOR.MINOR.PATCH` version Croissant asks for (the name itself stays
/// in `name`): a leading `v` goes, up to three numbers are read and missing ones are 0, and what
/// follows becomes the pre-release part. `v2` → `2.0.0`, `v2.1-rc.1` → `2.1.0-rc.1`,
/// `nightly` → `0.0.0-nightly`.
fn semver(version: &str) -> String {
    let unprefixed = match version.strip_prefix(['v', 'V']) {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest,
        _ => version,
    };
    let mut numbers: Vec<&str> = Vec::new();
    let mut rest = unprefixed;
    while numbers.len() < 3 {
        let body = if numbers.is_empty() {
            rest
        } else {
            match rest.strip_prefix('.') {
                Some(body) if body.starts_with(|c: char| c.is_ascii_digit()) => body,
                _ => break,
            }
        };
        let digits = body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len());
        if digits == 0 {
            break;
        }
        numbers.push(&body[..digits]);
        rest = &body[digits..];
    }
    let mut text = (0..3)
        .map(|i| numbers.get(i).map_or("0", |n| without_leading_zeros(n)))
        .collect::<Vec<_>>()
        .join(".");
    let pre_release: Vec<String> = rest
        .split(['.', '_'])
        .map(|part| part.trim_start_matches('-'))
        .filter(|part| !part.is_empty())
        .map(|part| {
            if part.bytes().all(|b| b.is_ascii_digit()) {
                without_leading_zeros(part).to_string()
            } else {
                part.chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect()
            }
        })
        .collect();
    if !pre_release.is_empty() {
        text.push('-');
        text.push_str(&pre_release.join("."));
    }
    text
}

fn without_leading_zeros(digits: &str) -> &str {
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        "0"
    } else {
        trimmed
    }
}

/// Whether any record has the column (the always-present columns always count).
fn column_present(column: &Column, records: &[ReleaseRecord]) -> bool {
    column.presence == Presence::Always || records.iter().any(|r| (column.value)(r).is_some())
}

/// The Croissant 1.1 JSON-LD context (spec Appendix 1, with the schema.org IRIs mlcroissant uses).
fn croissant_context() -> Value {
    let mut context: serde_json::Map<String, Value> = CONTEXT_TERMS
        .iter()
        .map(|(term, iri)| (term.to_string(), Value::String(iri.to_string())))
        .collect();
    context.insert("data".into(), json!({ "@id": "cr:data", "@type": "@json" }));
    context.insert(
        "dataType".into(),
        json!({ "@id": "cr:dataType", "@type": "@vocab" }),
    );
    context.insert("description".into(), json!({ "@container": "@language" }));
    context.insert(
        "examples".into(),
        json!({ "@id": "cr:examples", "@type": "@json" }),
    );
    context.insert("name".into(), json!({ "@container": "@language" }));
    Value::Object(context)
}

/// The string-valued terms of the Croissant 1.1 context; `croissant_context` adds the typed ones.
const CONTEXT_TERMS: [(&str, &str); 42] = [
    ("@language", "en"),
    ("@vocab", "https://schema.org/"),
    ("sc", "https://schema.org/"),
    ("cr", "http://mlcommons.org/croissant/"),
    ("rai", "http://mlcommons.org/croissant/RAI/"),
    ("dct", "http://purl.org/dc/terms/"),
    ("annotation", "cr:annotation"),
    ("arrayShape", "cr:arrayShape"),
    ("citeAs", "cr:citeAs"),
    ("column", "cr:column"),
    ("conformsTo", "dct:conformsTo"),
    ("containedIn", "cr:containedIn"),
    ("equivalentProperty", "cr:equivalentProperty"),
    ("excludes", "cr:excludes"),
    ("extract", "cr:extract"),
    ("field", "cr:field"),
    ("fileProperty", "cr:fileProperty"),
    ("fileObject", "cr:fileObject"),
    ("fileSet", "cr:fileSet"),
    ("format", "cr:format"),
    ("includes", "cr:includes"),
    ("isArray", "cr:isArray"),
    ("isLiveDataset", "cr:isLiveDataset"),
    ("jsonPath", "cr:jsonPath"),
    ("key", "cr:key"),
    ("md5", "cr:md5"),
    ("parentField", "cr:parentField"),
    ("path", "cr:path"),
    ("readLines", "cr:readLines"),
    ("recordSet", "cr:recordSet"),
    ("references", "cr:references"),
    ("regex", "cr:regex"),
    ("repeated", "cr:repeated"),
    ("replace", "cr:replace"),
    ("samplingRate", "cr:samplingRate"),
    ("sdVersion", "cr:sdVersion"),
    ("separator", "cr:separator"),
    ("source", "cr:source"),
    ("subField", "cr:subField"),
    ("transform", "cr:transform"),
    ("unArchive", "cr:unArchive"),
    ("value", "cr:value"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::test_support::{info, records};

    const SHA: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn croissant_describes_the_jsonl_and_every_column() {
        let records = records(1);
        let info = info(&records, 1);
        let mut records = records;
        records[0].needs_review = true;
        let text = render_croissant(&info, "saseval_v2_prompts.jsonl", SHA, 777, &records);
        let doc: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(doc["@type"], "sc:Dataset");
        assert_eq!(doc["conformsTo"], "http://mlcommons.org/croissant/1.1");
        assert_eq!(doc["@context"]["cr"], "http://mlcommons.org/croissant/");
        assert_eq!(doc["@context"]["dct"], "http://purl.org/dc/terms/");
        assert_eq!(doc["@context"]["sc"], "https://schema.org/");
        assert_eq!(doc["datePublished"], "2026-08-01");
        let file = &doc["distribution"][0];
        assert_eq!(file["@type"], "cr:FileObject");
        assert_eq!(file["contentUrl"], "saseval_v2_prompts.jsonl");
        assert_eq!(file["encodingFormat"], "application/jsonlines");
        assert_eq!(file["sha256"], SHA);
        assert_eq!(file["contentSize"], "777 B");
        let fields = doc["recordSet"][0]["field"].as_array().expect("fields");
        let names: Vec<&str> = fields.iter().filter_map(|f| f["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "id",
                "category",
                "prompt",
                "golds",
                "target_action",
                "T",
                "top_p",
                "mode",
                "max_new",
                "durable",
                "stale",
                "_gold_repaired",
                "_needs_review"
            ]
        );
        for field in fields {
            assert_eq!(field["source"]["extract"]["column"], field["name"]);
            assert_eq!(
                field["source"]["fileObject"]["@id"],
                "saseval_v2_prompts.jsonl"
            );
        }
        let golds = &fields[3];
        assert_eq!(
            (golds["isArray"].as_bool(), golds["dataType"].as_str()),
            (Some(true), Some("sc:Text"))
        );
        assert_eq!(fields[4]["arrayShape"], "5");
        assert_eq!(fields[8]["dataType"], "sc:Integer");
        assert_eq!(fields[11]["dataType"], "sc:Boolean");
        assert!(fields[0].get("isArray").is_none());
    }

    #[test]
    fn the_version_is_semver_and_the_release_name_stays_in_name() {
        let records = records(1);
        let info = info(&records, 1);
        let doc: Value =
            serde_json::from_str(&render_croissant(&info, "f.jsonl", SHA, 1, &records))
                .expect("valid JSON");
        assert_eq!(doc["version"], "2.0.0");
        assert_eq!(doc["name"], "SASEval v2");
        assert_eq!(doc["license"]["url"], "LICENSE.md");
    }

    #[test]
    fn release_names_become_semver_versions() {
        let cases = [
            ("v2", "2.0.0"),
            ("V3", "3.0.0"),
            ("2", "2.0.0"),
            ("v2.1", "2.1.0"),
            ("2.1.3", "2.1.3"),
            ("v02.010", "2.10.0"),
            ("v2.1-rc.1", "2.1.0-rc.1"),
            ("v2_beta", "2.0.0-beta"),
            ("v2rc1", "2.0.0-rc1"),
            ("v2.1.3.4", "2.1.3-4"),
            ("v3-rc.01", "3.0.0-rc.1"),
            ("nightly", "0.0.0-nightly"),
            ("v", "0.0.0-v"),
            ("v2..x", "2.0.0-x"),
            ("v2-", "2.0.0"),
            ("99999999999999999999999", "99999999999999999999999.0.0"),
        ];
        for (name, want) in cases {
            assert_eq!(semver(name), want, "{name}");
        }
    }

    /// The SemVer 2.0.0 grammar, written out: what mlcroissant checks with its regex.
    fn is_semver(text: &str) -> bool {
        let numeric = |s: &str| {
            !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && (s == "0" || !s.starts_with('0'))
        };
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let core_ok = core.split('.').count() == 3 && core.split('.').all(numeric);
        let pre_ok = pre.is_none_or(|pre| {
            pre.split('.').all(|id| {
                !id.is_empty()
                    && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && (numeric(id) || !id.bytes().all(|b| b.is_ascii_digit()))
            })
        });
        core_ok && pre_ok
    }

    #[test]
    fn every_version_a_release_may_have_becomes_valid_semver() {
        let alphabet: Vec<char> = "v0123.-_aZ".chars().collect();
        let mut names = vec![String::new()];
        for _ in 0..5 {
            names = names
                .iter()
                .flat_map(|name| alphabet.iter().map(move |c| format!("{name}{c}")))
                .collect();
            for name in &names {
                let version = semver(name);
                assert!(is_semver(&version), "{name:?} → {version:?}");
            }
        }
    }

    #[test]
    fn croissant_declares_optional_columns_only_when_a_record_has_them() {
        let mut records = records(1);
        records.retain(|r| !r.category.is_memory() && !r.gold_repaired);
        let info = info(&records, 1);
        let text = render_croissant(&info, "f.jsonl", SHA, 1, &records);
        let doc: Value = serde_json::from_str(&text).expect("valid JSON");
        let names: Vec<&str> = doc["recordSet"][0]["field"]
            .as_array()
            .expect("fields")
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "id",
                "category",
                "prompt",
                "golds",
                "target_action",
                "T",
                "top_p",
                "mode",
                "max_new"
            ]
        );
    }
}
