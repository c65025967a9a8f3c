package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// The benchmarks of this file measure the peak RSS of the real binary
// while it streams large answers from a local fake Anthropic server: the
// figure issue 16 asks to keep proportional to what is streamed. They run
// only with -bench, one iteration each being enough (the figure is a
// peak, not a time):
//
//	go test -run '^$' -bench 'HostileStream|LargeAnswer|RPCHostNotReading' -benchtime 1x ./cmd/sluice

// newTextServer is a fake Anthropic server whose every answer is
// loremAnswer(size), streamed as fast as the client reads; its Written
// counts the bytes of the response bodies written so far.
func newTextServer(size int64) *fakemodel.Server {
	a := loremAnswer(size)
	return fakemodel.New(func(fakemodel.Request) fakemodel.Answer { return a })
}

// loremAnswer is one text block of at least size bytes, in deltas of
// 16 KiB.
func loremAnswer(size int64) fakemodel.Answer {
	chunk := strings.Repeat("lorem ipsum dolor sit amet ", 16<<10/27+1)[:16<<10]
	text := make([]string, (size+int64(len(chunk))-1)/int64(len(chunk)))
	for i := range text {
		text[i] = chunk
	}
	return fakemodel.Answer{Text: text}
}

// sluiceCmd is the binary run in a fresh home against srv.
func sluiceCmd(b *testing.B, srv *fakemodel.Server, args ...string) *exec.Cmd {
	home := b.TempDir()
	cmd := exec.Command(testbin.Sluice(b), args...)
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "SLUICE_HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=x"}
	return cmd
}

func peakRSS(cmd *exec.Cmd) int64 {
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// printRun runs `sluice -p` against a server answering size bytes and
// reports its peak RSS against the bytes it read.
func printRun(b *testing.B, size int64, format string, wantExit int) {
	for b.Loop() {
		srv := newTextServer(size)
		cmd := sluiceCmd(b, srv, "-p", "go", "--output-format", format)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		err := cmd.Run()
		srv.Close()
		if code := cmd.ProcessState.ExitCode(); code != wantExit {
			b.Fatalf("exit %d (%v), want %d:\n%s", code, err, wantExit, stderr.String())
		}
		read := srv.Written()
		rss := peakRSS(cmd)
		b.ReportMetric(float64(read)/(1<<20), "read-MiB")
		b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(rss)/float64(read), "rss/read")
	}
}

// BenchmarkHostileStream: a server offering 1 GiB of text; sluice stops
// at its 64 MiB response cap with an error.
func BenchmarkHostileStream(b *testing.B) {
	for _, format := range []string{"text", "stream-json"} {
		b.Run("format="+format, func(b *testing.B) { printRun(b, 1<<30, format, 1) })
	}
}

// BenchmarkLargeAnswer: a 32 MiB answer that succeeds, and a 16 KiB one
// for the process's own footprint.
func BenchmarkLargeAnswer(b *testing.B) {
	for _, size := range []int64{16 << 10, 32 << 20} {
		for _, format := range []string{"text", "stream-json"} {
			b.Run(fmt.Sprintf("size=%dKiB/format=%s", size>>10, format), func(b *testing.B) { printRun(b, size, format, 0) })
		}
	}
}

// BenchmarkRPCHostNotReading: `sluice rpc` answers 20 MiB to a host that
// reads none of its output until the stream is over or has made no
// progress for a second (sluice holding it back), then reads to the end
// of the run. unread-* are the figures at the moment the host starts
// reading: how far the stream got and the peak RSS until then.
func BenchmarkRPCHostNotReading(b *testing.B) {
	const size = 20 << 20
	for b.Loop() {
		srv := newTextServer(size)
		cmd := sluiceCmd(b, srv, "rpc", "--provider", "anthropic")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"sendMessage","params":{"text":"go"}}`+"\n")
		last, since := int64(-1), time.Now()
		for time.Since(since) < time.Second {
			if n := srv.Written(); n != last {
				last, since = n, time.Now()
			}
			time.Sleep(20 * time.Millisecond)
		}
		// What the host not reading has cost: the peak so far, and how far
		// the stream got.
		heldRSS, heldAt := vmHWM(b, cmd.Process.Pid), srv.Written()
		ended := false
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 256<<20)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		go func() { <-ctx.Done(); cmd.Process.Kill() }()
		for !ended && sc.Scan() {
			var m struct {
				Method string `json:"method"`
			}
			json.Unmarshal(sc.Bytes(), &m)
			ended = m.Method == "turnEnded"
		}
		stdin.Close()
		go io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		cancel()
		srv.Close()
		if !ended {
			b.Fatalf("no turnEnded (%v):\n%s", err, stderr.String())
		}
		rss := peakRSS(cmd)
		b.ReportMetric(float64(srv.Written())/(1<<20), "read-MiB")
		b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(rss)/float64(srv.Written()), "rss/read")
		b.ReportMetric(float64(heldAt)/(1<<20), "unread-streamed-MiB")
		b.ReportMetric(float64(heldRSS)/(1<<20), "unread-peak-rss-MiB")
	}
}

// vmHWM is a running process's peak RSS (VmHWM of /proc/PID/status).
func vmHWM(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
