package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// largeAnswer is a 100 KB answer of short paragraphs; the fake server
// streams it in deltas of about 16 bytes (some 6,000 of them).
func largeAnswer() string {
	var b strings.Builder
	for i := 0; b.Len() < 100_000; i++ {
		fmt.Fprintf(&b, "Paragraph %d: the quick brown fox jumps over the lazy dog, then naps in the sun.\n\n", i)
	}
	return b.String()
}

// gnuTime runs a command under GNU time to read its peak RSS. The rusage
// of a child of this process cannot tell it: os/exec starts children with
// vfork, and at exec Linux counts the high-water mark of the memory the
// child had until then — this test process's — into the child's maxrss,
// so a small command reads as large as the test binary (36 MB instead of
// sluice's own 31 MB here). GNU time forks the command from a small
// process of its own.
const gnuTime = "/usr/bin/time"

// headlessRun runs one headless stream-json run of bin against a fresh
// fake Anthropic server and returns the process's CPU time and peak RSS.
func headlessRun(b *testing.B, answer string, argv []string, env []string) (cpu time.Duration, rssKB int64, out int) {
	b.Helper()
	// A few answers: a client may make requests of its own besides the
	// prompt's (the first request gets the large answer).
	answers, err := fakemodel.ParseReplies([]string{"say:" + answer, "say:ok", "say:ok", "say:ok"})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	home := b.TempDir()
	if _, err := os.Stat(gnuTime); err != nil {
		b.Fatalf("measuring peak RSS needs GNU time (apt-get install time): %v", err)
	}
	rssFile := filepath.Join(home, "peak-rss")
	cmd := exec.Command(gnuTime, append([]string{"--format=%M", "--output=" + rssFile}, argv...)...)
	cmd.Dir = home
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=x"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", argv[0], err, stderr.String())
	}
	if !bytes.Contains(stdout.Bytes(), []byte(`"type":"result"`)) {
		b.Fatalf("%s wrote no result line:\n%.2000s\n%s", argv[0], stdout.String(), stderr.String())
	}
	// GNU time's CPU figures are in 10 ms; its own rusage, which includes
	// the command it waited for, is exact.
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	peak, err := os.ReadFile(rssFile)
	if err != nil {
		b.Fatal(err)
	}
	rssKB, err = strconv.ParseInt(strings.TrimSpace(string(peak)), 10, 64)
	if err != nil {
		b.Fatalf("GNU time's peak RSS %q: %v", peak, err)
	}
	return cpu, rssKB, stdout.Len()
}

// BenchmarkHeadlessStream measures what a headless run costs as a
// process: `sluice -p` streaming a 100 KB answer (about 6,000 deltas) from
// a local fake Anthropic server with --output-format stream-json
// --include-partial-messages, reporting CPU time and peak RSS per run.
//
// With CLAUDE_CODE_BIN naming a Claude Code CLI, each iteration runs it the
// same way too, and the ratios sluice/Claude Code are reported (issue 10's
// targets: cpu-ratio <= 0.05, rss-ratio <= 0.08):
//
//	CLAUDE_CODE_BIN=/tmp/cc/node_modules/.bin/claude go test -run '^$' -bench HeadlessStream -benchtime 3x ./cmd/sluice
func BenchmarkHeadlessStream(b *testing.B) {
	bin := testbin.Sluice(b)
	answer := largeAnswer()
	flags := []string{"-p", "Write the long answer.", "--output-format", "stream-json", "--include-partial-messages"}
	claude := os.Getenv("CLAUDE_CODE_BIN")
	var cpu, ccCPU time.Duration
	var rss, ccRSS int64
	for b.Loop() {
		c, r, n := headlessRun(b, answer, append([]string{bin}, flags...), nil)
		cpu += c
		rss = max(rss, r)
		b.SetBytes(int64(n))
		if claude != "" {
			c, r, _ := headlessRun(b, answer, append([]string{claude, "--verbose"}, flags...),
				[]string{"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1"})
			ccCPU += c
			ccRSS = max(ccRSS, r)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu-ms/run")
	b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
	if claude != "" {
		b.ReportMetric(float64(ccCPU.Milliseconds())/n, "cc-cpu-ms/run")
		b.ReportMetric(float64(ccRSS)/1024, "cc-peak-rss-MB")
		b.ReportMetric(float64(cpu)/float64(ccCPU), "cpu-ratio")
		b.ReportMetric(float64(rss)/float64(ccRSS), "rss-ratio")
	}
}
