#!/usr/bin/env bash
# Installs every build and test dependency of carton from Debian 12 packages.
# Run as root on a fresh machine. Nothing is downloaded at build time.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libzip-dev zipcmp zipmerge ziptool
  libzstd-dev zstd
  libisal-dev
  libbrotli-dev
  libtomlplusplus-dev
  nlohmann-json3-dev
  libsimdjson-dev
  libssl-dev openssl
  libcurl4-openssl-dev
  libcli11-dev
  catch2
  python3 zip unzip libarchive-tools
  # The Python runner (and the demo's model): CPython's headers and
  # libpython, numpy, pybind11.
  python3-dev python3-numpy pybind11-dev
)

for arg in "$@"; do
  case "$arg" in
    # Peers used by the test suite: servers and other zip tools; clang-format
    # for scripts/check-style.sh (and flake8, its Python lint); libtorch for
    # the TorchScript runner and its tests (the runner is only built when it
    # is found); cargo and the crates of the Rust peer (tests/compat), built
    # offline from Debian's registry; pytest for the Python package's tests,
    # and Debian's torch for their torch paths (skipped without it);
    # docker-registry and apache2-utils (htpasswd) for the OCI tests;
    # python3-jsonschema to check signatures against the OMS JSON schemas
    # (tests/sign; the second verifier there, @sigstore/verify, needs a
    # node >= 20.17 and npm on PATH, which Debian 12 lacks: skipped without).
    --test) packages+=(clang-format flake8 nginx-light brotli curl libtorch-dev python3-jsonschema
                       docker-registry apache2-utils
                       cargo librust-zip-dev librust-toml-dev librust-sha2-dev
                       librust-serde-dev librust-serde-derive-dev librust-semver-dev
                       librust-target-lexicon-dev python3-pytest python3-torch
                       python3-sklearn) ;;
    # The demo's main job: a digits classifier trained with torch on
    # scikit-learn's bundled digits, run by the TorchScript runner.
    --demo) packages+=(python3-sklearn python3-torch libtorch-dev) ;;
    # libFuzzer and the sanitizer runtimes for scripts/fuzz.sh.
    --fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
