//! Local backend speed against llama.cpp's own: how many tokens per second `LocalEngine`
//! generates for real author requests, next to llama.cpp's bare decode speed for the same model,
//! context size and thread count. The gap between the two is what the engine's own work (chat
//! template, sampling, grammar, prompt evaluation) costs.
//!
//! `llama-bench` cannot be built from the llama.cpp sources that `llama-cpp-sys-2` vendors, so
//! the reference row re-implements its `tg128` test through the same compiled llama.cpp: a
//! warm-up decode, then 128 single-token decodes timed together. It runs in a child process
//! before the engine in every repetition, so drift in the machine's speed reaches both sides.
//!
//! `-- --parallel N` measures parallel decoding instead: the aggregate generation speed of 3N
//! author requests decoded N at a time (`local.parallel = N`, a finished one handing its slot to
//! the next) against the same requests decoded one at a time, and against llama.cpp's own
//! batched decoding at the same batch size on the same compiled library (batched-bench's
//! text-generation loop: every sequence holds a prompt of the same depth, then every step decodes
//! one token of each, all logits kept; with a prompt per sequence, its default, and with one
//! shared prompt, its `-pps`). It also counts how many responses are the same bytes with N
//! sequences as with one (the batch shape changes llama.cpp's float sums) and whether each
//! setting, on a fresh engine each time, repeats its own bytes.
//!
//! Run it with `cargo bench --bench local_speed` (add `-- --quick` for one repetition at two
//! threads). It prints a markdown table and writes `local.json` (`local-parallel.json` with
//! `--parallel`) to `$SASEVAL_BENCH_OUT` (default `target/bench`). The model is
//! `$SASEVAL_TEST_MODEL`, else the bundled SmolLM2-135M.

// A bench prints its table and writes its inputs and results directly: the product's output and
// file-write rules (Cargo.toml's [lints]) are not its own.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};
use saseval_gen::config::Config;
use saseval_gen::runner::local::{LocalEngine, LocalSettings, Timing};
use saseval_gen::stages::author::plan_round0;
use saseval_gen::stages::templates::Templates;
use serde_json::{json, Value};

/// Thread counts measured by a full run; `--quick` measures only [`QUICK_THREADS`].
const THREAD_COUNTS: [u32; 2] = [1, 2];
const QUICK_THREADS: u32 = 2;
/// Repetitions of every measurement in a full run; `--quick` makes one.
const REPETITIONS: usize = 3;
/// Author request bodies in one engine run: the first of round 0, in the order the job runs
/// them, so requests of one category follow each other and share their prompt's prefix.
const BODIES_PER_RUN: usize = 3;
/// Completion budget per request body, so a run's length is bounded.
const MAX_TOKENS: u32 = 300;
/// Single-token decodes timed by the llama.cpp reference, as in llama-bench's `tg128`.
const TG_TOKENS: usize = 128;
/// Positions already in the KV cache for the depth-matched reference (llama-bench's
/// `tg128 @ d1400`): about where the engine generates, after an author prompt of ~1,360 tokens.
/// Each decode attends over every earlier position, so decodes at 0–127 flatter llama.cpp.
const TG_DEPTH: usize = 1_400;
const _: () = assert!(
    TG_DEPTH == 1_400,
    "the case name llamacpp_tg128_d1400 states the depth"
);
/// llama.cpp's `LLAMA_FLASH_ATTN_TYPE_DISABLED`, as the engine sets it.
const FLASH_ATTENTION_DISABLED: i32 = 0;
const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
const CONFIG_FILE: &str = "pipeline.local.toml";
/// Set (to "THREADS CONTEXT_SIZE") in the child process that runs the llama.cpp reference.
const REFERENCE_ENV: &str = "SASEVAL_LOCAL_SPEED_REFERENCE";
/// Set (to "THREADS CONTEXT_SIZE SEQUENCES") in the child that runs llama.cpp's batched decoding.
const BATCHED_ENV: &str = "SASEVAL_LOCAL_SPEED_BATCHED";
/// Completion budget of each request in the `--parallel` comparison.
const PARALLEL_MAX_TOKENS: u32 = 96;
/// Requests per slot in the `--parallel` comparison: one item's reply often ends before the
/// budget, and a finished sequence hands its slot to the next request, so with several requests
/// per slot the batch stays full, as in a job, until the last few.
const PARALLEL_REQUESTS_PER_SLOT: usize = 3;
/// Steps of llama.cpp's batched decoding timed per batch size (each decodes one token of every
/// sequence).
const BATCHED_STEPS: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Case {
    EngineJsonSchema,
    EngineFreeText,
    LlamaCppTg128,
    LlamaCppTg128AtDepth,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::EngineJsonSchema => "engine_json_schema",
            Case::EngineFreeText => "engine_free_text",
            Case::LlamaCppTg128 => "llamacpp_tg128",
            Case::LlamaCppTg128AtDepth => "llamacpp_tg128_d1400",
        }
    }
}

/// One case at one thread count, repeated.
struct Measurement {
    case: Case,
    threads: u32,
    /// Tokens per second of each repetition.
    runs: Vec<f64>,
    /// `None` for the llama.cpp reference, which always decodes [`TG_TOKENS`].
    engine: Option<EngineTokens>,
}

impl Measurement {
    fn new(case: Case, threads: u32) -> Measurement {
        let engine = matches!(case, Case::EngineJsonSchema | Case::EngineFreeText)
            .then(EngineTokens::default);
        Measurement {
            case,
            threads,
            runs: Vec::new(),
            engine,
        }
    }

    fn tokens_per_run(&self) -> u64 {
        self.engine
            .as_ref()
            .map_or(TG_TOKENS as u64, |engine| engine.completion_tokens)
    }
}

/// What an engine run produced, beyond its overall tokens/s.
#[derive(Default)]
struct EngineTokens {
    completion_tokens: u64,
    prompt_tokens: u64,
    evaluated_prompt_tokens: u64,
    /// Tokens/s of generation alone, per repetition, from the engine's own timing.
    generation_runs: Vec<f64>,
    /// Tokens/s of prompt evaluation, per repetition (evaluated tokens only).
    prompt_runs: Vec<f64>,
}

/// The request bodies of one engine case.
struct Workload {
    case: Case,
    bodies: Vec<Value>,
}

/// Totals over the bodies of one engine run: wall time of `complete`, and the engine's own timing.
#[derive(Default)]
struct EngineRun {
    seconds: f64,
    timing: Timing,
}

struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("local_speed: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model_path = std::env::var_os("SASEVAL_TEST_MODEL")
        .map_or_else(|| crate_root.join(DEFAULT_MODEL), PathBuf::from);
    if let Ok(spec) = std::env::var(REFERENCE_ENV) {
        return run_reference(&spec, &model_path);
    }
    if let Ok(spec) = std::env::var(BATCHED_ENV) {
        return run_batched_reference(&spec, &model_path);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|arg| arg == "--quick");
    if let Some(at) = args.iter().position(|arg| arg == "--parallel") {
        let sequences = args
            .get(at + 1)
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| *n >= 2)
            .ok_or("--parallel needs a number of sequences of at least 2")?;
        let repetitions = if quick { 1 } else { REPETITIONS };
        return run_parallel(crate_root, &model_path, sequences, repetitions);
    }
    let (thread_counts, repetitions) = if quick {
        (vec![QUICK_THREADS], 1)
    } else {
        (THREAD_COUNTS.to_vec(), REPETITIONS)
    };
    if !model_path.is_file() {
        return Err(format!(
            "model file {} not found: run scripts/fetch-model.sh (or set SASEVAL_TEST_MODEL)",
            model_path.display()
        ));
    }
    let config = Config::load(&crate_root.join(CONFIG_FILE), &[]).map_err(|e| e.to_string())?;
    let templates = Templates::load(&config.author.prompts_dir).map_err(|e| e.to_string())?;
    let (categories, workloads) = author_workloads(&config, &templates)?;
    let context_size = config.local.context_size;

    let load_at_start = load_average();
    let mut measurements = Vec::new();
    for &threads in &thread_counts {
        let settings = LocalSettings {
            model_path: model_path.clone(),
            threads,
            context_size,
            repeat_penalty: config.local.repeat_penalty,
            chat_template: None,
            parallel: 1,
            cut_loops: false, // the bench times decoding: every reply runs its course
        };
        measurements.extend(measure_threads(&settings, &workloads, repetitions)?);
    }
    measurements.sort_by_key(|measurement| (measurement.threads, measurement.case));

    print_report(&measurements, &categories, context_size);
    println!(
        "\nLoad average (1, 5, 15 min) at the start: {load_at_start}; at the end: {}. Other work \
         on the machine slows every row, and runs with more threads the most.",
        load_average()
    );
    let out_dir = std::env::var_os("SASEVAL_BENCH_OUT")
        .map_or_else(|| crate_root.join("target/bench"), PathBuf::from);
    let written = write_json(&measurements, &out_dir)?;
    println!("\nResults written to {}.", written.display());
    Ok(())
}

/// The first [`BODIES_PER_RUN`] round-0 author requests, in the job's order, as a JSON schema
/// workload and a free-text workload, with the category of each.
fn author_workloads(
    config: &Config,
    templates: &Templates,
) -> Result<(Vec<String>, [Workload; 2]), String> {
    let planned: Vec<_> = plan_round0(config, templates)
        .into_iter()
        .take(BODIES_PER_RUN)
        .collect();
    if planned.len() < BODIES_PER_RUN {
        return Err(format!(
            "{CONFIG_FILE} plans {} round-0 requests; this benchmark needs {BODIES_PER_RUN}",
            planned.len()
        ));
    }
    let categories = planned.iter().map(|r| r.category.to_string()).collect();
    let bodies: Vec<Value> = planned
        .iter()
        .map(|r| with_max_tokens(r.request.body(), MAX_TOKENS))
        .collect();
    let free_text = bodies
        .iter()
        .map(|body| {
            let mut body = body.clone();
            if let Some(fields) = body.as_object_mut() {
                fields.remove("response_format");
            }
            body
        })
        .collect();
    Ok((
        categories,
        [
            workload(Case::EngineJsonSchema, bodies),
            workload(Case::EngineFreeText, free_text),
        ],
    ))
}

fn workload(case: Case, bodies: Vec<Value>) -> Workload {
    Workload { case, bodies }
}

fn with_max_tokens(body: &Value, max_tokens: u32) -> Value {
    let mut body = body.clone();
    if let Some(fields) = body.as_object_mut() {
        fields.remove("max_completion_tokens");
        fields.insert("max_tokens".to_string(), json!(max_tokens));
    }
    body
}

/// Every case at one thread count. Each repetition runs the llama.cpp reference (in a child
/// process, see [`reference_child`]) and then both engine workloads, so a machine that slows
/// down during the run slows both sides alike.
fn measure_threads(
    settings: &LocalSettings,
    workloads: &[Workload],
    repetitions: usize,
) -> Result<Vec<Measurement>, String> {
    let mut engine = LocalEngine::load(settings).map_err(|e| e.to_string())?;
    // The warm-up leaves in the KV cache what every later repetition starts from: the prompt of
    // the last body (the free-text bodies share the JSON ones' prompts).
    if let Some(last) = workloads
        .first()
        .and_then(|workload| workload.bodies.last())
    {
        engine
            .complete(&with_max_tokens(last, 1))
            .map_err(|e| e.to_string())?;
    }
    let threads = settings.threads;
    let mut reference = [
        Measurement::new(Case::LlamaCppTg128, threads),
        Measurement::new(Case::LlamaCppTg128AtDepth, threads),
    ];
    let mut engine_rows: Vec<Measurement> = workloads
        .iter()
        .map(|workload| Measurement::new(workload.case, threads))
        .collect();
    for repetition in 1..=repetitions {
        progress("llama.cpp reference", threads, repetition, repetitions);
        let speeds = reference_child(settings)?;
        for (row, speed) in reference.iter_mut().zip(speeds) {
            row.runs.push(speed);
        }
        for (workload, row) in workloads.iter().zip(&mut engine_rows) {
            progress(workload.case.name(), threads, repetition, repetitions);
            let EngineRun { seconds, timing } = engine_run(&mut engine, workload)?;
            row.runs.push(timing.completion_tokens as f64 / seconds);
            let tokens = row
                .engine
                .as_mut()
                .expect("engine rows carry engine tokens");
            tokens.completion_tokens = timing.completion_tokens as u64;
            tokens.prompt_tokens =
                (timing.reused_prompt_tokens + timing.evaluated_prompt_tokens) as u64;
            tokens.evaluated_prompt_tokens = timing.evaluated_prompt_tokens as u64;
            tokens
                .generation_runs
                .push(timing.generation_tokens_per_second());
            tokens.prompt_runs.push(timing.prompt_tokens_per_second());
        }
    }
    Ok(reference.into_iter().chain(engine_rows).collect())
}

/// Runs every body of `workload` once, in order, and sums what the engine says it spent.
fn engine_run(engine: &mut LocalEngine, workload: &Workload) -> Result<EngineRun, String> {
    let mut run = EngineRun::default();
    for body in &workload.bodies {
        let started = Instant::now();
        engine.complete(body).map_err(|e| e.to_string())?;
        run.seconds += started.elapsed().as_secs_f64();
        let timing = engine
            .last_timing()
            .ok_or("the engine kept no timing for a completed request")?;
        run.timing.add(&timing);
    }
    Ok(run)
}

/// One repetition of the llama.cpp reference, in a child process of this benchmark: llama.cpp's
/// backend may be live only once in a process, and the engine holds this process's.
fn reference_child(settings: &LocalSettings) -> Result<[f64; 2], String> {
    let spec = format!("{} {}", settings.threads, settings.context_size);
    child_speeds(
        REFERENCE_ENV,
        &spec,
        &settings.model_path,
        "the llama.cpp reference",
    )
}

/// Runs this benchmark as a child with `env` set to `spec` and returns the `N` tokens/s figures
/// it prints.
fn child_speeds<const N: usize>(
    env: &str,
    spec: &str,
    model_path: &Path,
    what: &str,
) -> Result<[f64; N], String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this benchmark: {e}"))?;
    let output = std::process::Command::new(exe)
        .env(env, spec)
        .env("SASEVAL_TEST_MODEL", model_path)
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let speeds: Vec<f64> = String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    <[f64; N]>::try_from(speeds).map_err(|speeds| format!("{what} printed {speeds:?}"))
}

/// The child's side of [`reference_child`]: prints the tokens/s of `tg128` and `tg128 @ d1400`.
fn run_reference(spec: &str, model_path: &Path) -> Result<(), String> {
    let numbers: Vec<u32> = spec
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    let &[threads, context_size] = numbers.as_slice() else {
        return Err(format!(
            "{REFERENCE_ENV} must be \"THREADS CONTEXT_SIZE\", got {spec:?}"
        ));
    };
    let speeds = measure_llamacpp(model_path, threads, context_size)?;
    println!("{} {}", speeds[0], speeds[1]);
    Ok(())
}

/// llama-bench's `tg128` through the same llama.cpp the engine uses: the model, a context set up
/// as the engine sets up its own, and [`TG_TOKENS`] single-token decodes of the BOS token at
/// positions 0, 1, 2, …, then the same after [`TG_DEPTH`] positions put in the KV cache.
fn measure_llamacpp(
    model_path: &Path,
    threads: u32,
    context_size: u32,
) -> Result<[f64; 2], String> {
    send_logs_to_tracing(LogOptions::default().with_logs_enabled(false));
    let backend = LlamaBackend::init().map_err(|e| format!("llama.cpp backend: {e}"))?;
    let model = LlamaModel::load_from_file(&backend, model_path, &LlamaModelParams::default())
        .map_err(|e| format!("cannot load {}: {e}", model_path.display()))?;
    let token = model.vocab().bos();
    let mut context = reference_context(&backend, &model, threads, context_size, 1, false)?;
    let mut batch = LlamaBatch::new(TG_DEPTH.max(1), 1);
    decode_one(&mut context, &mut batch, token, 0)?;
    let mut speeds = [0.0; 2];
    for (speed, depth) in speeds.iter_mut().zip([0, TG_DEPTH]) {
        context.clear_kv_cache();
        fill_kv_cache(&mut context, &mut batch, token, depth)?;
        let started = Instant::now();
        for position in depth..depth + TG_TOKENS {
            let position = i32::try_from(position).expect("positions fit in i32");
            decode_one(&mut context, &mut batch, token, position)?;
        }
        context.synchronize();
        *speed = TG_TOKENS as f64 / started.elapsed().as_secs_f64();
    }
    Ok(speeds)
}

/// A context for the llama.cpp references, set up as the engine sets up its own: `sequences` of
/// `context_size` cells each, in one unified KV cache or a stream per sequence.
fn reference_context<'m>(
    backend: &LlamaBackend,
    model: &'m LlamaModel,
    threads: u32,
    context_size: u32,
    sequences: u32,
    unified: bool,
) -> Result<LlamaContext<'m>, String> {
    let llama_threads = i32::try_from(threads).map_err(|e| format!("{threads} threads: {e}"))?;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(context_size * sequences))
        .with_n_batch(context_size.max(sequences))
        .with_n_seq_max(sequences)
        .with_kv_unified(unified)
        .with_n_threads(llama_threads)
        .with_n_threads_batch(llama_threads)
        .with_flash_attention_policy(FLASH_ATTENTION_DISABLED);
    model
        .new_context(backend, params)
        .map_err(|e| format!("cannot create a llama.cpp context: {e}"))
}

/// Puts `depth` positions of `token` in the KV cache in one batch (untimed).
fn fill_kv_cache(
    context: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    token: LlamaToken,
    depth: usize,
) -> Result<(), String> {
    if depth == 0 {
        return Ok(());
    }
    batch.clear();
    for position in 0..depth {
        let position = i32::try_from(position).expect("positions fit in i32");
        batch
            .add(token, position, &[0], false)
            .map_err(|e| format!("llama.cpp batch: {e}"))?;
    }
    context
        .decode(batch)
        .map_err(|e| format!("llama.cpp decode: {e}"))
}

fn decode_one(
    context: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    token: LlamaToken,
    position: i32,
) -> Result<(), String> {
    batch.clear();
    batch
        .add(token, position, &[0], true)
        .map_err(|e| format!("llama.cpp batch: {e}"))?;
    context
        .decode(batch)
        .map_err(|e| format!("llama.cpp decode: {e}"))
}

/// One row of the `--parallel` comparison: generation tokens/s of each repetition.
struct ParallelRow {
    case: &'static str,
    sequences: u32,
    runs: Vec<f64>,
}

/// `--parallel N`: the engine with N sequences and with one on the same N author requests, and
/// llama.cpp's batched decoding with one sequence and with N, at [`QUICK_THREADS`] threads,
/// interleaved per repetition.
fn run_parallel(
    crate_root: &Path,
    model_path: &Path,
    sequences: u32,
    repetitions: usize,
) -> Result<(), String> {
    if !model_path.is_file() {
        return Err(format!(
            "model file {} not found: run scripts/fetch-model.sh (or set SASEVAL_TEST_MODEL)",
            model_path.display()
        ));
    }
    let config = Config::load(&crate_root.join(CONFIG_FILE), &[]).map_err(|e| e.to_string())?;
    let templates = Templates::load(&config.author.prompts_dir).map_err(|e| e.to_string())?;
    let planned: Vec<_> = plan_round0(&config, &templates)
        .into_iter()
        .take(sequences as usize * PARALLEL_REQUESTS_PER_SLOT)
        .collect();
    if planned.len() < sequences as usize * PARALLEL_REQUESTS_PER_SLOT {
        return Err(format!(
            "{CONFIG_FILE} plans {} round-0 requests; --parallel {sequences} needs \
             {PARALLEL_REQUESTS_PER_SLOT} per sequence",
            planned.len()
        ));
    }
    let mut categories: Vec<String> = planned.iter().map(|r| r.category.to_string()).collect();
    categories.dedup();
    let bodies: Vec<Value> = planned
        .iter()
        .map(|r| with_max_tokens(r.request.body(), PARALLEL_MAX_TOKENS))
        .collect();
    let settings = |parallel: u32| LocalSettings {
        model_path: model_path.to_path_buf(),
        threads: QUICK_THREADS,
        context_size: config.local.context_size,
        repeat_penalty: config.local.repeat_penalty,
        chat_template: None,
        parallel,
        cut_loops: false, // the bench times decoding: every reply runs its course
    };
    let load_at_start = load_average();
    let mut rows = [
        ParallelRow {
            case: "engine, one sequence at a time",
            sequences: 1,
            runs: Vec::new(),
        },
        ParallelRow {
            case: "engine, sequences decoded together",
            sequences,
            runs: Vec::new(),
        },
        ParallelRow {
            case: "llama.cpp batched decoding, 1 sequence",
            sequences: 1,
            runs: Vec::new(),
        },
        ParallelRow {
            case: "llama.cpp batched decoding, a prompt per sequence",
            sequences,
            runs: Vec::new(),
        },
        ParallelRow {
            case: "llama.cpp batched decoding, one shared prompt (`-pps`)",
            sequences,
            runs: Vec::new(),
        },
    ];
    let mut outputs: [Vec<Vec<String>>; 2] = [Vec::new(), Vec::new()];
    let mut completion_tokens = [0; 2];
    for repetition in 1..=repetitions {
        progress(
            "llama.cpp batched decoding",
            QUICK_THREADS,
            repetition,
            repetitions,
        );
        let [one, many, shared] = batched_child(&settings(sequences))?;
        rows[2].runs.push(one);
        rows[3].runs.push(many);
        rows[4].runs.push(shared);
        for (index, parallel) in [1, sequences].into_iter().enumerate() {
            progress(rows[index].case, QUICK_THREADS, repetition, repetitions);
            // A fresh engine every time, as every job gets one: its replies must repeat.
            let mut engine = LocalEngine::load(&settings(parallel)).map_err(|e| e.to_string())?;
            let (timing, texts) = all_at_once(&mut engine, &bodies);
            rows[index].runs.push(timing.generation_tokens_per_second());
            completion_tokens[index] = timing.completion_tokens;
            outputs[index].push(texts);
        }
    }
    print_parallel(&rows, bodies.len(), &categories, config.local.context_size);
    let repeats = |runs: &[Vec<String>]| runs.windows(2).all(|pair| pair[0] == pair[1]);
    let same = outputs[0][0]
        .iter()
        .zip(&outputs[1][0])
        .filter(|(one, many)| one == many)
        .count();
    println!(
        "\nCompletion tokens per run: {} one at a time, {} together. Responses that are the same \
         bytes with {sequences} sequences as with one: {same} of {}. Each setting repeats its own \
         bytes across the {repetitions} repetition(s), each on a fresh engine: one at a time {}, \
         together {}.",
        completion_tokens[0],
        completion_tokens[1],
        bodies.len(),
        if repeats(&outputs[0]) { "yes" } else { "NO" },
        if repeats(&outputs[1]) { "yes" } else { "NO" },
    );
    println!(
        "\nLoad average (1, 5, 15 min) at the start: {load_at_start}; at the end: {}.",
        load_average()
    );
    let out_dir = std::env::var_os("SASEVAL_BENCH_OUT")
        .map_or_else(|| crate_root.join("target/bench"), PathBuf::from);
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|row| {
            let spread = spread(&row.runs);
            json!({
                "case": row.case,
                "sequences": row.sequences,
                "threads": QUICK_THREADS,
                "generation_tokens_per_s_median": spread.median,
                "generation_tokens_per_s_min": spread.min,
                "generation_tokens_per_s_max": spread.max,
                "runs": row.runs,
            })
        })
        .collect();
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let path = out_dir.join("local-parallel.json");
    let text = serde_json::to_string_pretty(&json_rows).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("\nResults written to {}.", path.display());
    Ok(())
}

/// Runs `bodies` through `engine` as one job and returns its timing and each response's text.
fn all_at_once(engine: &mut LocalEngine, bodies: &[Value]) -> (Timing, Vec<String>) {
    let mut texts = vec![String::new(); bodies.len()];
    let requests = bodies.iter().cloned().enumerate();
    let timing = engine.complete_all(requests, |index, result, _| {
        texts[index] = match result {
            Ok(response) => response.to_string(),
            Err(error) => format!("error: {error}"),
        };
        std::ops::ControlFlow::Continue(())
    });
    (timing, texts)
}

fn print_parallel(rows: &[ParallelRow], requests: usize, categories: &[String], context_size: u32) {
    println!("| case | sequences | threads | generation tokens/s (median) | min–max |");
    println!("|---|---:|---:|---:|---:|");
    for row in rows {
        let spread = spread(&row.runs);
        println!(
            "| {} | {} | {QUICK_THREADS} | {:.1} | {:.1}–{:.1} |",
            row.case, row.sequences, spread.median, spread.min, spread.max
        );
    }
    let median = |index: usize| spread(&rows[index].runs).median;
    println!(
        "\nRatios of the medians: together / one at a time **{:.2}×** (target ≥ 2×); together / \
         llama.cpp batched at the same batch size, a prompt per sequence, **{:.2}×** (target ≥ \
         0.85×); llama.cpp's own gain from batching {:.2}× (a prompt per sequence), {:.2}× (one \
         shared prompt).",
        median(1) / median(0),
        median(1) / median(3),
        median(3) / median(2),
        median(4) / median(2),
    );
    println!(
        "\nEngine rows: the first {} round-0 author requests of {CONFIG_FILE} ({}), JSON-schema \
         grammar on, max_tokens {PARALLEL_MAX_TOKENS}, n_ctx {context_size} per sequence; \
         generation tokens/s = completion tokens / the engine's generation time (picking every \
         sequence's token and decoding them together; prompt evaluation excluded); each sequence \
         has its own KV stream. llama.cpp rows: the same compiled library and context set-up \
         (flash attention off), a prompt of {TG_DEPTH} positions, then {BATCHED_STEPS} steps \
         that each decode one token of every sequence with its logits (batched-bench's \
         text-generation loop; no sampling). \"A prompt per sequence\" is batched-bench's \
         default: a KV stream per sequence, each holding its own copy of the prompt, as the \
         engine's requests each have their own. \"One shared prompt\" is its `-pps` in a unified \
         cache: every sequence attends over the same cells, so each step reads them once for \
         all; independent requests cannot share that.",
        requests,
        categories.join(", ")
    );
}

/// One repetition of llama.cpp's batched decoding, in a child process (see [`reference_child`]):
/// tokens/s with one sequence, with `settings.parallel` sequences each in its own KV stream
/// (batched-bench's default), and with them sharing one prompt in a unified cache (its `-pps`).
fn batched_child(settings: &LocalSettings) -> Result<[f64; 3], String> {
    let spec = format!(
        "{} {} {}",
        settings.threads, settings.context_size, settings.parallel
    );
    child_speeds(
        BATCHED_ENV,
        &spec,
        &settings.model_path,
        "llama.cpp's batched decoding",
    )
}

/// The child's side of [`batched_child`]: prints the tokens/s of 1 sequence, of N in their own
/// KV streams and of N sharing a prompt.
fn run_batched_reference(spec: &str, model_path: &Path) -> Result<(), String> {
    let numbers: Vec<u32> = spec
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    let &[threads, context_size, sequences] = numbers.as_slice() else {
        return Err(format!(
            "{BATCHED_ENV} must be \"THREADS CONTEXT_SIZE SEQUENCES\", got {spec:?}"
        ));
    };
    send_logs_to_tracing(LogOptions::default().with_logs_enabled(false));
    let backend = LlamaBackend::init().map_err(|e| format!("llama.cpp backend: {e}"))?;
    let model = LlamaModel::load_from_file(&backend, model_path, &LlamaModelParams::default())
        .map_err(|e| format!("cannot load {}: {e}", model_path.display()))?;
    let mut speeds = Vec::new();
    for (unified, batch_sizes) in [(false, vec![1, sequences]), (true, vec![sequences])] {
        let mut context =
            reference_context(&backend, &model, threads, context_size, sequences, unified)?;
        for batch_size in batch_sizes {
            speeds.push(batched_decoding(&mut context, &model, batch_size)?);
        }
    }
    println!(
        "{}",
        speeds
            .iter()
            .map(f64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

/// batched-bench's text-generation loop: a prompt of [`TG_DEPTH`] positions in sequence 0, copied
/// to the other sequences (in a unified cache the copy shares its cells; between streams it
/// copies them), then [`BATCHED_STEPS`] timed steps that each decode one token of every sequence
/// with its logits. Returns tokens/s and leaves the cache empty.
fn batched_decoding(
    context: &mut LlamaContext<'_>,
    model: &LlamaModel,
    batch_size: u32,
) -> Result<f64, String> {
    let token = model.vocab().bos();
    let mut batch = LlamaBatch::new(TG_DEPTH.max(batch_size as usize), 1);
    fill_kv_cache(context, &mut batch, token, TG_DEPTH)?;
    for sequence in 1..batch_size {
        let sequence = i32::try_from(sequence).map_err(|e| e.to_string())?;
        context
            .copy_kv_cache_seq(0, sequence, None, None)
            .map_err(|e| format!("llama.cpp sequence copy: {e}"))?;
    }
    let started = Instant::now();
    for step in 0..BATCHED_STEPS {
        batch.clear();
        let position = i32::try_from(TG_DEPTH + step).map_err(|e| e.to_string())?;
        for sequence in 0..batch_size {
            let sequence = i32::try_from(sequence).map_err(|e| e.to_string())?;
            batch
                .add(token, position, &[sequence], true)
                .map_err(|e| format!("llama.cpp batch: {e}"))?;
        }
        context
            .decode(&mut batch)
            .map_err(|e| format!("llama.cpp decode: {e}"))?;
    }
    context.synchronize();
    let speed = BATCHED_STEPS as f64 * f64::from(batch_size) / started.elapsed().as_secs_f64();
    context.clear_kv_cache();
    Ok(speed)
}

fn progress(what: &str, threads: u32, repetition: usize, repetitions: usize) {
    eprintln!("local_speed: {what} at {threads} thread(s), run {repetition}/{repetitions}");
}

/// The 1, 5 and 15 minute load averages, where the system reports them (Linux).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|_| "unknown".to_string())
}

fn spread(runs: &[f64]) -> Spread {
    let mut sorted = runs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    let median = if sorted.len() % 2 == 0 {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    };
    Spread {
        median,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
    }
}

fn print_report(measurements: &[Measurement], categories: &[String], context_size: u32) {
    println!("| case | threads | tokens/s (median) | min–max | tokens per run |");
    println!("|---|---:|---:|---:|---:|");
    for measurement in measurements {
        let spread = spread(&measurement.runs);
        println!(
            "| {} | {} | {:.1} | {:.1}–{:.1} | {} |",
            measurement.case.name(),
            measurement.threads,
            spread.median,
            spread.min,
            spread.max,
            measurement.tokens_per_run()
        );
    }
    println!(
        "\nllamacpp_tg128 is llama-bench's tg128 re-implemented on the same compiled llama.cpp \
         (llama-bench cannot be built from the vendored sources): same model, n_ctx {context_size}, \
         flash attention off and thread count as the engine; after a warm-up decode, {TG_TOKENS} \
         single-token decodes of the BOS token at positions 0–{}, tokens/s = {TG_TOKENS} / their wall time. \
         llamacpp_tg128_d1400 (llama-bench's tg128 @ d{TG_DEPTH}) first fills the KV cache with \
         {TG_DEPTH} positions (untimed), then times the same decodes at positions {TG_DEPTH}–{}: \
         where the engine generates, after an author prompt.",
        TG_TOKENS - 1,
        TG_DEPTH + TG_TOKENS - 1
    );
    println!(
        "\nEngine rows run the first {BODIES_PER_RUN} round-0 author requests of {CONFIG_FILE}, in \
         the job's order ({}), with \
         max_tokens {MAX_TOKENS}, with response_format (grammar) or without it (free text); \
         tokens/s = completion tokens / wall time of LocalEngine::complete, which includes \
         prompt evaluation. Generation and prompt evaluation alone are the engine's own timing \
         (LocalEngine::last_timing): generation runs from the first token picked to the last, \
         and prompt evaluation counts only the tokens not kept from the previous request:\n",
        categories.join(", ")
    );
    println!("| case | threads | prompt tokens per run (evaluated) | prompt evaluation tokens/s (median, min–max) | generation tokens/s (median, min–max) |");
    println!("|---|---:|---:|---:|---:|");
    for measurement in measurements {
        if let Some(engine) = &measurement.engine {
            let prompt = spread(&engine.prompt_runs);
            let generation = spread(&engine.generation_runs);
            println!(
                "| {} | {} | {} ({}) | {:.1} ({:.1}–{:.1}) | {:.1} ({:.1}–{:.1}) |",
                measurement.case.name(),
                measurement.threads,
                engine.prompt_tokens,
                engine.evaluated_prompt_tokens,
                prompt.median,
                prompt.min,
                prompt.max,
                generation.median,
                generation.min,
                generation.max
            );
        }
    }
    println!(
        "\nGeneration against llama.cpp's decode loop at the same depth and threads (medians):\n"
    );
    println!("| case | threads | generation / llamacpp_tg128_d1400 |");
    println!("|---|---:|---:|");
    for measurement in measurements {
        let reference = measurements.iter().find(|other| {
            other.case == Case::LlamaCppTg128AtDepth && other.threads == measurement.threads
        });
        if let (Some(engine), Some(reference)) = (&measurement.engine, reference) {
            let ratio = spread(&engine.generation_runs).median / spread(&reference.runs).median;
            println!(
                "| {} | {} | {ratio:.2}× |",
                measurement.case.name(),
                measurement.threads
            );
        }
    }
}

/// Writes `local.json` into `out_dir` (created if missing) and returns its path.
fn write_json(measurements: &[Measurement], out_dir: &Path) -> Result<PathBuf, String> {
    let rows: Vec<Value> = measurements
        .iter()
        .map(|measurement| {
            let spread = spread(&measurement.runs);
            json!({
                "case": measurement.case.name(),
                "threads": measurement.threads,
                "tokens_per_s_median": spread.median,
                "tokens_per_s_min": spread.min,
                "tokens_per_s_max": spread.max,
                "runs": measurement.runs,
                "completion_tokens": measurement.engine.as_ref().map(|engine| engine.completion_tokens),
                "generation_tokens_per_s": measurement.engine.as_ref().map(|engine| engine.generation_runs.clone()),
                "prompt_evaluation_tokens_per_s": measurement.engine.as_ref().map(|engine| engine.prompt_runs.clone()),
            })
        })
        .collect();
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let path = out_dir.join("local.json");
    let text = serde_json::to_string_pretty(&rows).expect("plain JSON values serialise");
    std::fs::write(&path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}
