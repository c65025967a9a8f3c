#!/usr/bin/env bash
# The project's tests: every package under the race detector, the page's
# JavaScript reducer, a load check, then each fuzz target for a few seconds.
# CI (.ci/run) runs exactly this. (go vet runs before each commit; on a cold
# build cache it would add minutes here for no test.)
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-4s}
start=$SECONDS
phase() { echo "== $* (at $((SECONDS - start))s)"; }

phase go test -race
go test -race -timeout 6m ./...

phase "node --test (the page's JavaScript reducer against the protocol vectors)"
node --test internal/web/jstest/

phase "load check: sessions streaming over WebSocket through a real sluice serve"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/sluice" ./cmd/sluice
go run ./internal/web/cmd/loadcheck -sluice "$bin/sluice" -sessions 20

phase "fuzz (${fuzztime} each)"
# Every Fuzz* function of the module, found rather than listed, so that a new
# target runs without editing this file.
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed 's/:func / /' | sort -u)
[ -n "$targets" ] || { echo "no fuzz targets found" >&2; exit 1; }
while read -r file target; do
  pkg=./$(dirname "${file#./}")
  echo "-- $pkg $target"
  go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg"
done <<<"$targets"
phase ok
