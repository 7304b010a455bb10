#!/usr/bin/env bash
# Checks the module and its dependencies against the Go vulnerability
# database with govulncheck (run through `go run` at a pinned version, so
# nothing is installed). It needs the database: https://vuln.go.dev, or a
# mirror or local copy given as FERRY_VULNDB (a URL, file:// included).
# Where the database cannot be reached (an offline build machine) the
# check is skipped with a message saying so, and the script succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v1.9.0
db="${FERRY_VULNDB:-https://vuln.go.dev}"
if [[ "$db" == http* ]] && ! curl -fsS --max-time 15 -o /dev/null "$db/index/db.json" 2>/dev/null; then
  echo "govulncheck: SKIPPED: the vulnerability database at $db cannot be reached from this machine;"
  echo "  run scripts/vulncheck.sh where it can, or set FERRY_VULNDB to a mirror or a local copy (file:///path)."
  exit 0
fi
go run "golang.org/x/vuln/cmd/govulncheck@$version" -db "$db" ./...
