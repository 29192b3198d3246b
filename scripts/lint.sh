#!/usr/bin/env bash
# The tree's habits, checked: every C++ file formatted by .clang-format, and
# the Python (packages, tests, benchmarks, scripts) free of pyflakes' findings
# (flake8 --select=F: pyflakes, honouring "# noqa: F401" where an import is
# the point). Exits non-zero naming each file that fails.
#   scripts/lint.sh          check the whole tree
#   scripts/lint.sh --fix    reformat the C++ files in place
set -euo pipefail
cd "$(dirname "$0")/.."

cxx=$(git ls-files '*.cc' '*.h' '*.c' '*.cpp' | grep -v '^tests/fixtures/' || true)
py=$(git ls-files '*.py' | grep -v '^tests/fixtures/' || true)

if [ "${1:-}" = --fix ]; then
  # shellcheck disable=SC2086
  clang-format -i $cxx
  exit 0
fi

status=0
# shellcheck disable=SC2086
if ! clang-format --dry-run -Werror $cxx; then
  echo "lint: the files above are not formatted (scripts/lint.sh --fix)" >&2
  status=1
fi
# shellcheck disable=SC2086
if ! /usr/bin/python3 -m flake8 --select=F $py; then
  echo "lint: pyflakes findings above" >&2
  status=1
fi
[ "$status" = 0 ] && echo "lint: $(wc -w <<<"$cxx") C++ files formatted, $(wc -w <<<"$py") Python files clean"
exit "$status"
