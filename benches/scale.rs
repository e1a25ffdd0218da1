//! Scale benchmarks: the work the tool does itself at sizes far past one release — parse and
//! validate a 50,000-line output file, the batch runner against a zero-latency fake, the online
//! backend against a zero-latency fake (its own CPU per request) and against a fake that answers
//! 429 above a rate it does not tell (how fast the limiter finds that rate, and how often it is
//! refused after), assemble at 10k to 1M candidates, and MinHash LSH against exact all-pairs dedup. Each case runs in a
//! fresh child process so its wall time and peak RSS (its own `VmHWM`) are its own. Prints a
//! markdown table and writes `target/bench/scale.json` and `target/bench/assemble-scale.svg`.
//!
//! The assemble cases also run on 1M candidates with the 100k file's density of duplicates
//! (`benches/constant_density.py`), so the stage's growth shows apart from its input's.
//!
//! `cargo bench --bench scale` runs every case; `-- --quick` skips the two 1M-candidate
//! assembles and the largest agreement size. Generated inputs are kept under `target/bench/work`.

// A bench prints its table and writes its inputs and results directly: the product's output and
// file-write rules (Cargo.toml's [lints]) are not its own.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

use saseval_gen::config::Config;
use saseval_gen::quality::dedup::{self, DedupConfig, Method};
use saseval_gen::runner::cache::Cache;
use saseval_gen::runner::ingest::{ingest_file, NamedBadLines};
use saseval_gen::runner::{CostGuard, Request, RunOptions, Runner};
use saseval_gen::stages::author;
use saseval_gen::stages::item::Candidate;
use saseval_gen::stages::templates::Templates;
use saseval_gen::ui::Printer;
use saseval_gen::util::jsonl;
use saseval_testkit::fake_online::FakeOnline;
use saseval_testkit::{fake_api, synth};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BENCH_KEY_ENV: &str = "SASEVAL_BENCH_KEY";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().position(|a| a == "--case") {
        Some(at) => run_child(&args[at + 1..]),
        None => run_parent(args.iter().any(|a| a == "--quick")),
    };
    if let Err(e) = result {
        eprintln!("scale: {e}");
        std::process::exit(1);
    }
}

type BenchResult<T> = Result<T, String>;

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bench_dir() -> PathBuf {
    std::env::var_os("SASEVAL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_root().join("target/bench"))
}

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

// ---------------------------------------------------------------------------------------------
// Parent: prepares inputs, runs each case in a child, reports
// ---------------------------------------------------------------------------------------------

/// One measured case.
struct Measured {
    case: &'static str,
    size: usize,
    wall_s: f64,
    peak_rss_mb: f64,
    /// What the child reported (phase timings, counts).
    detail: Value,
}

fn run_parent(quick: bool) -> BenchResult<()> {
    let work = bench_dir().join("work");
    std::fs::create_dir_all(&work).map_err(err("creating target/bench/work"))?;
    let mut results = Vec::new();
    for lines in [10_000, 25_000, 50_000] {
        let dir = prepared(&work, "output", lines, |dir| {
            synth::write_output_file(&dir.join("output.jsonl"), lines).map(|_| ())
        })?;
        results.push(measure("parse_validate", lines, &dir)?);
    }
    for requests in [10_000, 50_000] {
        let dir = work.join(format!("runner-{requests}"));
        results.push(measure("runner", requests, &dir)?);
    }
    let dir = work.join(format!("online-runner-{ONLINE_REQUESTS}"));
    results.push(measure(ONLINE_RUNNER, ONLINE_REQUESTS, &dir)?);
    let dir = work.join("online-rate");
    results.push(measure(ONLINE_RATE, ONLINE_RATE_REQUESTS, &dir)?);
    let assemble_sizes: &[usize] = if quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    for &count in assemble_sizes {
        let dir = prepared(&work, "candidates", count, |dir| {
            synth::write_candidates(&dir.join("candidates.jsonl"), count)
        })?;
        results.push(measure("assemble", count, &dir)?);
    }
    if !quick {
        let source = work.join("candidates-100000").join("candidates.jsonl");
        let dir = prepared(&work, "constant-density", 1_000_000, |dir| {
            constant_density(&source, dir)
        })?;
        results.push(measure(CONSTANT_DENSITY, 1_000_000, &dir)?);
    }
    let agreement_sizes: &[usize] = if quick {
        &[5_000, 10_000]
    } else {
        &[5_000, 10_000, 20_000]
    };
    for &count in agreement_sizes {
        let dir = prepared(&work, "candidates", count, |dir| {
            synth::write_candidates(&dir.join("candidates.jsonl"), count)
        })?;
        results.push(measure("dedup_agreement", count, &dir)?);
    }
    report(&results)
}

/// The assemble case on 1M candidates with the 100k file's density of duplicates: the bench's
/// own 1M file is denser (its work is per pair), so this case shows the stage's growth apart
/// from its input's.
const CONSTANT_DENSITY: &str = "assemble_constant_density";

/// The online backend's overhead case: this many requests at `online.concurrency` 64 against a
/// fake that answers at once.
const ONLINE_RUNNER: &str = "online_runner";
const ONLINE_REQUESTS: usize = 10_000;
const ONLINE_CONCURRENCY: usize = 64;
/// The online backend's rate case: this many requests against a fake that answers 429 above
/// `HIDDEN_RATE` requests a second (each answer after `RATE_CASE_LATENCY`), which runs for
/// about `ONLINE_RATE_REQUESTS / HIDDEN_RATE` seconds.
const ONLINE_RATE: &str = "online_rate";
const ONLINE_RATE_REQUESTS: usize = 9_000;
const HIDDEN_RATE: usize = 100;
const RATE_CASE_LATENCY: Duration = Duration::from_millis(10);
/// The rate counts as reached once the mean over this many seconds is 90% of the hidden rate.
const RATE_MEAN_SECS: usize = 5;

/// Writes ten copies of `source` into `dir`, each but the first under a letter cipher of its
/// own (`benches/constant_density.py`).
fn constant_density(source: &Path, dir: &Path) -> std::io::Result<()> {
    let script = crate_root().join("benches").join("constant_density.py");
    let status = Command::new("python3")
        .arg(script)
        .arg(source)
        .arg(dir)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "benches/constant_density.py failed ({status})"
        )))
    }
}

/// A folder of generated input, made once and kept (a `.complete` marker says it is whole).
fn prepared(
    work: &Path,
    kind: &str,
    size: usize,
    make: impl FnOnce(&Path) -> std::io::Result<()>,
) -> BenchResult<PathBuf> {
    let dir = work.join(format!("{kind}-{size}"));
    if dir.join(".complete").exists() {
        return Ok(dir);
    }
    eprintln!("scale: generating {kind} × {size} in {}", dir.display());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(err("creating the input folder"))?;
    make(&dir).map_err(err("generating input"))?;
    std::fs::write(dir.join(".complete"), b"").map_err(err("marking the input complete"))?;
    Ok(dir)
}

/// Runs `case` in a child process and reads its wall time and report (the last line of its
/// stdout), which holds its own peak RSS.
fn measure(case: &'static str, size: usize, dir: &Path) -> BenchResult<Measured> {
    let exe = std::env::current_exe().map_err(err("finding the bench binary"))?;
    eprintln!("scale: {case} × {size} ...");
    let started = Instant::now();
    let mut child = Command::new(exe)
        .args(["--case", case, &size.to_string()])
        .arg(dir)
        .env(BENCH_KEY_ENV, "bench-key-not-secret")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(err("starting the case"))?;
    let mut stdout = child.stdout.take().ok_or("the case has no stdout")?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut text).map_err(err("reading the case"))?;
    let status = child.wait().map_err(err("waiting for the case"))?;
    let wall_s = started.elapsed().as_secs_f64();
    if !status.success() {
        return Err(format!("case {case} × {size} failed"));
    }
    let report = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let mut detail: Value = serde_json::from_str(report).map_err(err("the case's report"))?;
    let peak_rss_mb = detail
        .as_object_mut()
        .and_then(|d| d.remove(PEAK_RSS_KEY))
        .and_then(|v| v.as_f64())
        .ok_or("the case's report has no peak RSS")?;
    Ok(Measured {
        case,
        size,
        wall_s,
        peak_rss_mb,
        detail,
    })
}

/// The report field holding the wall time of the stage alone, where the case times one: the
/// assemble case also copies its input into a fresh out dir and reads the release back, which
/// at 1M candidates is several seconds of work that is not assemble's.
const STAGE_KEY: &str = "stage_s";

impl Measured {
    /// The stage's own wall time where the case reports it, else the child process's.
    fn stage_s(&self) -> f64 {
        self.detail
            .get(STAGE_KEY)
            .and_then(Value::as_f64)
            .unwrap_or(self.wall_s)
    }
}

/// The report field holding the child's own peak RSS in MB: `VmHWM` of `/proc/self/status`.
/// (`wait4`'s ru_maxrss is no use here: Linux carries the parent's peak RSS into a spawned
/// child's, and the parent holds the generated inputs.)
const PEAK_RSS_KEY: &str = "peak_rss_mb";

fn own_peak_rss_mb() -> BenchResult<f64> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(err("/proc/self/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .ok_or_else(|| "no VmHWM in /proc/self/status".to_string())
}

fn report(results: &[Measured]) -> BenchResult<()> {
    let out = bench_dir();
    let mut lines = vec![
        "| case | input | wall (s) | peak RSS (MB) | inside the process |".to_string(),
        "|---|---|---:|---:|---|".to_string(),
    ];
    for m in results {
        lines.push(format!(
            "| {} | {} | {:.2} | {:.0} | {} |",
            m.case,
            input_label(m),
            m.wall_s,
            m.peak_rss_mb,
            describe(m)
        ));
    }
    println!("{}", lines.join("\n"));
    let json: Vec<Value> = results
        .iter()
        .map(|m| {
            json!({"case": m.case, "size": m.size, "wall_s": m.wall_s, "peak_rss_mb": m.peak_rss_mb, "detail": m.detail})
        })
        .collect();
    let json_path = out.join("scale.json");
    let text = serde_json::to_string_pretty(&json).map_err(err("scale.json"))?;
    std::fs::write(&json_path, text).map_err(err("writing scale.json"))?;
    let assemble: Vec<&Measured> = results.iter().filter(|m| m.case == "assemble").collect();
    let svg_path = out.join("assemble-scale.svg");
    std::fs::write(&svg_path, plot(&assemble)).map_err(err("writing the plot"))?;
    eprintln!(
        "scale: wrote {} and {}",
        json_path.display(),
        svg_path.display()
    );
    Ok(())
}

fn input_label(m: &Measured) -> String {
    let unit = match m.case {
        "parse_validate" => "output lines",
        "runner" | ONLINE_RUNNER | ONLINE_RATE => "requests",
        _ => "candidates",
    };
    format!("{} {unit}", thousands(m.size))
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn describe(m: &Measured) -> String {
    let d = &m.detail;
    let f = |k: &str| d.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let n = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0);
    match m.case {
        "parse_validate" => format!(
            "{:.0} MB file; ingest {:.2} s + parse/validate/write {:.2} s = {:.2} s \
             ({:.2} + {:.2} s CPU); {} valid, {} rejects",
            f("file_mb"),
            f("ingest_s"),
            f("derive_s"),
            f("ingest_s") + f("derive_s"),
            f("ingest_cpu_s"),
            f("derive_cpu_s"),
            n("valid"),
            n("rejects")
        ),
        "runner" => format!(
            "runner.run {:.2} s wall: runner {:.2} s CPU, fake server {:.2} s CPU ({} file(s), {} HTTP requests)",
            f("run_s"),
            f("runner_cpu_s"),
            f("fake_cpu_s"),
            n("uploads"),
            n("http_requests")
        ),
        ONLINE_RUNNER => format!(
            "runner.run {:.2} s wall at online.concurrency {ONLINE_CONCURRENCY}: runner {:.2} s CPU = \
             {:.1} µs a request, {:.1}% of one core per 1,000 requests/s (target ≤ 5%); fake server \
             {:.2} s CPU; {} HTTP requests",
            f("run_s"),
            f("runner_cpu_s"),
            f("runner_cpu_s") / m.size as f64 * 1e6,
            f("runner_cpu_s") / m.size as f64 * 1000.0 * 100.0,
            f("fake_cpu_s"),
            n("http_requests")
        ),
        ONLINE_RATE => format!(
            "hidden rate {} requests/s: the {RATE_MEAN_SECS}-s mean reached 90% of it after {:.0} s \
             (target ≤ 60 s); after that {:.1} requests/s = {:.0}% of it, 429 share {:.2}% \
             (target ≤ 5%); {} 429s in all, run {:.0} s",
            n("hidden_rate"),
            f("reached_s"),
            f("rate_after"),
            f("rate_after") / f("hidden_rate") * 100.0,
            f("refused_share_after") * 100.0,
            n("refused"),
            f("run_s")
        ),
        "assemble" | CONSTANT_DENSITY => format!(
            "the stage {:.2} s ({:.2} s CPU); {:.0} MB input; {} released, {} dropped as duplicates",
            m.stage_s(),
            f("stage_cpu_s"),
            f("input_mb"),
            n("released"),
            n("duplicates")
        ),
        "dedup_agreement" => format!(
            "all-pairs {:.2} s, MinHash LSH {:.2} s; survivors: {} both, {} all-pairs only, {} LSH only",
            f("all_pairs_s"),
            f("lsh_s"),
            n("survive_both"),
            n("survive_all_pairs_only"),
            n("survive_min_hash_only")
        ),
        _ => String::new(),
    }
}

/// Time and peak RSS of assemble against candidate count, log-scaled on both axes.
fn plot(points: &[&Measured]) -> String {
    let (w, h, left, right, top, bottom) = (640.0, 360.0, 70.0, 70.0, 30.0, 50.0);
    let xs: Vec<f64> = points.iter().map(|m| (m.size as f64).log10()).collect();
    let (x0, x1) = (3.9_f64, 6.1_f64);
    let scale_x = |x: f64| left + (x - x0) / (x1 - x0) * (w - left - right);
    let log_range = |vals: Vec<f64>| {
        let lo = vals
            .iter()
            .cloned()
            .fold(f64::INFINITY, f64::min)
            .log10()
            .floor();
        let hi = vals.iter().cloned().fold(0.0, f64::max).log10().ceil();
        (lo, hi.max(lo + 1.0))
    };
    let (t0, t1) = log_range(points.iter().map(|m| m.stage_s().max(0.01)).collect());
    let (r0, r1) = log_range(points.iter().map(|m| m.peak_rss_mb.max(1.0)).collect());
    let scale =
        |v: f64, lo: f64, hi: f64| top + (1.0 - (v.log10() - lo) / (hi - lo)) * (h - top - bottom);
    let path = |ys: Vec<f64>| -> String {
        xs.iter()
            .zip(ys)
            .enumerate()
            .map(|(i, (x, y))| {
                format!(
                    "{}{:.1},{:.1}",
                    if i == 0 { "M" } else { " L" },
                    scale_x(*x),
                    y
                )
            })
            .collect()
    };
    let time_ys: Vec<f64> = points
        .iter()
        .map(|m| scale(m.stage_s().max(0.01), t0, t1))
        .collect();
    let rss_ys: Vec<f64> = points
        .iter()
        .map(|m| scale(m.peak_rss_mb.max(1.0), r0, r1))
        .collect();
    let mut svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="18" text-anchor="middle" font-size="14">saseval-gen assemble: wall time and peak RSS against candidates (log–log)</text>
<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black"/>
<line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="#1f77b4"/>
<line x1="{}" y1="{top}" x2="{}" y2="{}" stroke="#d62728"/>
"##,
        w / 2.0,
        h - bottom,
        w - right,
        h - bottom,
        h - bottom,
        w - right,
        w - right,
        h - bottom
    );
    for (x, label) in [(4.0, "10k"), (5.0, "100k"), (6.0, "1M")] {
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>\n",
            scale_x(x),
            h - bottom + 18.0
        );
    }
    svg += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">candidates</text>\n",
        w / 2.0,
        h - 8.0
    );
    for e in (t0 as i32)..=(t1 as i32) {
        let v = 10f64.powi(e);
        svg += &format!(
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#1f77b4\">{} s</text>\n",
            left - 6.0,
            scale(v, t0, t1) + 4.0,
            trim_number(v)
        );
    }
    for e in (r0 as i32)..=(r1 as i32) {
        let v = 10f64.powi(e);
        svg += &format!(
            "<text x=\"{}\" y=\"{:.1}\" fill=\"#d62728\">{} MB</text>\n",
            w - right + 6.0,
            scale(v, r0, r1) + 4.0,
            trim_number(v)
        );
    }
    svg += &format!(
        "<path d=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n<path d=\"{}\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n",
        path(time_ys.clone()),
        path(rss_ys.clone())
    );
    for ((x, ty), ry) in xs.iter().zip(&time_ys).zip(&rss_ys) {
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{ty:.1}\" r=\"3\" fill=\"#1f77b4\"/><circle cx=\"{:.1}\" cy=\"{ry:.1}\" r=\"3\" fill=\"#d62728\"/>\n",
            scale_x(*x),
            scale_x(*x)
        );
    }
    svg += &format!(
        "<text x=\"{}\" y=\"{}\" fill=\"#1f77b4\">— the stage's wall time</text><text x=\"{}\" y=\"{}\" fill=\"#d62728\">- - peak RSS</text>\n</svg>\n",
        left + 10.0,
        top + 14.0,
        left + 10.0,
        top + 30.0
    );
    svg
}

fn trim_number(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

// ---------------------------------------------------------------------------------------------
// Child: one case, reported as one JSON object on stdout
// ---------------------------------------------------------------------------------------------

fn run_child(args: &[String]) -> BenchResult<()> {
    let [case, size, dir] = args else {
        return Err("usage: --case <case> <size> <dir>".into());
    };
    let size: usize = size.parse().map_err(err("size"))?;
    let dir = PathBuf::from(dir);
    let detail = match case.as_str() {
        "parse_validate" => parse_validate(&dir, size)?,
        "runner" => runner(&dir, size)?,
        ONLINE_RUNNER => online_runner(&dir, size)?,
        ONLINE_RATE => online_rate(&dir, size)?,
        "assemble" | CONSTANT_DENSITY => assemble(&dir)?,
        "dedup_agreement" => dedup_agreement(&dir)?,
        other => return Err(format!("unknown case {other}")),
    };
    let mut detail = detail;
    if let Some(fields) = detail.as_object_mut() {
        fields.insert(PEAK_RSS_KEY.to_string(), json!(own_peak_rss_mb()?));
    }
    println!("{detail}");
    Ok(())
}

fn config(overrides: &[String]) -> BenchResult<Config> {
    Config::load(&crate_root().join("pipeline.toml"), overrides).map_err(err("pipeline.toml"))
}

fn fresh(dir: &Path) -> BenchResult<PathBuf> {
    let run = dir.join("run");
    let _ = std::fs::remove_dir_all(&run);
    std::fs::create_dir_all(&run).map_err(err("creating the run folder"))?;
    Ok(run)
}

/// Streams the output file into a fresh cache, then derives authored.jsonl and rejects.jsonl
/// from it exactly as the author stage does.
fn parse_validate(dir: &Path, lines: usize) -> BenchResult<Value> {
    let config = config(&[])?;
    let run = fresh(dir)?;
    let output = dir.join("output.jsonl");
    let templates = Templates::load(&config.author.prompts_dir).map_err(err("templates"))?;
    let examples = author::TemplateExamples::of(&templates, config.assemble.near_dup_threshold)
        .map_err(err("template examples"))?;
    let (requests, keys) = synth::author_job(lines);
    let cpu_before = process_cpu_s();
    let started = Instant::now();
    let mut cache = Cache::open(&run.join("cache.jsonl")).map_err(err("cache"))?;
    let ingested = ingest_file(
        &mut cache,
        &output,
        &keys,
        "bench",
        NamedBadLines::KeepAsFailure,
        |_| Ok(()),
    )
    .map_err(err("ingest"))?;
    let ingest_s = started.elapsed().as_secs_f64();
    let ingest_cpu_s = process_cpu_s() - cpu_before;
    let cpu_before = process_cpu_s();
    let started = Instant::now();
    let mut candidates =
        jsonl::Writer::create(&run.join("authored.jsonl")).map_err(err("authored"))?;
    let mut rejects = jsonl::Writer::create(&run.join("rejects.jsonl")).map_err(err("rejects"))?;
    let derived = author::derive(
        &config,
        &examples,
        &requests,
        |r| Ok(cache.get_as(&r.custom_id, r.body_hash())?),
        &mut candidates,
        &mut rejects,
    )
    .map_err(err("derive"))?;
    candidates.commit().map_err(err("authored"))?;
    rejects.commit().map_err(err("rejects"))?;
    let derive_s = started.elapsed().as_secs_f64();
    let derive_cpu_s = process_cpu_s() - cpu_before;
    let file_mb = std::fs::metadata(&output).map_err(err("output"))?.len() as f64 / 1e6;
    Ok(json!({
        "file_mb": file_mb,
        "ingest_s": ingest_s,
        "derive_s": derive_s,
        "ingest_cpu_s": ingest_cpu_s,
        "derive_cpu_s": derive_cpu_s,
        "cached": ingested.added,
        "valid": derived.valid.values().sum::<usize>(),
        "rejects": derived.reject_reasons.values().sum::<usize>(),
    }))
}

/// A whole job through the HTTP runner against the fake Batch API, which answers every request
/// at once with the same realistic reply: what remains is the runner's own work (request files,
/// journal, upload, polling, download, matching, cache).
fn runner(dir: &Path, requests: usize) -> BenchResult<Value> {
    let reply = synth::author_reply(5);
    let fake = fake_api::FakeApi::start(std::sync::Arc::new(move |_: &str, _: &Value| {
        fake_api::FakeReply::Content(reply.clone())
    }));
    fake.set_steps_to_complete(1);
    let config = config(&[
        format!("api.base_url={}", fake.base_url()),
        format!("api.api_key_env={BENCH_KEY_ENV}"),
        "api.poll_interval_secs=0.01".into(),
        "api.retry_initial_secs=0.01".into(),
        format!("api.max_requests_per_job={}", requests.max(1)),
    ])?;
    let run = fresh(dir)?;
    let filler = "x".repeat(4000);
    let batch: Vec<Request> = (0..requests)
        .map(|i| {
            let r = synth::author_request(i).request;
            let mut body = r.body().clone();
            body["messages"][0]["content"] = json!(format!("{filler} {i}"));
            Request::new(r.custom_id, body)
        })
        .collect();
    let printer = Printer { quiet: true };
    let guard = CostGuard::new(f64::INFINITY, "author.max_cost_usd", 0.0);
    let runtime = tokio::runtime::Runtime::new().map_err(err("runtime"))?;
    let fake_cpu_before = thread_cpu_s("fake-batch-api")?;
    let cpu_before = process_cpu_s();
    let started = Instant::now();
    let result = runtime.block_on(async {
        let mut runner = Runner::open(&config, &run, RunOptions::default(), &printer)?;
        runner.run("bench", &batch, &guard).await
    });
    let run_s = started.elapsed().as_secs_f64();
    let cpu_s = process_cpu_s() - cpu_before;
    let fake_cpu_s = thread_cpu_s("fake-batch-api")? - fake_cpu_before;
    let result = result.map_err(err("runner"))?;
    if result.waiting > 0 {
        return Err(format!("{} requests got no outcome", result.waiting));
    }
    let counters = fake.counters();
    Ok(json!({
        "run_s": run_s,
        "runner_cpu_s": cpu_s - fake_cpu_s,
        "fake_cpu_s": fake_cpu_s,
        "uploads": counters.uploads,
        "http_requests": counters.http_requests,
    }))
}

/// CPU seconds (user + system) this process has used so far.
fn process_cpu_s() -> f64 {
    // SAFETY: rusage is plain data that getrusage fills; an all-zero value is a valid start.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// A whole job through the online backend at `online.concurrency` 64 against the fake online
/// server, which answers every request at once with the same realistic reply: what remains is
/// the backend's own work per request (limiter, HTTP, checks, cache).
fn online_runner(dir: &Path, requests: usize) -> BenchResult<Value> {
    let reply = synth::author_reply(5);
    let fake = FakeOnline::start(std::sync::Arc::new(move |_: &str, _: &Value| {
        fake_api::FakeReply::Content(reply.clone())
    }));
    let config = online_config(&fake, requests, ONLINE_CONCURRENCY)?;
    let batch = filled_requests(requests);
    let runtime = tokio::runtime::Runtime::new().map_err(err("runtime"))?;
    let fake_thread = fake_thread_name(&fake);
    let fake_cpu_before = thread_cpu_s(&fake_thread)?;
    let cpu_before = process_cpu_s();
    let started = Instant::now();
    let result = run_online(&runtime, &config, dir, &batch)?;
    let run_s = started.elapsed().as_secs_f64();
    let cpu_s = process_cpu_s() - cpu_before;
    let fake_cpu_s = thread_cpu_s(&fake_thread)? - fake_cpu_before;
    if result.waiting > 0 {
        return Err(format!("{} requests got no outcome", result.waiting));
    }
    Ok(json!({
        "run_s": run_s,
        "runner_cpu_s": cpu_s - fake_cpu_s,
        "fake_cpu_s": fake_cpu_s,
        "http_requests": fake.counters().requests,
    }))
}

/// A job through the online backend against a fake that answers 429 above [`HIDDEN_RATE`]
/// requests a second and tells nothing else (no `retry-after`, no rate headers): how soon the
/// limiter finds the rate, and how often it is refused once it has.
fn online_rate(dir: &Path, requests: usize) -> BenchResult<Value> {
    let fake = FakeOnline::start(std::sync::Arc::new(|_: &str, _: &Value| {
        fake_api::FakeReply::Content("{\"items\": []}".into())
    }));
    fake.set_hidden_rate(HIDDEN_RATE);
    fake.set_latency(RATE_CASE_LATENCY);
    fake.record_timeline();
    let mut config = online_config(&fake, requests, ONLINE_CONCURRENCY)?;
    config.api.max_retries = 100;
    config.api.retry_initial_secs = 0.05;
    let batch: Vec<Request> = (0..requests)
        .map(|i| synth::author_request(i).request)
        .collect();
    let runtime = tokio::runtime::Runtime::new().map_err(err("runtime"))?;
    let started = Instant::now();
    let result = run_online(&runtime, &config, dir, &batch)?;
    let run_s = started.elapsed().as_secs_f64();
    if result.waiting > 0 {
        return Err(format!("{} requests got no outcome", result.waiting));
    }
    let timeline = fake.counters().timeline;
    let seconds = timeline
        .iter()
        .map(|(at, _)| *at as usize + 1)
        .max()
        .unwrap_or(0);
    let mut served = vec![0usize; seconds];
    let mut refused = vec![0usize; seconds];
    for (at, status) in &timeline {
        match status {
            200 => served[*at as usize] += 1,
            429 => refused[*at as usize] += 1,
            _ => {}
        }
    }
    // The last seconds drain the queue: fewer requests are left than the rate allows.
    let steady_end = seconds.saturating_sub(RATE_MEAN_SECS);
    let target = HIDDEN_RATE as f64 * 0.9;
    let reached = (RATE_MEAN_SECS..=steady_end)
        .find(|end| {
            served[end - RATE_MEAN_SECS..*end].iter().sum::<usize>() as f64 / RATE_MEAN_SECS as f64
                >= target
        })
        .ok_or("the rate never reached 90% of the hidden rate")?;
    let after = reached..steady_end.max(reached + 1).min(seconds);
    let served_after: usize = served[after.clone()].iter().sum();
    let refused_after: usize = refused[after.clone()].iter().sum();
    Ok(json!({
        "hidden_rate": HIDDEN_RATE,
        "reached_s": reached,
        "rate_after": served_after as f64 / after.len().max(1) as f64,
        "refused_share_after": refused_after as f64 / (served_after + refused_after).max(1) as f64,
        "refused": refused.iter().sum::<usize>(),
        "run_s": run_s,
    }))
}

/// pipeline.toml pointed at `fake` through the online backend.
fn online_config(fake: &FakeOnline, requests: usize, concurrency: usize) -> BenchResult<Config> {
    config(&[
        "api.provider=online".into(),
        format!("api.base_url={}", fake.base_url()),
        format!("api.api_key_env={BENCH_KEY_ENV}"),
        format!("api.max_requests_per_job={}", requests.max(1)),
        format!("online.concurrency={concurrency}"),
    ])
}

/// `requests` authoring requests, each with a 4,000-character message as real prompts have.
fn filled_requests(requests: usize) -> Vec<Request> {
    let filler = "x".repeat(4000);
    (0..requests)
        .map(|i| {
            let r = synth::author_request(i).request;
            let mut body = r.body().clone();
            body["messages"][0]["content"] = json!(format!("{filler} {i}"));
            Request::new(r.custom_id, body)
        })
        .collect()
}

fn run_online(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    dir: &Path,
    batch: &[Request],
) -> BenchResult<saseval_gen::runner::JobResult> {
    let run = fresh(dir)?;
    let printer = Printer { quiet: true };
    let guard = CostGuard::new(f64::INFINITY, "author.max_cost_usd", 0.0);
    runtime
        .block_on(async {
            let mut runner = Runner::open(config, &run, RunOptions::default(), &printer)?;
            runner.run("bench", batch, &guard).await
        })
        .map_err(err("online runner"))
}

/// The name of the fake online server's thread (`fake-online-<port>`).
fn fake_thread_name(fake: &FakeOnline) -> String {
    let port = fake.base_url();
    let port = port
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("");
    format!("fake-online-{port}")
}

/// CPU seconds a server thread of a fake has used, from /proc (its thread name starts with
/// `name`, as Linux shortens it to 15 bytes), so that the runner's own CPU can be told apart
/// from the fake's.
fn thread_cpu_s(name: &str) -> BenchResult<f64> {
    let name: String = name.chars().take(15).collect();
    // SAFETY: sysconf only reads a system constant.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    for task in std::fs::read_dir("/proc/self/task").map_err(err("/proc/self/task"))? {
        let task = task.map_err(err("/proc/self/task"))?.path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if !comm.starts_with(&name) {
            continue;
        }
        let stat = std::fs::read_to_string(task.join("stat")).map_err(err("thread stat"))?;
        let after_name = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let tick = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // Fields after the name start at `state` (field 3): utime is field 14, stime 15.
        return Ok((tick(11) + tick(12)) / ticks_per_s);
    }
    Err(format!("no thread named {name} under /proc/self/task"))
}

/// `saseval-gen assemble` in-process on `candidates.jsonl` as the repaired items (no audit panel:
/// the case measures assemble alone).
fn assemble(dir: &Path) -> BenchResult<Value> {
    use clap::Parser;
    let run = fresh(dir)?;
    std::fs::copy(dir.join("candidates.jsonl"), run.join("repaired.jsonl"))
        .map_err(err("copying the candidates"))?;
    let input_mb = std::fs::metadata(run.join("repaired.jsonl"))
        .map_err(err("candidates"))?
        .len() as f64
        / 1e6;
    let cli = saseval_gen::cli::Cli::parse_from([
        "saseval-gen".as_ref(),
        "--config".as_ref(),
        crate_root().join("pipeline.toml").as_os_str(),
        "--out".as_ref(),
        run.as_os_str(),
        "--quiet".as_ref(),
        "--set".as_ref(),
        "release.date=2026-11-29".as_ref(),
        "--set".as_ref(),
        "audit.models=[]".as_ref(),
        "assemble".as_ref(),
    ]);
    let printer = Printer { quiet: true };
    let runtime = tokio::runtime::Runtime::new().map_err(err("runtime"))?;
    let cpu_before = process_cpu_s();
    let started = Instant::now();
    runtime
        .block_on(saseval_gen::app::run(cli, &printer))
        .map_err(|e| format!("assemble: {e:#}"))?;
    let stage_s = started.elapsed().as_secs_f64();
    let stage_cpu_s = process_cpu_s() - cpu_before;
    let released = count_lines(&run.join("saseval_v2_prompts.jsonl")).unwrap_or(0);
    let rejects = std::fs::read_to_string(run.join("rejects.jsonl")).unwrap_or_default();
    let duplicates = rejects
        .lines()
        .filter(|l| l.contains("\"reason\":\"duplicate_"))
        .count();
    Ok(json!({
        STAGE_KEY: stage_s,
        "stage_cpu_s": stage_cpu_s,
        "input_mb": input_mb,
        "released": released,
        "duplicates": duplicates,
    }))
}

fn count_lines(path: &Path) -> Option<usize> {
    Some(std::fs::read_to_string(path).ok()?.lines().count())
}

/// Exact all-pairs and MinHash LSH on the same prompts: time of each and how their survivors agree.
fn dedup_agreement(dir: &Path) -> BenchResult<Value> {
    let candidates: Vec<Candidate> =
        jsonl::read(&dir.join("candidates.jsonl")).map_err(err("candidates"))?;
    let prompts: Vec<&str> = candidates.iter().map(|c| c.prompt.as_str()).collect();
    let timed = |method: Method| -> BenchResult<(Duration, Vec<bool>)> {
        let started = Instant::now();
        let dropped = dedup::find_duplicates(
            &prompts,
            &[],
            &DedupConfig {
                method,
                ..DedupConfig::default()
            },
        )
        .map_err(err("dedup"))?;
        let mut survives = vec![true; prompts.len()];
        for d in dropped {
            survives[d.index] = false;
        }
        Ok((started.elapsed(), survives))
    };
    let (all_pairs, exact) = timed(Method::AllPairs)?;
    let (lsh, sketched) = timed(Method::MinHashLsh)?;
    let both = |a: bool, b: bool| {
        exact
            .iter()
            .zip(&sketched)
            .filter(|(x, y)| **x == a && **y == b)
            .count()
    };
    Ok(json!({
        "all_pairs_s": all_pairs.as_secs_f64(),
        "lsh_s": lsh.as_secs_f64(),
        "survive_both": both(true, true),
        "survive_all_pairs_only": both(true, false),
        "survive_min_hash_only": both(false, true),
        "dropped_both": both(false, false),
    }))
}
