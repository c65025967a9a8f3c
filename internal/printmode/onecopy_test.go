package printmode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// heapProbe is a stdout that writes to a file (so that the output costs
// no memory) and, when the result line starts, measures the heap in use:
// the finished blocks have been written then, the translator is still
// there and the result line, which carries the answer, is being written.
type heapProbe struct {
	f        *os.File
	tail     []byte
	measured bool
	at       runtime.MemStats
}

var probeMark = []byte(`{"type":"result"`)

func (p *heapProbe) Write(b []byte) (int, error) {
	if !p.measured {
		head := b[:min(len(b), len(probeMark))]
		if bytes.Contains(b, probeMark) || bytes.Contains(append(p.tail, head...), probeMark) {
			p.measured = true
			// Twice: what encoding/json's pool holds goes at the second.
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&p.at)
		}
		p.tail = append(p.tail[:0], b[max(0, len(b)-len(probeMark)):]...)
	}
	return p.f.Write(b)
}

// TestStreamJSONKeepsOneCopy: with stream-json output, an answer (a
// thinking block and a text block, 2 MiB in 32 KiB deltas) is held once in
// the process: by the session's display list, which print mode's own list
// shares and the translator writes the finished blocks from. Measured as
// the heap in use while the result line is written, over what the answer
// weighs. With the translator's own copy in its accumulator and the lines
// marshalled whole into encoding/json's buffer (which its pool keeps) it
// was 3.2; without that copy, 2.1; now 1.3 (the display list grows by
// append: up to 1.25). The deltas share one string, so the answer as the
// model sends it costs nothing; the bytes written are checked afterwards.
// Not parallel: the heap is the whole process's.
func TestStreamJSONKeepsOneCopy(t *testing.T) {
	const piece = 32 << 10
	chunk := strings.Repeat("lorem ipsum <dolor> & \"sit\" amet\n", piece/33+1)[:piece]
	thinking := make([]string, (512<<10)/piece)
	text := make([]string, (1536<<10)/piece)
	for i := range thinking {
		thinking[i] = chunk
	}
	for i := range text {
		text[i] = chunk
	}
	size := (len(thinking) + len(text)) * piece
	sess, err := agent.New(agent.Options{
		Provider: modeltest.NewScript(modeltest.Response(modeltest.Start("m1"),
			modeltest.Reasoning(0, thinking...), modeltest.Text(1, text...), modeltest.Stop(model.StopEndTurn))),
		WorkDir: t.TempDir(), Stream: modeltest.StreamOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	probe := &heapProbe{f: out}
	var stderr bytes.Buffer
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := Run(t.Context(), sess, "go", Config{OutputFormat: FormatStreamJSON, Stdout: probe, Stderr: &stderr})
	if code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	if !probe.measured {
		t.Fatal("no result line written")
	}
	kept := (float64(probe.at.HeapAlloc) - float64(before.HeapAlloc)) / float64(size)
	t.Logf("heap in use after the blocks were written: %.2f bytes per answer byte", kept)
	if kept > 1.6 {
		t.Errorf("the process held %.2f bytes per byte of the answer after writing its blocks; want at most 1.6 (one copy)", kept)
	}

	// What was written: each block whole in its assistant line, the text
	// in the result. (Looked for as bytes: decoding the lines costs
	// seconds under -race.)
	written, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	encoded := func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	for _, want := range []string{
		`{"type":"thinking","thinking":` + encoded(strings.Join(thinking, "")) + `,"signature":"sig-0"}`,
		`{"type":"text","text":` + encoded(strings.Join(text, "")) + `}`,
		`"result":` + encoded(strings.Join(text, "")) + `,`,
	} {
		if n := bytes.Count(written, []byte(want)); n != 1 {
			t.Errorf("%.60s... written %d times, want once", want, n)
		}
	}
}
