package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// BenchmarkVsCodex puts sluice's CPU time and peak RSS beside Codex CLI's
// (the native binary, not the npm package's node wrapper) for three
// commands: --version, a one-prompt headless run, and a headless run
// streaming a 100 KB answer, each against a local fake model server
// (fakemodel.Script: Anthropic's Messages stream for sluice, OpenAI's
// Responses API for Codex). Each iteration runs every command once with
// each program, one after the other (paired runs, so a change of load
// meets both); at the end it prints the medians and ranges and the ratios
// of the medians. It runs only with CODEX_BIN set:
//
//	CODEX_BIN=.../vendor/x86_64-unknown-linux-musl/bin/codex \
//	  go test -run '^$' -bench VsCodex -benchtime 7x ./cmd/sluice
//
// Issue 21's goal: --version and the one-prompt run at most 1.0× Codex's
// CPU and peak RSS, the 100 KB answer at most 0.2× its CPU and 0.25× its
// peak RSS.
//
// After the table it prints what package initialisation costs `sluice
// --version` (GODEBUG=inittrace=1): the number of inits, their heap bytes
// and the heaviest packages. With SLUICE_BEFORE_BIN naming a binary built
// from an earlier commit (git worktree add /tmp/before COMMIT &&
// /tmp/before/scripts/build.sh /tmp/sluice-before), it prints that
// binary's figures too, and the packages whose init came or went.
func BenchmarkVsCodex(b *testing.B) {
	codex := os.Getenv("CODEX_BIN")
	if codex == "" {
		b.Skip("CODEX_BIN names no Codex CLI binary")
	}
	if _, err := os.Stat(gnuTime); err != nil {
		b.Skipf("measuring peak RSS needs GNU time (apt-get install time): %v", err)
	}
	bin := testbin.Sluice(b)
	large := largeAnswer()
	cases := []struct {
		name   string
		answer string // "" for no model request
		sluice []string
		codex  []string
	}{
		{"--version", "", []string{bin, "--version"}, []string{codex, "--version"}},
		{"one prompt", "Hello!", []string{bin, "-p", "hi", "--output-format", "json"},
			[]string{codex, "exec", "--skip-git-repo-check", "hi"}},
		{"100 KB answer", large, []string{bin, "-p", "Write the long answer.", "--output-format", "json"},
			[]string{codex, "exec", "--skip-git-repo-check", "Write the long answer."}},
	}
	type sample struct{ cpu, rss []float64 }
	samples := make([][2]sample, len(cases))
	for b.Loop() {
		for i, c := range cases {
			for j, argv := range [][]string{c.sluice, c.codex} {
				cpu, rss := benchRun(b, j == 1, c.answer, argv)
				samples[i][j].cpu = append(samples[i][j].cpu, cpu)
				samples[i][j].rss = append(samples[i][j].rss, rss)
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "medians of %d paired runs [min–max]; CPU is user+system\n", b.N)
	fmt.Fprintf(&out, "%-14s %-22s %-22s %-22s %-22s %-6s %-6s\n", "command", "sluice CPU ms", "codex CPU ms", "sluice RSS MB", "codex RSS MB", "CPU×", "RSS×")
	for i, c := range cases {
		s, x := samples[i][0], samples[i][1]
		fmt.Fprintf(&out, "%-14s %-22s %-22s %-22s %-22s %-6.2f %-6.2f\n", c.name,
			spread(s.cpu, 1), spread(x.cpu, 1), spread(s.rss, 1024), spread(x.rss, 1024),
			median(s.cpu)/median(x.cpu), median(s.rss)/median(x.rss))
		b.ReportMetric(median(s.cpu)/median(x.cpu), "cpu-ratio-"+strings.ReplaceAll(strings.Trim(c.name, "-"), " ", "-"))
		b.ReportMetric(median(s.rss)/median(x.rss), "rss-ratio-"+strings.ReplaceAll(strings.Trim(c.name, "-"), " ", "-"))
	}
	fmt.Print(out.String())
	fmt.Print(initReport(b, bin, os.Getenv("SLUICE_BEFORE_BIN")))
}

// initCost is one package's line of GODEBUG=inittrace=1.
type initCost struct {
	pkg   string
	ms    float64 // clock
	bytes int64
}

// initTrace runs bin --version with GODEBUG=inittrace=1 and returns its
// packages' init costs, heaviest first.
func initTrace(b *testing.B, bin string) []initCost {
	b.Helper()
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"GODEBUG=inittrace=1", "HOME=" + b.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s --version: %v\n%s", bin, err, stderr.String())
	}
	var costs []initCost
	for _, line := range strings.Split(stderr.String(), "\n") {
		// init <package> @<t> ms, <t> ms clock, <n> bytes, <n> allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		ms, err1 := strconv.ParseFloat(f[4], 64)
		n, err2 := strconv.ParseInt(f[7], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("inittrace line %q", line)
		}
		costs = append(costs, initCost{f[1], ms, n})
	}
	slices.SortFunc(costs, func(x, y initCost) int { return int(y.bytes - x.bytes) })
	return costs
}

// initReport describes bin's init costs and, when before is set, before's
// and what changed between them.
func initReport(b *testing.B, bin, before string) string {
	var out strings.Builder
	summary := func(name string, costs []initCost) map[string]initCost {
		var total int64
		var ms float64
		byPkg := map[string]initCost{}
		for _, c := range costs {
			total, ms = total+c.bytes, ms+c.ms
			byPkg[c.pkg] = c
		}
		fmt.Fprintf(&out, "%s --version, GODEBUG=inittrace=1: %d inits, %d KB, %.1f ms clock; heaviest:", name, len(costs), total/1000, ms)
		for _, c := range costs[:min(8, len(costs))] {
			fmt.Fprintf(&out, " %s %dK", c.pkg, c.bytes/1000)
		}
		out.WriteString("\n")
		return byPkg
	}
	now := summary("sluice", initTrace(b, bin))
	if before == "" {
		return out.String()
	}
	then := summary("before", initTrace(b, before))
	var gone, came []string
	for p, c := range then {
		if _, ok := now[p]; !ok {
			gone = append(gone, fmt.Sprintf("%s %dK", p, c.bytes/1000))
		}
	}
	for p, c := range now {
		if _, ok := then[p]; !ok {
			came = append(came, fmt.Sprintf("%s %dK", p, c.bytes/1000))
		}
	}
	slices.Sort(gone)
	slices.Sort(came)
	fmt.Fprintf(&out, "inits gone (%d): %s\ninits new (%d): %s\n", len(gone), strings.Join(gone, ", "), len(came), strings.Join(came, ", "))
	return out.String()
}

// benchRun runs argv under GNU time, with a fresh home and, when answer
// is set, a fresh fake model server whose first answer it is, and returns
// the CPU milliseconds and peak RSS in kB.
func benchRun(b *testing.B, codex bool, answer string, argv []string) (cpuMS, rssKB float64) {
	b.Helper()
	home := b.TempDir()
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	if answer != "" {
		format := fakemodel.Anthropic
		if codex {
			format = fakemodel.OpenAIResponses
		}
		// Spare answers: a client may make requests of its own.
		answers, err := fakemodel.ParseReplies([]string{"say:" + answer, "say:ok", "say:ok", "say:ok"})
		if err != nil {
			b.Fatal(err)
		}
		srv, err := fakemodel.NewScript(format, answers)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		if codex {
			env = append(env, "FAKE_MODEL_KEY=x")
			writeCodexConfig(b, home, srv.URL)
		} else {
			env = append(env, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=x")
		}
	}
	if codex {
		env = append(env, "CODEX_HOME="+filepath.Join(home, ".codex"))
	}
	rssFile := filepath.Join(home, "peak-rss")
	cmd := exec.Command(gnuTime, append([]string{"--format=%M", "--output=" + rssFile}, argv...)...)
	cmd.Dir, cmd.Env = home, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%.2000s\n%.2000s", strings.Join(argv, " "), err, stdout.String(), stderr.String())
	}
	if answer != "" && !strings.Contains(stdout.String(), strings.TrimSpace(answer[:min(len(answer), 40)])) {
		b.Fatalf("%s did not write the answer:\n%.2000s\n%.2000s", strings.Join(argv, " "), stdout.String(), stderr.String())
	}
	// GNU time's own rusage includes the command it waited for, exactly
	// (its printed CPU figures are in 10 ms).
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	peak, err := os.ReadFile(rssFile)
	if err != nil {
		b.Fatal(err)
	}
	rss, err := strconv.ParseFloat(strings.TrimSpace(string(peak)), 64)
	if err != nil {
		b.Fatalf("GNU time's peak RSS %q: %v", peak, err)
	}
	return float64(cpu.Microseconds()) / 1000, rss
}

// writeCodexConfig points Codex at the fake Responses server on loopback
// and turns off what would reach elsewhere: the update check, analytics,
// feedback, plugins.
func writeCodexConfig(b *testing.B, home, url string) {
	b.Helper()
	dir := filepath.Join(home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	config := `model = "gpt-5"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false

[model_providers.fake]
name = "fake"
base_url = "` + url + `"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
`
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread formats the median and range of v, divided by unit.
func spread(v []float64, unit float64) string {
	return fmt.Sprintf("%.1f [%.1f–%.1f]", median(v)/unit, slices.Min(v)/unit, slices.Max(v)/unit)
}
