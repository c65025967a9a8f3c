#!/usr/bin/env bash
# The project's tests: the quality gates (gofmt, go vet, staticcheck pinned
# as a module tool), every package under the race detector (each fuzz
# target's seed corpus included), the page's JavaScript reducer, the real
# clients, a load check. CI (.ci/run) runs exactly this.
#
# Fuzzing itself is scripts/fuzz.sh: its coverage-instrumented build of
# the whole dependency graph cost ~420 s of CPU on a cold cache, more than
# CI's 15 minutes on 2 cores could hold beside the race build.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
phase() { echo "== $* (at $((SECONDS - start))s)"; }

# One build of the binary for every test that runs it (package testbin),
# built as a release is (scripts/build.sh: static, CGO_ENABLED=0).
bin=$(mktemp -d)
# On exit, every background job is stopped with its children, parent first
# (the crosscheck's go run and the npm installs start processes of their
# own, which would otherwise outlive a failed run).
killtree() { local c cs; cs=$(cat /proc/"$1"/task/*/children 2>/dev/null || true); kill "$1" 2>/dev/null || true; for c in $cs; do killtree "$c"; done; }
trap 'for j in $(jobs -p); do killtree "$j"; done; rm -rf "$bin"' EXIT
phase scripts/build.sh
./scripts/build.sh "$bin/sluice"
export SLUICE_BIN="$bin/sluice"

# The real clients' npm packages, pinned by their lock files, install
# while the race tests run: the installs mostly wait on the registry (the
# AI SDK suite's alone took minutes). The clients' optional native Claude
# Code binaries are not needed (sluice stands in for them) and are left out.
declare -A npmjob
for suite in sdktest acpadaptertest aisdktest; do
  npm ci --prefix "internal/printmode/$suite" --omit=optional --no-audit --no-fund --loglevel=error >"$bin/npm-$suite.out" 2>&1 &
  npmjob[$suite]=$!
done
npmdone() { wait "${npmjob[$1]}" || { cat "$bin/npm-$1.out" >&2; echo "npm ci of $1 failed" >&2; exit 1; }; }

# While the race tests run they leave a core idle for long stretches
# (waiting on terminals, servers and child processes). At the lowest
# priority, the darwin type-check uses it; its phase then finds it done.
(nice -n 19 go run ./internal/crosscheck darwin/arm64 >"$bin/crosscheck.out" 2>&1) &
crosscheck=$!

# -ldflags=-w: test binaries without DWARF (a debugger's tables; stack
# traces do not use them) link with about 30% less CPU; a run links ~48
# of them (several with an embedded NATS server) and one per fuzz target.
phase go test -race
go test -race -ldflags=-w -timeout 12m ./...

# After the tests, with -race like them, go vet and staticcheck reuse the
# packages the tests compiled instead of compiling the module a second time
# (on a cold cache that second build cost minutes); what is left is their
# analysis and building staticcheck itself.
phase "gofmt -l, go vet, staticcheck, crosscheck darwin"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "gofmt -l lists files to format:" >&2; echo "$unformatted" >&2; exit 1; }
go vet -race ./...
GOFLAGS=-race go tool staticcheck ./...
# macOS: the module and its tests type-check for darwin (no Linux-only code
# without a counterpart), from source and without compiling for darwin
# (started before the race tests, above).
crosscheck_rc=0
wait "$crosscheck" || crosscheck_rc=$?
cat "$bin/crosscheck.out"
[ "$crosscheck_rc" -eq 0 ] || { echo "crosscheck darwin/arm64 failed" >&2; exit 1; }

phase "node --test (the page's JavaScript reducer against the protocol vectors)"
node --test internal/web/jstest/

phase "the official Claude Agent SDK driving sluice (internal/printmode/sdktest)"
npmdone sdktest
node --test internal/printmode/sdktest/
phase "Zed's ACP adapter over sluice, the ACP TypeScript SDK as its editor (internal/printmode/acpadaptertest)"
npmdone acpadaptertest
node --test internal/printmode/acpadaptertest/
phase "the AI SDK's Claude Code provider driving sluice (internal/printmode/aisdktest)"
npmdone aisdktest
node --test internal/printmode/aisdktest/

phase "load check: sessions streaming over WebSocket through a real sluice serve"
# CGO_ENABLED=0 like the binary: the packages it shares with it are built once.
CGO_ENABLED=0 go run ./internal/web/cmd/loadcheck -sluice "$SLUICE_BIN" -sessions 20

phase ok
