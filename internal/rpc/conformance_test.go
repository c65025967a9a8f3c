package rpc_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/protocol"
)

var update = flag.Bool("update", false, "rewrite the expected output of the conformance transcripts")

// TestConformance runs the transcripts of testdata/conformance against the
// real `sluice rpc` binary, on a local fake Anthropic server or (by its
// args) the built-in demo provider.
//
// A transcript is a txtar archive. Its comment holds "args:" (the flags
// after "sluice rpc"). Its other files are written to the working
// directory. Its "script" file is a list of steps:
//
//	> {request}        a line written to the server's stdin
//	< {message}        a line the server must write, in this order
//	<~ {message}       an answer whose place among the notifications is not
//	                   fixed (sendMessage, abort, permissionResponse)
//	!restart           close stdin, expect a clean exit, start again
//	!eof               close stdin and expect a clean exit, nothing more
//
// The server's lines are compared after normalisation: keys sorted, UUIDs
// replaced by <id1>, <id2>, ... in order of appearance (a request may use
// them), times by "<time>", sizes by "<size>", input token counts by
// "<tokens>", the working directory and
// the session home by <work> and <home>; and adjacent deltas of one block
// merged (protocol.Merge), since how many chunks a slow reader finds merged
// depends on timing. Run with -update to rewrite the expected lines.
func TestConformance(t *testing.T) {
	testbin.Sluice(t) // the transcripts fail at once when the binary cannot be built
	files, err := filepath.Glob("testdata/conformance/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	fake := fakemodel.NewEcho()
	t.Cleanup(fake.Close)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, file, fake.URL)
		})
	}
}

// looseMethods are the requests whose answers race with the notifications
// of the work they start.
var looseMethods = map[string]bool{"sendMessage": true, "abort": true, "permissionResponse": true}

type step struct {
	input  string   // "> ..." or "!..."
	expect []string // "< ..." and "<~ ..." lines
	other  []string // comments and blank lines after the input, kept by -update
}

func parseScript(t *testing.T, data []byte) (head []string, steps []*step) {
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, ">") || strings.HasPrefix(line, "!"):
			steps = append(steps, &step{input: line})
		case strings.HasPrefix(line, "<"):
			if len(steps) == 0 {
				t.Fatalf("expected output before any input: %s", line)
			}
			steps[len(steps)-1].expect = append(steps[len(steps)-1].expect, line)
		case len(steps) == 0:
			head = append(head, line)
		default:
			steps[len(steps)-1].other = append(steps[len(steps)-1].other, line)
		}
	}
	return head, steps
}

func runTranscript(t *testing.T, file, baseURL string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		if rest, ok := strings.CutPrefix(line, "args:"); ok {
			args = strings.Fields(rest)
		}
	}
	var script *txtar.File
	for i := range ar.Files {
		if ar.Files[i].Name == "script" {
			script = &ar.Files[i]
		}
	}
	if script == nil {
		t.Fatal("no script file")
	}
	head, steps := parseScript(t, script.Data)

	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from a file\n"), 0o644)
	// The archive's other files are the project's (.claude/settings.json).
	for _, f := range ar.Files {
		if f.Name == "script" {
			continue
		}
		path := filepath.Join(work, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := &normaliser{ids: map[string]string{}, rev: map[string]string{}, work: work, home: home}
	env := append(os.Environ(), "SLUICE_HOME="+home, "HOME="+home, "ANTHROPIC_BASE_URL="+baseURL, "ANTHROPIC_API_KEY=test-key-not-secret")
	p := startProc(t, work, env, args)
	methods := map[string]string{} // request id → method

	var out []string
	out = append(out, head...)
	for _, st := range steps {
		out = append(out, st.input)
		switch {
		case st.input == "!restart" || st.input == "!eof":
			p.stop(t)
			if st.input == "!restart" {
				p = startProc(t, work, env, args)
			}
			out = append(out, st.other...)
			continue
		case strings.HasPrefix(st.input, "!"):
			t.Fatalf("unknown command %s", st.input)
		}
		line := n.substitute(strings.TrimSpace(strings.TrimPrefix(st.input, ">")))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(line), &req) == nil && req.ID != nil {
			methods[string(req.ID)] = req.Method
		}
		p.write(t, line)

		var wantStrict, wantLoose []string
		for _, e := range st.expect {
			if rest, ok := strings.CutPrefix(e, "<~"); ok {
				wantLoose = append(wantLoose, canonical(t, rest))
			} else {
				wantStrict = append(wantStrict, canonical(t, strings.TrimPrefix(e, "<")))
			}
		}
		gotStrict, gotLoose := p.collect(t, n, methods, len(wantStrict), len(wantLoose), *update, req.ID)
		if *update {
			for _, l := range gotStrict {
				out = append(out, "< "+l)
			}
			for _, l := range gotLoose {
				out = append(out, "<~ "+l)
			}
		} else {
			slices.Sort(gotLoose)
			slices.Sort(wantLoose)
			if !slices.Equal(gotStrict, wantStrict) || !slices.Equal(gotLoose, wantLoose) {
				t.Fatalf("after %s\n got:\n%s\nwant:\n%s\nstderr:\n%s", st.input,
					strings.Join(append(gotStrict, gotLoose...), "\n"), strings.Join(append(wantStrict, wantLoose...), "\n"), p.stderr())
			}
		}
		out = append(out, st.other...)
	}
	if !p.stopped {
		p.stop(t)
	}
	if *update {
		script.Data = []byte(strings.Join(out, "\n") + "\n")
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// canonical re-encodes a JSON line with sorted keys.
func canonical(t *testing.T, line string) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("expected line is not JSON: %s: %v", line, err)
	}
	return marshal(v)
}

// marshal encodes v with sorted keys and without HTML escapes, so that
// placeholders read as <id1>.
func marshal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normaliser replaces what differs between runs by stable placeholders.
type normaliser struct {
	ids, rev   map[string]string
	work, home string
}

func (n *normaliser) str(s string) string {
	s = strings.ReplaceAll(s, n.work, "<work>")
	s = strings.ReplaceAll(s, n.home, "<home>")
	return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if p, ok := n.ids[id]; ok {
			return p
		}
		p := fmt.Sprintf("<id%d>", len(n.ids)+1)
		n.ids[id], n.rev[p] = p, id
		return p
	})
}

func (n *normaliser) value(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		// In key order, so that ids are numbered the same on every run.
		for _, k := range slices.Sorted(mapsKeys(x)) {
			x[k] = n.value(x[k], k)
		}
	case []any:
		for i, e := range x {
			x[i] = n.value(e, key)
		}
	case string:
		return n.str(x)
	case json.Number:
		switch key {
		case "createdAt", "startedAt", "endedAt", "modified":
			if x.String() != "0" {
				return "<time>"
			}
		case "size":
			return "<size>"
		case "input_tokens":
			// The demo provider counts the request, whose system prompt
			// holds the (random) working directory.
			return "<tokens>"
		}
	}
	return v
}

// line normalises one JSON line.
func (n *normaliser) line(data []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.Decode(&v)
	return marshal(n.value(v, ""))
}

// substitute puts the real ids and paths into a request.
func (n *normaliser) substitute(line string) string {
	for p, id := range n.rev {
		line = strings.ReplaceAll(line, p, id)
	}
	return strings.ReplaceAll(line, "<work>", n.work)
}

// proc is a running `sluice rpc`.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	errb    *syncBuffer
	stopped bool

	mu     sync.Mutex
	lines  [][]byte
	eof    bool
	notify chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (p *proc) stderr() string {
	p.errb.mu.Lock()
	defer p.errb.mu.Unlock()
	return p.errb.b.String()
}

func startProc(t *testing.T, dir string, env, args []string) *proc {
	t.Helper()
	cmd := exec.Command(testbin.Sluice(t), append([]string{"rpc"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	p := &proc{cmd: cmd, errb: &syncBuffer{}, notify: make(chan struct{}, 1)}
	cmd.Stderr = p.errb
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			p.mu.Lock()
			if len(line) > 0 {
				p.lines = append(p.lines, bytes.TrimRight(line, "\n"))
			}
			if err != nil {
				p.eof = true
			}
			p.mu.Unlock()
			select {
			case p.notify <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

func (p *proc) write(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("write to sluice rpc: %v\nstderr:\n%s", err, p.stderr())
	}
}

// stop closes stdin and expects a clean exit with nothing more written.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.stopped = true
	p.stdin.Close()
	done := make(chan error, 1)
	go func() {
		for {
			p.mu.Lock()
			eof := p.eof
			p.mu.Unlock()
			if eof {
				break
			}
			<-p.notify
		}
		done <- p.cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sluice rpc exited with %v after stdin closed\nstderr:\n%s", err, p.stderr())
		}
	case <-time.After(guard):
		t.Fatalf("sluice rpc did not exit after stdin closed\nstderr:\n%s", p.stderr())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) > 0 {
		t.Fatalf("unexpected output at the end: %s", p.lines)
	}
}

// collect reads the server's lines until it has nStrict strict and nLoose
// loose ones (normalised and merged), or, when updating, until the server
// has been quiet for a while.
func (p *proc) collect(t *testing.T, n *normaliser, methods map[string]string, nStrict, nLoose int, updating bool, id json.RawMessage) (strict, loose []string) {
	t.Helper()
	var raw [][]byte
	deadline := time.After(guard)
	base := n.clone()
	for {
		p.mu.Lock()
		raw = append(raw, p.lines...)
		p.lines = nil
		eof := p.eof
		p.mu.Unlock()
		// Numbering starts afresh from the step's start on every pass, so
		// that it does not depend on which lines arrived first.
		*n = *base.clone()
		strict, loose = classify(t, n, raw, methods)
		if !updating && len(strict) >= nStrict && len(loose) >= nLoose {
			return strict, loose
		}
		if eof {
			return strict, loose
		}
		quiet := time.After(time.Hour)
		if updating && (id == nil || answered(raw, id)) {
			quiet = time.After(time.Second)
		}
		select {
		case <-p.notify:
		case <-quiet:
			return strict, loose
		case <-deadline:
			t.Fatalf("waited %v for %d+%d lines, got:\n%s\nstderr:\n%s", guard, nStrict, nLoose, strings.Join(append(strict, loose...), "\n"), p.stderr())
		}
	}
}

// answered reports whether raw holds the answer to id (or an answer to
// an unreadable request: id null).
func answered(raw [][]byte, id json.RawMessage) bool {
	for _, line := range raw {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "" && (bytes.Equal(m.ID, id) || string(m.ID) == "null") {
			return true
		}
	}
	return false
}

// classify merges adjacent deltas and normalises, the strict lines
// first; answers to loose methods are set apart.
func classify(t *testing.T, n *normaliser, raw [][]byte, methods map[string]string) (strict, loose []string) {
	t.Helper()
	type item struct {
		ev   protocol.Event
		data []byte
	}
	var items []item
	var looseRaw [][]byte
	for _, line := range raw {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("sluice rpc wrote a line that is not JSON: %q", line)
		}
		if m.Method == "" {
			if looseMethods[methods[string(m.ID)]] {
				looseRaw = append(looseRaw, line)
			} else {
				items = append(items, item{data: line})
			}
			continue
		}
		ev, err := protocol.Decode(m.Method, m.Params)
		if err != nil {
			t.Fatalf("undecodable notification %s: %v", line, err)
		}
		if k := len(items); k > 0 && items[k-1].ev != nil {
			if merged, ok := protocol.Merge(items[k-1].ev, ev); ok {
				items[k-1].ev = merged
				continue
			}
		}
		items = append(items, item{ev: ev})
	}
	for _, it := range items {
		data := it.data
		if it.ev != nil {
			var err error
			if data, err = protocol.Encode(it.ev); err != nil {
				t.Fatal(err)
			}
		}
		strict = append(strict, n.line(data))
	}
	for _, line := range looseRaw {
		loose = append(loose, n.line(line))
	}
	return strict, loose
}

func mapsKeys(m map[string]any) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (n *normaliser) clone() *normaliser {
	c := *n
	c.ids, c.rev = make(map[string]string, len(n.ids)), make(map[string]string, len(n.rev))
	for k, v := range n.ids {
		c.ids[k] = v
	}
	for k, v := range n.rev {
		c.rev[k] = v
	}
	return &c
}
