#!/usr/bin/env bash
# examples/c/infer.c, built against a `cmake --install` of the build tree
# into a temporary prefix through pkg-config only, writes the same bytes as
# `carton infer` for the same carton and inputs, and fails with the
# library's message on a bad input.
#   example_test.sh BUILD_DIR SOURCE_DIR CARTON_CLI CAPI_TESTS
set -euo pipefail
build="$1" src="$2" cli="$3" capi_tests="$4"

base="${CARTON_TEST_TMP:-/tmp}"
mkdir -p "$base"
tmp="$(mktemp -d "$base/capi-example-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# The C API's files only (the component capi: library, header, pkg-config).
cmake --install "$build" --prefix "$tmp/prefix" --component capi >/dev/null
test -f "$tmp/prefix/include/carton/c/carton.h"
test -f "$tmp/prefix/lib/pkgconfig/carton-c.pc"

mkdir "$tmp/example"
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" \
  make -s -C "$tmp/example" -f "$src/examples/c/Makefile" CFLAGS="-O1 -g -Werror"
example="$tmp/example/infer"
# It links the installed library, and nothing of carton statically.
readelf -d "$example" | grep 'NEEDED.*libcarton_c\.so\.' >/dev/null
if nm "$example" | grep '_ZN6carton' >/dev/null; then
  echo "example_test: the example holds carton's C++ code" >&2
  exit 1
fi

"$capi_tests" --make-fixture "$tmp/fixture"
fx="$tmp/fixture"
export CARTON_RUNNER_PATH="$build/runners/noop"
export CARTON_CACHE_DIR="$tmp/cache"
inputs=("x=$fx/x.safetensors" "labels=$fx/multi.safetensors:labels")

"$cli" infer -q "$fx/echo.carton" --input "${inputs[0]}" --input "${inputs[1]}" \
  --output "$tmp/cli.safetensors"
"$example" "$fx/echo.carton" "$tmp/c.safetensors" "${inputs[@]}" 2>"$tmp/stderr"
cmp "$tmp/cli.safetensors" "$tmp/c.safetensors"
grep -q '^output x: float32 \[2, 4\]$' "$tmp/stderr"
echo "example_test: $(wc -c <"$tmp/c.safetensors") bytes, identical to carton infer's"

# A wrong input: exit 1, the message names the carton and the input.
if "$example" "$fx/echo.carton" "$tmp/bad.safetensors" "x=$fx/multi.safetensors:w" \
  "${inputs[1]}" 2>"$tmp/stderr"; then
  echo "example_test: a wrong input dtype was accepted" >&2
  exit 1
fi
grep -q 'echo.carton: input "x"' "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
test ! -e "$tmp/bad.safetensors"
# A missing carton.
if "$example" "$tmp/missing.carton" "$tmp/bad.safetensors" "${inputs[@]}" 2>"$tmp/stderr"; then
  exit 1
fi
grep -q 'missing.carton' "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
