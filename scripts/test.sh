#!/usr/bin/env bash
# The project's tests: vet, every package under the race detector, then each
# fuzz target for a few seconds. CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-5s}

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -timeout 6m ./...

echo "== node --test (the page's JavaScript reducer against the protocol vectors)"
node --test internal/web/jstest/

echo "== load check: sessions streaming over WebSocket through a real sluice serve"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/sluice" ./cmd/sluice
go run ./internal/web/cmd/loadcheck -sluice "$bin/sluice" -sessions 20

echo "== fuzz (${fuzztime} each)"
# Every Fuzz* function of the module, found rather than listed, so that a new
# target runs without editing this file.
go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
  grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u |
  while read -r target; do
    echo "-- $pkg $target"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
  done
done
echo "== ok"
