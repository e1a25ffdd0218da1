#!/usr/bin/env bash
# The main job on a fresh machine: installs what the build needs, fetches the bundled models,
# builds saseval-gen, runs the whole pipeline (author → repair → audit → assemble) offline on the local
# model, and verifies the release it wrote to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
SASEVAL_SKIP_PYTHON=1 SASEVAL_MODEL_PROFILE=local scripts/setup.sh
cargo build --release
bin=target/release/saseval-gen
"$bin" --config pipeline.local.toml run
"$bin" --config pipeline.local.toml verify out
