#!/usr/bin/env bash
# Style rules the build cannot enforce, checked on every C++ file git tracks
# or would add (untracked and not ignored):
#   1. clang-format (the repository's .clang-format) leaves the file unchanged;
#   2. in a library, a quoted include is either a public header
#      ("carton/<module>/x.h") or a private header that sits beside the
#      including file, so no target reaches into another target's src/
#      folder; tests, benchmarks and fuzz targets may also include their own
#      helpers (under tests/, bench/, fuzz/), never a module's private header;
#   3. no function of the libraries, the tools, the runners or the examples is
#      longer than 60 lines (scripts/function_lengths.py; tests, benchmarks and
#      fuzz targets are exempt: a test case reads as one story);
#   4. the Python code (the package, its tests, benchmarks, scripts and
#      examples) passes Debian's flake8 with the repository's .flake8.
# Exit 0 when clean; 1 and each violation otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' |
  grep -v '^tests/compat/rust_peer/' | sort -u | while IFS= read -r f; do [[ -f "$f" ]] && echo "$f"; done)

clang_format="${CLANG_FORMAT:-clang-format}"
if ! command -v "$clang_format" >/dev/null; then
  echo "check-style: $clang_format not found (apt-get install clang-format)" >&2
  exit 2
fi
if ! "$clang_format" --dry-run -Werror "${files[@]}" 2>/tmp/check-style.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/check-style.$$ | cut -d: -f1 | sort -u |
    sed 's/^/check-style: not clang-formatted: /'
  status=1
fi
rm -f /tmp/check-style.$$

for f in "${files[@]}"; do
  dir="$(dirname "$f")"
  while IFS= read -r inc; do
    case "$inc" in
      carton/*) ;;  # a public header, resolved through the target's interface
      *)
        found=0
        [[ "$inc" != */* && -f "$dir/$inc" ]] && found=1
        case "$f" in
          tests/*|bench/*|fuzz/*)
            for base in tests bench fuzz "$dir"; do
              [[ -f "$base/$inc" && "$inc" != *src/* ]] && found=1
            done ;;
        esac
        if [ "$found" = 0 ]; then
          echo "check-style: $f includes \"$inc\", which is not a public header nor beside it"
          status=1
        fi ;;
    esac
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done

mapfile -t library < <(printf '%s\n' "${files[@]}" | grep -v '^tests/\|^bench/\|^fuzz/')
if ! long=$(python3 scripts/function_lengths.py --max-function 60 "${library[@]}"); then
  printf '%s\n' "$long" | sed 's/^/check-style: /'
  status=1
fi

if ! command -v flake8 >/dev/null; then
  echo "check-style: flake8 not found (apt-get install flake8)" >&2
  exit 2
fi
if ! lint=$(flake8 python tests/python bench scripts examples); then
  printf '%s\n' "$lint" | sed 's/^/check-style: flake8: /'
  status=1
fi

exit "$status"
