#!/usr/bin/env bash
# Installs what building and testing saseval-gen needs on a fresh Debian/Ubuntu machine:
# cmake and libclang (the llama.cpp build of the local backend), the bundled models, Chromium (the
# release report is rendered in it headless), the Python `datasets` and `mlcroissant` libraries
# (the release loader checks), and llama.cpp's OpenAI-compatible server from llama-cpp-python
# (the online backend's real-server test). Safe to re-run: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || need_apt+=(libclang-dev)
command -v sha256sum >/dev/null 2>&1 || need_apt+=(coreutils)
# The TLS and read-only-dir tests run a python3 HTTPS server with an openssl certificate and
# drop root privileges with setpriv.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
# The report test renders report.html in headless Chromium (Debian's package, no browser download)
# with a font for its text.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need_apt+=(fonts-dejavu-core)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The bundled models: the test model (SmolLM2-135M) by default; SASEVAL_MODEL_PROFILE=local fetches
# the 1.6 GB that pipeline.local.toml runs instead (scripts/run-local.sh sets it), =all both.
scripts/fetch-model.sh --profile "${SASEVAL_MODEL_PROFILE:-test}"

if [ "${SASEVAL_SKIP_PYTHON:-0}" != 1 ] && ! python3 -c 'import datasets' >/dev/null 2>&1; then
  echo "setup: installing the Python datasets library (for the release loader check)"
  python3 -m pip install --quiet --disable-pip-version-check datasets
fi
if [ "${SASEVAL_SKIP_PYTHON:-0}" != 1 ] && ! python3 -c 'import mlcroissant' >/dev/null 2>&1; then
  echo "setup: installing the Python mlcroissant library (for the Croissant check)"
  python3 -m pip install --quiet --disable-pip-version-check mlcroissant
fi
# The online backend's real-server test runs `python3 -m llama_cpp.server` on the bundled model.
# PyPI's package is a source package: pip builds llama.cpp with cmake and the compiler installed
# above: about 5 minutes on the 2-core machine (17 while other builds ran); the multimodal
# library is not built.
if [ "${SASEVAL_SKIP_PYTHON:-0}" != 1 ] && ! python3 -c 'import llama_cpp.server' >/dev/null 2>&1; then
  echo "setup: building llama-cpp-python's server from its source package (for the online backend's real-server test; several minutes)"
  CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    python3 -m pip install --quiet --disable-pip-version-check --no-binary llama-cpp-python \
    'llama-cpp-python[server]==0.3.36'
fi
