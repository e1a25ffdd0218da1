#!/usr/bin/env bash
# The test command: installs what a fresh machine lacks, then runs every test, including a
# small real job on the bundled local model, the whole pipeline against llama.cpp's server on
# that model, and the Hugging Face `datasets` loader check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export SASEVAL_TEST_MODEL="$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf"
export SASEVAL_REQUIRE_DATASETS=1
export SASEVAL_REQUIRE_LLAMA_SERVER=1
# A one-shot build gains nothing from incremental state, which would take 1.4 GB of disk.
export CARGO_INCREMENTAL=0
cargo test
# The benchmarks run only from scripts/bench.sh (never timed here), but must keep compiling.
cargo build --benches --quiet
# The lints are part of the build: a warning anywhere (tests and benches included) fails it.
cargo clippy --all-targets --quiet -- -D warnings
