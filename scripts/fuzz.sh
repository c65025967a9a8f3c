#!/usr/bin/env bash
# Every fuzz target, FUZZEXECS executions each (default 5,000; 100000 for
# a longer run). The tests (scripts/test.sh) run each target's seed corpus
# under -race; this explores beyond it, with go test's fuzz cache, so a
# finding is kept in the package's testdata/fuzz by go test as usual.
#
# Budgets are execution counts, not durations: Go 1.26's coordinator can
# fail a target with a bare "context deadline exceeded" at a -fuzztime
# duration's end when its workers are starved (golang/go#75804, fixed in
# Go 1.27). A count sets no deadline, so only a real finding fails the run,
# and the work done does not depend on how loaded the machine is.
#
#	./scripts/fuzz.sh                       # every target
#	./scripts/fuzz.sh ./internal/sse ./wire # the targets of these packages
set -euo pipefail
cd "$(dirname "$0")/.."
fuzzexecs=${FUZZEXECS:-5000}

# The targets, found rather than listed, so that a new one runs without
# editing this file.
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' "${@:-.}" | sed 's/:func / /' | sort -u)
[ -n "$targets" ] || { echo "no fuzz targets found" >&2; exit 1; }

# Each package's fuzz test binary is linked once and run once per target
# (a go test -fuzz per target would link it again every time), in the
# package's directory (testdata/fuzz holds the seed corpus), with the flags
# go test would give it and the fuzz cache where go test keeps it.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
fuzzcache=$(go env GOCACHE)/fuzz
n=$(wc -l <<<"$targets")
i=0
while read -r file target; do
  i=$((i + 1))
  pkg=./$(dirname "${file#./}")
  test=$bin/$(tr / _ <<<"${pkg#./}").test
  [ -x "$test" ] || go test -c -ldflags=-w -fuzz=. -o "$test" "$pkg"
  echo "-- [$i/$n] $pkg $target"
  (cd "$pkg" && "$test" -test.paniconexit0 -test.timeout=10m -test.run='^$' \
    -test.fuzz="^${target}\$" -test.fuzztime="${fuzzexecs}x" -test.fuzzcachedir="$fuzzcache/$(go list "$pkg")")
done <<<"$targets"
echo "fuzz: $n targets, ${fuzzexecs} executions each, no finding"
