#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each (default 4 s;
# the first argument changes it), so CI explores beyond the seed corpora
# without costing more than a few minutes. Targets are found by name: a new
# `func FuzzX` in a _test.go file is picked up by itself. A failure leaves
# its input under the package's testdata/fuzz/ (commit it as a regression
# seed once fixed).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-4s}"
failed=0
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "== fuzz $pkg $name ($fuzztime)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
    failed=1
  fi
done < <(grep -rhoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . --with-filename \
           | sed -E 's/^\.\///; s/:func /:/' | sort -u)
exit "$failed"
