#!/usr/bin/env bash
# Runs the benchmark suite on this machine and prints the tables BENCHMARKS.md records:
#   scale        — parse + validate a 50,000-line output file, the runner against a zero-latency
#                  fake, the online backend's own CPU against one (10,000 requests at
#                  concurrency 64) and its limiter against a fake that answers 429 above a
#                  rate it does not tell, assemble at 10k/100k/1M candidates and on 1M of the 100k file's
#                  duplicate density, all-pairs vs MinHash LSH agreement
#                  (each case in its own process: wall time and peak RSS)
#   local_speed  — the local backend's tokens/s beside llama.cpp's own decode loop, and parallel
#                  decoding (--parallel 4) beside one sequence and llama.cpp's batched decoding
#   throughput   — criterion per-item timings with their spread
#   side by side — assemble beside the Python reference (benches/reference/assemble.py) on the
#                  scale case's candidate files, in the same run (benches/side_by_side.py)
# Usage: scripts/bench.sh [--quick]   (--quick skips the 1M-candidate assembles and shortens runs)
# Results: target/bench/{scale.json,local.json,assemble-scale.svg,side-by-side-N.json} and
# target/criterion/.
# Benchmarks never run under `cargo test`; nothing here asserts a timing.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)

SASEVAL_SKIP_PYTHON=1 scripts/setup.sh

echo "## Machine"
echo
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "- memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
echo "- load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- $(rustc --version), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo

echo "## Scale (each case in a fresh process)"
echo
cargo bench --quiet --bench scale -- "${quick[@]}"
echo

echo "## Local backend against llama.cpp"
echo
cargo bench --quiet --bench local_speed -- "${quick[@]}"
echo

echo "## Parallel decoding (4 sequences) against one, and against llama.cpp's batched decoding"
echo
# The main job's author model, when fetched (scripts/fetch-model.sh --profile local); else the test model.
parallel_model=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
[ -f "$parallel_model" ] || parallel_model=models/SmolLM2-135M-Instruct.Q4_1.gguf
SASEVAL_TEST_MODEL="$parallel_model" cargo bench --quiet --bench local_speed -- --parallel 4 "${quick[@]}"
echo

echo "## Per-item timings (criterion)"
echo
# (lines with % compare with an earlier run's baseline; the table wants the figures themselves)
cargo bench --quiet --bench throughput 2>&1 | grep -E '^[a-z_0-9]+/|time:|thrpt:' | grep -v '%' || true
echo

echo "## Assemble beside the Python reference (same candidate files, one after the other)"
echo
python3 -m pip install --quiet --disable-pip-version-check -r benches/reference/requirements.txt
cargo build --release --quiet
sizes=(10000 100000 1000000)
[ ${#quick[@]} -gt 0 ] && sizes=(10000 100000)
for n in "${sizes[@]}"; do
  python3 benches/side_by_side.py "target/bench/work/candidates-$n/candidates.jsonl" \
    --json "target/bench/side-by-side-$n.json"
done
