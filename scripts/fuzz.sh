#!/usr/bin/env bash
# Runs one libFuzzer target for a given time, building the fuzz tree first
# if needed (clang-14 with ASan + UBSan, in ${FUZZ_BUILD_DIR:-build-fuzz}).
#   bash scripts/fuzz.sh TARGET SECONDS [extra libFuzzer flags...]
#   bash scripts/fuzz.sh list
#   bash scripts/fuzz.sh smoke   # builds every target, runs each on its seeds once (CI)
# Targets: safetensors config tensor_index manifest links zip zip_source carton slice
# registry_text oci_artifact modelpack_layer bundle.
# The corpus grows in build-fuzz/corpus/TARGET (seeded from carton's own
# writers by carton_fuzz_seeds, and from the inputs kept in tests/hostile/);
# crashing inputs land in
# build-fuzz/artifacts/TARGET/ and the run's log in build-fuzz/logs/TARGET.log.
# One job, one worker: the whole run stays on one core.
set -euo pipefail
cd "$(dirname "$0")/.."
targets="safetensors config tensor_index manifest links zip zip_source carton slice registry_text oci_artifact modelpack_layer bundle"
if [ "${1:-}" = "list" ]; then echo "$targets"; exit 0; fi
smoke=0
if [ "${1:-}" = "smoke" ]; then
  smoke=1
elif [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...] (targets: $targets)" >&2
  exit 2
else
  target=$1 seconds=$2
  shift 2
  case " $targets " in *" $target "*) ;; *) echo "unknown target: $target" >&2; exit 2 ;; esac
fi

build="${FUZZ_BUILD_DIR:-build-fuzz}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  bash scripts/install-deps.sh --fuzz
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARTON_BUILD_FUZZ=ON \
    -DCARTON_BUILD_TESTS=OFF -DCARTON_BUILD_BENCH=OFF
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# write_seeds DIR TARGET...: DIR/<target>/ holds valid inputs made by
# carton's own writers (carton_fuzz_seeds) plus the inputs kept under
# tests/hostile: the known-bad corpus of the target and the regressions that
# once broke it.
write_seeds() {
  local dir=$1 t f
  shift
  rm -rf "$dir"
  "$build/fuzz/carton_fuzz_seeds" "$dir"
  for t in "$@"; do
    if [ ! -d "$dir/$t" ] || [ -z "$(ls -A "$dir/$t")" ]; then
      echo "fuzz: carton_fuzz_seeds wrote no seeds for $t" >&2
      exit 1
    fi
    for f in tests/hostile/known_bad/"$t"/* tests/hostile/regressions/"$t"-*; do
      if [ -f "$f" ]; then cp "$f" "$dir/$t/"; fi
    done
  done
}

if [ "$smoke" = 1 ]; then
  # The fuzz tree builds (clang, every library instrumented), the seed
  # generator writes valid inputs, and every target takes its seeds, the
  # known-bad inputs and the regressions without a finding. No mutation:
  # the outcome does not depend on chance.
  fuzz_bins=()
  for t in $targets; do fuzz_bins+=("fuzz_$t"); done
  cmake --build "$build" --parallel "$(nproc)" --target "${fuzz_bins[@]}" carton_fuzz_seeds
  seeds="$build/seeds/smoke"
  # shellcheck disable=SC2086  # $targets is a list of words
  write_seeds "$seeds" $targets
  mkdir -p "$build/artifacts/smoke"
  for t in $targets; do
    "$build/fuzz/fuzz_$t" -runs=0 -artifact_prefix="$build/artifacts/smoke/$t-" "$seeds/$t" \
      >"$build/smoke-$t.log" 2>&1 || {
      cat "$build/smoke-$t.log" >&2
      echo "fuzz smoke: $t failed on its inputs" >&2
      exit 1
    }
    echo "fuzz smoke: $t: $(ls "$seeds/$t" | wc -l) inputs, no finding"
  done
  exit 0
fi
cmake --build "$build" --parallel "$(nproc)" --target "fuzz_$target" carton_fuzz_seeds

# Seeds are written per run of this script, so that runs can overlap.
seeds="$build/seeds/for-$target" corpus="$build/corpus/$target" artifacts="$build/artifacts/$target"
write_seeds "$seeds" "$target"
mkdir -p "$corpus" "$artifacts" "$build/logs"
log="$build/logs/$target.log"
# The run stops at the first finding (kept in $artifacts). With -jobs the
# worker writes fuzz-0.log into its working directory, so each target runs
# in a directory of its own and several targets can run at once.
work="$build/work/$target"
mkdir -p "$work"
abs() { (cd "$1" && pwd); }
bin="$(abs "$build/fuzz")/fuzz_$target"
corpus=$(abs "$corpus") artifacts=$(abs "$artifacts") seed_dir=$(abs "$seeds/$target")
rm -f "$work/fuzz-0.log"
status=0
(cd "$work" && "$bin" "$corpus" "$seed_dir" \
  -max_total_time="$seconds" -jobs=1 -workers=1 -print_final_stats=1 \
  -timeout=25 -rss_limit_mb=2560 -max_len=1048576 \
  -artifact_prefix="$artifacts/" "$@") >"$log" 2>&1 || status=$?
if [ -f "$work/fuzz-0.log" ]; then cat "$work/fuzz-0.log" >>"$log"; fi
grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -1 || true
grep -E 'stat::|SUMMARY|ERROR|invariant' "$log" || true
ls "$artifacts"
exit "$status"
