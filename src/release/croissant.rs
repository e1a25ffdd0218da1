//! The release's Croissant 1.1 metadata (`croissant.json`): the JSONL as one record set whose
//! fields are the record's columns.

use serde_json::{json, Value};

use super::dataset::{pretty_name, CITATION, LICENSE_NAME, TAGS};
use super::info::ReleaseInfo;
use crate::schema::{Column, Presence, ReleaseRecord, COLUMNS};

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
        "version": info.version,
        "datePublished": info.date,
        "license": {
            "@type": "sc:CreativeWork",
            "name": format!("{LICENSE_NAME} (placeholder; see README.md, Licensing)")
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
