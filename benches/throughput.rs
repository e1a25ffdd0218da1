//! Criterion micro-benchmarks of the per-item work behind the scale figures: reading one
//! output line into the cache and deriving its items, parsing and validating one reply of each
//! category, reading an outcome back from the cache, and near-duplicate search by each method.
//! Repeated samples give their spread; `benches/scale.rs` measures whole runs and memory.

// A bench writes its inputs directly: the product's file-write rule (Cargo.toml's [lints],
// clippy.toml) is not its own.
#![allow(clippy::disallowed_methods)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use saseval_gen::config::Config;
use saseval_gen::quality::dedup::{self, DedupConfig, Method};
use saseval_gen::quality::validate::{self, Rules};
use saseval_gen::runner::cache::Cache;
use saseval_gen::runner::ingest::{ingest_file, NamedBadLines};
use saseval_gen::stages::author;
use saseval_gen::stages::templates::Templates;
use saseval_gen::util::jsonl;
use saseval_testkit::synth;
use std::hint::black_box;
use std::time::Duration;

const LINES: usize = 1_000;

fn pipeline_config() -> Config {
    Config::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline.toml"),
        &[],
    )
    .expect("pipeline.toml loads")
}

/// Ingest plus derive of a 1,000-line output file, per line.
fn parse_validate(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = dir.path().join("output.jsonl");
    synth::write_output_file(&output, LINES).expect("output file");
    let config = pipeline_config();
    let templates = Templates::load(&config.author.prompts_dir).expect("templates");
    let examples = author::TemplateExamples::of(&templates, config.assemble.near_dup_threshold)
        .expect("template examples");
    let (requests, keys) = synth::author_job(LINES);
    let cache_path = dir.path().join("cache.jsonl");
    let mut group = c.benchmark_group("output_file");
    group.throughput(Throughput::Elements(LINES as u64));
    group.bench_function("ingest_1000_lines", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(&cache_path);
                Cache::open(&cache_path).expect("cache")
            },
            |mut cache| {
                ingest_file(
                    &mut cache,
                    &output,
                    &keys,
                    "bench",
                    NamedBadLines::KeepAsFailure,
                    |_| Ok(()),
                )
                .expect("ingest")
            },
            BatchSize::PerIteration,
        )
    });
    let _ = std::fs::remove_file(&cache_path);
    let mut cache = Cache::open(&cache_path).expect("cache");
    ingest_file(
        &mut cache,
        &output,
        &keys,
        "bench",
        NamedBadLines::KeepAsFailure,
        |_| Ok(()),
    )
    .expect("ingest");
    group.bench_function("derive_1000_lines", |b| {
        b.iter(|| {
            let mut candidates =
                jsonl::Writer::create(&dir.path().join("authored.jsonl")).expect("writer");
            let mut rejects =
                jsonl::Writer::create(&dir.path().join("rejects.jsonl")).expect("writer");
            let derived = author::derive(
                &config,
                &examples,
                &requests,
                |r| Ok(cache.get_as(&r.custom_id, r.body_hash())?),
                &mut candidates,
                &mut rejects,
            )
            .expect("derive");
            candidates.commit().expect("commit");
            rejects.commit().expect("commit");
            derived
        })
    });
    group.finish();
}

/// Parse and validate one reply of each category (no I/O).
fn replies_by_category(c: &mut Criterion) {
    let rules = Rules::default();
    let mut group = c.benchmark_group("reply");
    for i in 0..10 {
        let request = synth::author_request(i);
        let reply = synth::author_reply(i);
        group.throughput(Throughput::Bytes(reply.len() as u64));
        group.bench_function(request.category.name(), |b| {
            b.iter(|| {
                let parsed =
                    saseval_gen::stages::reply::parse_items(black_box(&reply)).expect("parses");
                parsed
                    .items
                    .iter()
                    .filter(|v| {
                        validate::fields_from_value(request.category, v)
                            .and_then(|f| validate::check_item(request.category, f, &rules))
                            .is_ok()
                    })
                    .count()
            })
        });
    }
    group.finish();
}

/// Near-duplicate search over 5,000 realistic prompts by each method.
fn near_duplicates(c: &mut Criterion) {
    let prompts: Vec<String> = (0..)
        .flat_map(synth::candidates_of)
        .take(5_000)
        .map(|c| c.prompt)
        .collect();
    let refs: Vec<&str> = prompts.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("dedup_5000");
    group.throughput(Throughput::Elements(refs.len() as u64));
    for (name, method) in [
        ("all_pairs", Method::AllPairs),
        ("minhash_lsh", Method::MinHashLsh),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                dedup::find_duplicates(
                    &refs,
                    &[],
                    &DedupConfig {
                        method,
                        ..DedupConfig::default()
                    },
                )
                .expect("dedup")
            })
        });
    }
    group.finish();
}

fn quick() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = quick();
    targets = parse_validate, replies_by_category, near_duplicates
}
criterion_main!(benches);
