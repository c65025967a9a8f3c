package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// heavyInit names packages whose initialisation every command of the
// binary paid before the TUI stopped linking Glamour: chroma's lexer and
// style registries parse hundreds of embedded XML files (3.9 MB, ~20 ms),
// bluemonday and its CSS tables 0.8 MB; goldmark's GFM extensions
// (compiling the bare-link regular expressions, 264 KB) before termmd
// parsed them itself; and aws-sdk-go-v2's config package, with the STS,
// SSO, SSO-OIDC and Sign-In clients it links, whose endpoint and schema
// tables (22 inits, 577 KB) Bedrock's credential chain cost before
// bedrock/awsauth replaced it; and Google's Application Default
// Credentials (cloud.google.com/go/auth/credentials, with every credential
// type Google knows, the metadata package, enterprise-certificate-proxy
// and the net/rpc and html/template it links: 14 inits, 94 KB) before
// vertex/gcpauth replaced them; and modernc.org/sqlite with the C
// library translated to Go under it (modernc.org/libc), the relay's state
// file before bbolt replaced it: 5.5 MB of the binary, and 0.95 MB of the
// peak RSS of every command (median of 15 `sluice --version`).
var heavyInit = []string{
	"github.com/yuin/goldmark/extension",
	"github.com/alecthomas/chroma/v2/lexers",
	"github.com/alecthomas/chroma/v2/styles",
	"github.com/alecthomas/chroma/v2/formatters",
	"github.com/alecthomas/chroma/v2/quick",
	"charm.land/glamour/v2",
	"github.com/microcosm-cc/bluemonday",
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/service/sts",
	"github.com/aws/aws-sdk-go-v2/service/sso",
	"github.com/aws/aws-sdk-go-v2/service/ssooidc",
	"github.com/aws/aws-sdk-go-v2/service/signin",
	"cloud.google.com/go/auth",
	"cloud.google.com/go/auth/credentials",
	"cloud.google.com/go/compute/metadata",
	"github.com/googleapis/enterprise-certificate-proxy/client",
	"net/rpc",
	"modernc.org/sqlite",
	"modernc.org/libc",
}

// initBudget bounds what package initialisation may allocate in all:
// 1.125 MiB. Measured 904 KB in 193 inits since Vertex's credentials
// stopped linking Google's auth packages (998 KB in 207 before; 1,588 KB
// in 227 before Bedrock's credential chain stopped linking the AWS SDK's
// config package; 1.8 MB before termmd stopped importing
// goldmark/extension, 6.9 MB with Glamour linked). The largest parts now
// are third-party tables of features in use: goldmark's HTML entities and
// parser (250 KB, the TUI's Markdown), x/net/html's entities (127 KB,
// WebFetch's HTML-to-Markdown) and jsonschema-go (81 KB, tool schemas and
// MCP).
const initBudget = 9 << 17 // 1.125 MiB

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

// startupFileBudget bounds the binary's pages a headless run has mapped
// by the time it sends its first model request, in kB. Measured: 16.6 MB
// for the static build (scripts/build.sh), 18.2 MB before Bedrock's
// credential chain stopped linking the AWS SDK's config package: with
// the kernel's 64 KB fault-around, the ~200 packages running init map
// most of the binary's code, read-only data and function tables. (An
// earlier build unmapped them after init, showing 10.7 MB; the pages
// stayed in the page cache all the same, so that lowered the figure, not
// the memory spent, and it was removed.) The headroom is for the page
// cache: when it holds the binary in large folios (seen on ext4, Linux
// 6.18) a fault maps more of it, up to ~3 MB more in all.
const startupFileBudget = 39 << 9 // 19.5 MB

// TestHeadlessStartFilePages holds a headless run's first model
// request until it has read the process's file-backed RSS (RssFile of
// /proc/PID/status: the binary's pages, and the C library's when the
// binary is linked with cgo), then lets the run finish: a package that
// makes start-up touch much more of the binary fails it.
func TestHeadlessStartFilePages(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("RssFile is read from /proc, which is Linux's")
	}
	arrived := make(chan struct{})
	release := make(chan struct{})
	var first sync.Once
	gate := fakemodel.New(func(fakemodel.Request) fakemodel.Answer {
		first.Do(func() {
			close(arrived)
			<-release
		})
		return loremAnswer(1 << 10)
	})
	defer gate.Close()
	released := sync.OnceFunc(func() { close(release) })
	defer released()

	home := t.TempDir()
	cmd := exec.Command(testbin.Sluice(t), "-p", "hi", "--output-format", "stream-json", "--include-partial-messages")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "SLUICE_HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + gate.URL(), "ANTHROPIC_API_KEY=x"}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-arrived:
	case err := <-exited:
		t.Fatalf("sluice -p ended before its model request: %v\n%s", err, stderr.String())
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	released()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("sluice -p: %v\n%s", err, stderr.String())
	}
	fileKB := -1
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			fileKB, err = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("RssFile line %q: %v", line, err)
			}
		}
	}
	if fileKB < 0 {
		t.Fatalf("no RssFile in:\n%s", status)
	}
	t.Logf("RssFile at the first model request: %d kB", fileKB)
	if fileKB > startupFileBudget {
		t.Errorf("RssFile at the first model request is %d kB, budget %d kB: does a new package's init touch much of the binary?", fileKB, startupFileBudget)
	}
}
