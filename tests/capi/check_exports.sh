#!/usr/bin/env bash
# libcarton_c.so exports exactly the functions carton/c/carton.h declares:
# no other symbol (none of the C++ of the static libraries linked into it),
# and none missing.
#   check_exports.sh LIBRARY HEADER C_COMPILER
set -euo pipefail
lib="$1" header="$2" cc="$3"

exported="$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)"
# The header's declarations, comments stripped by the preprocessor.
declared="$("$cc" -E -P -x c "$header" | grep -oE '\bcarton_[a-z0-9_]+[[:space:]]*\(' |
  tr -d '( \t' | sort -u)"

status=0
other="$(grep -v '^carton_' <<<"$exported" || true)"
if [ -n "$other" ]; then
  echo "check_exports: $lib exports symbols that are not carton_*:" >&2
  sed 's/^/  /' <<<"$other" >&2
  status=1
fi
undeclared="$(comm -23 <(grep '^carton_' <<<"$exported" || true) <(echo "$declared"))"
if [ -n "$undeclared" ]; then
  echo "check_exports: exported but not declared in $header:" >&2
  sed 's/^/  /' <<<"$undeclared" >&2
  status=1
fi
missing="$(comm -13 <(echo "$exported") <(echo "$declared"))"
if [ -n "$missing" ]; then
  echo "check_exports: declared in $header but not exported:" >&2
  sed 's/^/  /' <<<"$missing" >&2
  status=1
fi
[ "$status" = 0 ] && echo "check_exports: $(wc -l <<<"$declared") carton_* functions, nothing else"
exit "$status"
