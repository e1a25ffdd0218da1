//! Synthetic but realistic benchmark inputs: batch output files whose replies are the
//! integration tests' enterprise items (documents of 250–450 words, multi-document sets,
//! conversations, memory histories — the card's shapes and lengths), and candidate files for
//! assemble built from the same items. Everything is deterministic in its arguments.

use crate::replies;
use saseval_gen::runner::Request;
use saseval_gen::stages::author::AuthorRequest;
use saseval_gen::stages::item::{Candidate, Category};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The domains of `pipeline.toml`, which the reply generator turns into vocabulary.
pub const DOMAINS: [&str; 12] = [
    "cloud/DevOps",
    "fintech & payments",
    "HIPAA SaaS",
    "logistics",
    "IAM/security",
    "data platforms",
    "e-commerce",
    "telecom",
    "manufacturing ERP",
    "insurance",
    "CRM",
    "legal",
];

/// `items_per_request` of each category in `pipeline.toml`.
pub fn items_per_request(category: Category) -> usize {
    match category {
        Category::LongDocumentQa | Category::MultiDocumentQa => 2,
        Category::BloatedReasoning
        | Category::Conversational
        | Category::MemoryRecall
        | Category::MemoryUpdate => 4,
        _ => 5,
    }
}

/// The `i`-th authoring request of a synthetic job: categories in turn, domains rotating.
pub fn author_request(i: usize) -> AuthorRequest {
    let category = Category::ALL[i % Category::ALL.len()];
    let index = i / Category::ALL.len();
    let domain = DOMAINS[index % DOMAINS.len()];
    let count = items_per_request(category);
    AuthorRequest {
        request: Request::new(
            format!("author/{category}/r0/{index}"),
            json!({
                "model": "qwen/qwen3-32b",
                "messages": [{"role": "user", "content": format!("category={category} count={count} domain={domain} seq={index}")}],
                "max_tokens": 6000,
            }),
        ),
        category,
        domain: domain.to_string(),
        round: 0,
        index,
        count,
    }
}

/// The first `lines` requests of a synthetic job, and custom_id → body hash of each (what a
/// submission's request file gives the ingest).
pub fn author_job(lines: usize) -> (Vec<AuthorRequest>, BTreeMap<String, String>) {
    let requests: Vec<AuthorRequest> = (0..lines).map(author_request).collect();
    let keys = requests
        .iter()
        .map(|r| {
            (
                r.request.custom_id.clone(),
                r.request.body_hash().to_string(),
            )
        })
        .collect();
    (requests, keys)
}

/// The reply text the model gives request `i`.
pub fn author_reply(i: usize) -> String {
    let r = author_request(i);
    replies::author_reply(r.category.name(), &r.domain, r.count, r.index)
}

/// One line of a batch output file: a served chat completion for `custom_id`.
pub fn output_line(custom_id: &str, content: &str) -> String {
    let completion_tokens = content.len() / 4;
    json!({
        "id": format!("batch_req_{custom_id}"),
        "custom_id": custom_id,
        "response": {
            "status_code": 200,
            "request_id": format!("req_{custom_id}"),
            "body": {
                "id": format!("chatcmpl-{custom_id}"),
                "object": "chat.completion",
                "model": "qwen/qwen3-32b",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1300, "completion_tokens": completion_tokens, "total_tokens": 1300 + completion_tokens},
            },
        },
        "error": null,
    })
    .to_string()
}

/// Writes the output file of a job of `lines` authoring requests; returns its size in bytes.
pub fn write_output_file(path: &Path, lines: usize) -> std::io::Result<u64> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut bytes = 0;
    for i in 0..lines {
        let line = output_line(&author_request(i).request.custom_id, &author_reply(i));
        bytes += line.len() as u64 + 1;
        writeln!(file, "{line}")?;
    }
    file.flush()?;
    Ok(bytes)
}

/// The valid items of reply `i` as candidates, as `authored.jsonl` holds them.
pub fn candidates_of(i: usize) -> Vec<Candidate> {
    let r = author_request(i);
    let Ok(parsed) = saseval_gen::stages::reply::parse_items(&author_reply(i)) else {
        return Vec::new();
    };
    parsed
        .items
        .iter()
        .enumerate()
        .filter_map(|(k, value)| {
            let fields =
                saseval_gen::quality::validate::fields_from_value(r.category, value).ok()?;
            Some(Candidate {
                id: format!("{}.r0.{:04}.{k}", r.category, r.index),
                category: r.category,
                domain: r.domain.clone(),
                prompt: fields.prompt,
                golds: fields.golds,
                durable: fields.durable,
                stale: fields.stale,
                custom_id: r.request.custom_id.clone(),
                model: "qwen/qwen3-32b".into(),
                round: 0,
                gold_repaired: false,
                needs_review: false,
            })
        })
        .collect()
}

/// Writes `count` candidates (the items of consecutive replies) as JSONL.
pub fn write_candidates(path: &Path, count: usize) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0;
    for i in 0.. {
        for c in candidates_of(i) {
            if written == count {
                return file.flush();
            }
            serde_json::to_writer(&mut file, &c)?;
            file.write_all(b"\n")?;
            written += 1;
        }
    }
    file.flush()
}
