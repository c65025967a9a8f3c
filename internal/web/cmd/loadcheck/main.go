// Command loadcheck puts one `sluice serve` under load: N sessions stream
// an answer at once (each ~20 KB from a local fake model server, through
// the real Anthropic provider) to N WebSocket clients. Every client applies
// its events with the shared reducer, which refuses a gap or a duplicate,
// and checks that the answer arrived whole and in order. It reports the
// server's CPU time per MB delivered and its peak memory (the child
// process's rusage), and exits non-zero when any client lost or duplicated
// a chunk.
//
//	go build -o /tmp/sluice ./cmd/sluice
//	go run ./internal/web/cmd/loadcheck -sluice /tmp/sluice -sessions 200
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/protocol"
)

func main() {
	bin := flag.String("sluice", "", "the sluice binary to run as `sluice serve` (required)")
	sessions := flag.Int("sessions", 200, "sessions streaming at once, one WebSocket client each")
	size := flag.Int("answer-bytes", 20_000, "size of each answer")
	pace := flag.Duration("pace", 0, "delay between the model's chunks (0: as fast as the server takes them)")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "loadcheck: -sluice is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := run(ctx, *bin, *sessions, *size, *pace)
	if rep != nil {
		rep.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadcheck:", err)
		os.Exit(1)
	}
}

type report struct {
	sessions     int
	answerBytes  int
	wall         time.Duration
	wireBytes    int64
	frames       int64
	events       int64
	cpu          time.Duration
	maxRSSKB     int64
	failed       int
	firstByteMax time.Duration
}

func (r *report) print(w io.Writer) {
	delivered := float64(r.sessions*r.answerBytes) / 1e6
	wire := float64(r.wireBytes) / 1e6
	fmt.Fprintf(w, "sessions            %d streaming at once, %d-byte answers\n", r.sessions, r.answerBytes)
	fmt.Fprintf(w, "delivered           %.2f MB of answers in %.2f MB of WebSocket messages (%d messages for %d events)\n", delivered, wire, r.frames, r.events)
	fmt.Fprintf(w, "wall time           %.2fs (slowest first byte %.0fms)\n", r.wall.Seconds(), float64(r.firstByteMax.Microseconds())/1000)
	fmt.Fprintf(w, "server CPU          %.2fs user+system: %.3fs per MB of answers, %.3fs per MB on the wire\n",
		r.cpu.Seconds(), r.cpu.Seconds()/delivered, r.cpu.Seconds()/wire)
	fmt.Fprintf(w, "server peak memory  %.1f MB (max RSS)\n", float64(r.maxRSSKB)/1024)
	fmt.Fprintf(w, "clients             %d passed, %d failed\n", r.sessions-r.failed, r.failed)
}

func run(ctx context.Context, bin string, sessions, size int, pace time.Duration) (*report, error) {
	answer := fakemodel.NumberedAnswer(size)
	want := strings.Join(answer, "")
	fm := fakemodel.New(func(fakemodel.Request) fakemodel.Answer {
		return fakemodel.Answer{Text: answer, Pace: pace}
	})
	defer fm.Close()

	home, err := os.MkdirTemp("", "sluice-loadcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(bin, "serve", "--port", "0")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=loadcheck", "ANTHROPIC_AUTH_TOKEN=", "ANTHROPIC_BASE_URL="+fm.URL(), "SLUICE_HOME="+home)
	cmd.Dir = home
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stopped := false
	stop := func() (*syscall.Rusage, error) {
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return ru, err
	}
	defer func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("sluice serve printed no URL: %v\n%s", err, stderr.String())
	}
	page, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		return nil, err
	}
	wsURL := "ws://" + page.Host + "/ws?" + page.RawQuery

	rep := &report{sessions: sessions, answerBytes: len(want)}
	start := make(chan struct{})
	var ready sync.WaitGroup
	var wg sync.WaitGroup
	var failed atomic.Int64
	var mu sync.Mutex
	var errs []error
	var began time.Time
	for i := range sessions {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := client(ctx, wsURL, want, &ready, start)
			mu.Lock()
			defer mu.Unlock()
			rep.wireBytes += st.bytes
			rep.frames += st.frames
			rep.events += st.events
			rep.firstByteMax = max(rep.firstByteMax, st.firstByte)
			if err != nil {
				failed.Add(1)
				if len(errs) < 5 {
					errs = append(errs, fmt.Errorf("client %d: %w", i, err))
				}
			}
		}()
	}
	ready.Wait()
	began = time.Now()
	close(start)
	wg.Wait()
	rep.wall = time.Since(began)
	rep.failed = int(failed.Load())
	ru, err := stop()
	if err != nil {
		errs = append(errs, fmt.Errorf("sluice serve: %v\n%s", err, tail(stderr.String(), 2000)))
	}
	if ru != nil {
		rep.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		rep.maxRSSKB = ru.Maxrss
	}
	return rep, errors.Join(errs...)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

type stats struct {
	bytes, frames, events int64
	firstByte             time.Duration
}

// client runs one session: initialize, wait for the start, send a
// message, apply every event until the run is idle, check the answer.
func client(ctx context.Context, wsURL, want string, ready *sync.WaitGroup, start <-chan struct{}) (st stats, err error) {
	readied := false
	defer func() {
		if !readied {
			ready.Done()
		}
	}()
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		return st, err
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	send := func(id int, method string, params any) error {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		return c.Write(ctx, websocket.MessageText, msg)
	}
	var list protocol.List
	var session string
	if err := send(1, "initialize", map[string]any{}); err != nil {
		return st, err
	}
	for session == "" {
		_, data, err := c.Read(ctx)
		if err != nil {
			return st, err
		}
		var m struct {
			ID     *int `json:"id"`
			Result struct {
				SessionID string             `json:"sessionId"`
				Snapshot  *protocol.Snapshot `json:"snapshot"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &m); err != nil || m.Error != nil || m.ID == nil || m.Result.Snapshot == nil {
			return st, fmt.Errorf("initialize: %s", data)
		}
		session = m.Result.SessionID
		list.Reset(*m.Result.Snapshot)
	}
	readied = true
	ready.Done()
	select {
	case <-start:
	case <-ctx.Done():
		return st, ctx.Err()
	}
	sent := time.Now()
	if err := send(2, "sendMessage", map[string]any{"sessionId": session, "text": "go"}); err != nil {
		return st, err
	}
	running := false
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return st, fmt.Errorf("after %d events: %w", st.events, err)
		}
		if st.frames == 0 {
			st.firstByte = time.Since(sent)
		}
		st.frames++
		st.bytes += int64(len(data))
		if !bytes.Contains(data, []byte(`"method"`)) {
			continue // the answer to sendMessage
		}
		ev, err := protocol.DecodeNotification(data)
		if err != nil {
			return st, err
		}
		h := ev.Head()
		if h.SessionID != session {
			return st, fmt.Errorf("an event of another session: %s", data)
		}
		st.events += h.Seq - h.From() + 1
		// The reducer refuses a gap (a lost event) and a seq already
		// applied (a duplicate).
		if err := list.Apply(ev); err != nil {
			return st, err
		}
		if rs, ok := ev.(protocol.RunStateChanged); ok {
			if rs.State == protocol.RunRunning {
				running = true
			} else if running {
				break
			}
		}
	}
	if list.Len() != 2 {
		return st, fmt.Errorf("%d messages, want the question and the answer", list.Len())
	}
	if got := list.At(1).Text(); got != want {
		return st, fmt.Errorf("the answer differs: %d bytes, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	return st, nil
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
