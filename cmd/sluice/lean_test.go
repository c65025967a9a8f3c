package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testbin"
)

// heavyInit names packages whose initialisation every command of the
// binary paid before the TUI stopped linking Glamour: chroma's lexer and
// style registries parse hundreds of embedded XML files (3.9 MB, ~20 ms),
// bluemonday and its CSS tables 0.8 MB.
var heavyInit = []string{
	"github.com/alecthomas/chroma/v2/lexers",
	"github.com/alecthomas/chroma/v2/styles",
	"github.com/alecthomas/chroma/v2/formatters",
	"github.com/alecthomas/chroma/v2/quick",
	"charm.land/glamour/v2",
	"github.com/microcosm-cc/bluemonday",
}

// initBudget bounds what package initialisation may allocate in all: 1.7
// MB when this was written (goldmark's tables the largest part), 6.9 MB
// with Glamour linked.
const initBudget = 3 << 20

// TestLeanStart fails when a package with a costly init comes back into
// the binary, which runs every linked package's init for every command:
// by name (go list) and by what `sluice --version` allocates at init
// (GODEBUG=inittrace=1).
func TestLeanStart(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/sluicehq/sluice/cmd/sluice").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	for _, p := range heavyInit {
		if deps[p] {
			t.Errorf("cmd/sluice links %s, whose init every command pays", p)
		}
	}

	cmd := exec.Command(testbin.Sluice(t), "--version")
	cmd.Env = []string{"GODEBUG=inittrace=1", "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice --version: %v\n%s", err, stderr.String())
	}
	total, n, largest, largestPkg := traceBytes(t, stderr.String())
	if n == 0 {
		t.Fatalf("no init trace in:\n%s", stderr.String())
	}
	if total > initBudget {
		t.Errorf("package init allocates %d bytes in %d packages (budget %d); largest: %s %d bytes",
			total, n, initBudget, largestPkg, largest)
	}
}

// traceBytes sums the heap bytes of inittrace lines, which read
// "init <package> @<t> ms, <t> ms clock, <n> bytes, <n> allocs".
func traceBytes(t *testing.T, trace string) (total int64, n int, largest int64, largestPkg string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		b, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		total += b
		n++
		if b > largest {
			largest, largestPkg = b, f[1]
		}
	}
	return total, n, largest, largestPkg
}
