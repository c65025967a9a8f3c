package sse

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// got is an event as a comparable value, with how the stream went on.
type got struct {
	Type, Data, ID string
	Truncated      bool
}

// decodeAll decodes everything r holds.
func decodeAll(t testing.TB, r io.Reader, max int) ([]got, error) {
	t.Helper()
	d := NewDecoder(r, max)
	var out []got
	for {
		ev, err := d.Next()
		switch {
		case err == nil:
			out = append(out, got{ev.Type, string(ev.Data), ev.ID, false})
		case errors.Is(err, ErrTruncated):
			out = append(out, got{ev.Type, string(ev.Data), ev.ID, true})
		case err == io.EOF:
			return out, nil
		default:
			return out, err
		}
	}
}

// reference interprets a whole stream by the letter of the WHATWG rules,
// in the simplest way, as an oracle for the decoder.
func reference(in []byte) []got {
	s := strings.TrimPrefix(string(in), "\uFEFF")
	var out []got
	var data strings.Builder
	var typ, id string
	hasData := false
	field := func(line string) {
		if line == "" {
			if hasData {
				t := typ
				if t == "" {
					t = "message"
				}
				out = append(out, got{t, strings.TrimSuffix(data.String(), "\n"), id, false})
			}
			data.Reset()
			typ, hasData = "", false
			return
		}
		if line[0] == ':' {
			return
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			typ = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		field(s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	if s != "" {
		field(s) // a last line without its end
	}
	if hasData {
		t := typ
		if t == "" {
			t = "message"
		}
		out = append(out, got{t, strings.TrimSuffix(data.String(), "\n"), id, true})
	}
	return out
}

// chunkReader returns its input in the given pieces, then io.EOF.
type chunkReader struct{ pieces [][]byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.pieces) > 0 && len(c.pieces[0]) == 0 {
		c.pieces = c.pieces[1:]
	}
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pieces[0])
	c.pieces[0] = c.pieces[0][n:]
	return n, nil
}

// split cuts b into pieces at random places chosen by seed.
func split(b []byte, seed uint64) *chunkReader {
	r := rand.New(rand.NewPCG(seed, seed>>1))
	var pieces [][]byte
	for len(b) > 0 {
		n := 1 + r.IntN(min(len(b), 7))
		pieces = append(pieces, b[:n])
		b = b[n:]
	}
	return &chunkReader{pieces}
}

func TestDecoderRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []got
	}{
		{"lf", "event: a\ndata: 1\n\n", []got{{"a", "1", "", false}}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\n", []got{{"a", "1", "", false}}},
		{"bare cr", "event: a\rdata: 1\r\r", []got{{"a", "1", "", false}}},
		{"mixed ends", "data: 1\r\ndata: 2\rdata: 3\n\r\n", []got{{"message", "1\n2\n3", "", false}}},
		{"multi-line data", "data: a\ndata:b\ndata\n\n", []got{{"message", "a\nb\n", "", false}}},
		{"one space stripped", "data:  two\n\n", []got{{"message", " two", "", false}}},
		{"comments", ": hello\n:\ndata: x\n: between\n\n", []got{{"message", "x", "", false}}},
		{"bom", "\uFEFFdata: x\n\n", []got{{"message", "x", "", false}}},
		{"only the first bom", "\uFEFF\uFEFFdata: x\n\n", nil},
		{"no data no event", "event: a\n\ndata: b\n\n", []got{{"message", "b", "", false}}},
		{"empty data dispatches", "data\n\n", []got{{"message", "", "", false}}},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []got{{"message", "a", "7", false}, {"message", "b", "7", false}, {"message", "c", "", false}}},
		{"id with nul ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []got{{"message", "a", "1", false}, {"message", "b", "1", false}}},
		{"unknown field", "foo: bar\ndata: x\n\n", []got{{"message", "x", "", false}}},
		{"field without colon", "data\n\n", []got{{"message", "", "", false}}},
		{"type resets", "event: a\ndata: 1\n\ndata: 2\n\n", []got{{"a", "1", "", false}, {"message", "2", "", false}}},
		{"truncated", "data: 1\n\ndata: 2", []got{{"message", "1", "", false}, {"message", "2", "", true}}},
		{"truncated after line", "data: 2\n", []got{{"message", "2", "", true}}},
		{"trailing comment", "data: 1\n\n: bye", []got{{"message", "1", "", false}}},
		{"utf-8", "data: 日本語 👋\n\n", []got{{"message", "日本語 👋", "", false}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if ref := reference([]byte(tt.in)); !equal(ref, tt.want) {
				t.Fatalf("oracle disagrees with the table:\n%+v\n%+v", ref, tt.want)
			}
			readers := map[string]func() io.Reader{
				"whole":    func() io.Reader { return strings.NewReader(tt.in) },
				"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(tt.in)) },
				"random":   func() io.Reader { return split([]byte(tt.in), 42) },
			}
			for name, r := range readers {
				evs, err := decodeAll(t, r(), 0)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !equal(evs, tt.want) {
					t.Errorf("%s:\ngot  %+v\nwant %+v", name, evs, tt.want)
				}
			}
		})
	}
}

func equal(a, b []got) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A CR at the end of one read and the LF at the start of the next make one
// line end, and the event before them is dispatched without waiting for the
// next read.
func TestDecoderCRLFSplitAcrossReads(t *testing.T) {
	t.Parallel()
	r := &chunkReader{[][]byte{[]byte("data: a\r\n\r"), []byte("\ndata: b\r"), []byte("\n\r\n")}}
	evs, err := decodeAll(t, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{"message", "a", "", false}, {"message", "b", "", false}}
	if !equal(evs, want) {
		t.Fatalf("got %+v, want %+v", evs, want)
	}

	// The event is handed over at the CR, before the next read arrives.
	pr, pw := io.Pipe()
	d := NewDecoder(pr, 0)
	go func() { pw.Write([]byte("data: x\r\r")) }()
	ev, err := d.Next()
	if err != nil || string(ev.Data) != "x" {
		t.Fatalf("got %q, %v", ev.Data, err)
	}
	go func() { pw.Write([]byte("\ndata: y\n\n")); pw.Close() }()
	ev, err = d.Next()
	if err != nil || string(ev.Data) != "y" {
		t.Fatalf("got %q, %v; the LF after the split CR made an empty line", ev.Data, err)
	}
}

func TestDecoderRetryField(t *testing.T) {
	t.Parallel()
	d := NewDecoder(strings.NewReader("retry: 1500\ndata: a\n\nretry: 2x\ndata: b\n\n"), 0)
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	if d.Retry() != 1500*time.Millisecond {
		t.Fatalf("retry = %v", d.Retry())
	}
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	if d.Retry() != 1500*time.Millisecond {
		t.Fatalf("a retry field with a non-digit changed it to %v", d.Retry())
	}
}

func TestDecoderMaxEventSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		max      int
		events   int // before the error
	}{
		{"long line", "data: ok\n\ndata: " + strings.Repeat("x", 100) + "\n\n", 64, 1},
		{"long line without end", "data: " + strings.Repeat("x", 100), 64, 0},
		{"many data lines", strings.Repeat("data: 0123456789\n", 10) + "\n", 64, 0},
		{"long comment", ":" + strings.Repeat("x", 100) + "\n", 64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				d := NewDecoder(r, tt.max)
				n := 0
				var err error
				for err == nil {
					if _, err = d.Next(); err == nil {
						n++
					}
				}
				if !errors.Is(err, model.ErrEventTooLarge) {
					t.Fatalf("err = %v, want ErrEventTooLarge", err)
				}
				if n != tt.events {
					t.Fatalf("%d events before the error, want %d", n, tt.events)
				}
				if len(d.buf) > tt.max+2 {
					t.Fatalf("buffer grew to %d past the maximum %d", len(d.buf), tt.max)
				}
				if _, again := d.Next(); again != err {
					t.Fatalf("error not sticky: %v", again)
				}
			}
		})
	}
	// Exactly the maximum is allowed: a line of 64 bytes, data of 64 bytes.
	evs, err := decodeAll(t, strings.NewReader("data: "+strings.Repeat("x", 58)+"\r\ndata: "+strings.Repeat("y", 4)+"\r\n\r\n"), 64)
	if err != nil || len(evs) != 1 {
		t.Fatalf("event of the maximum size: %v, %v", evs, err)
	}
}

func TestDecoderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom))
	evs, err := decodeAll(t, r, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if want := []got{{"message", "a", "", false}}; !equal(evs, want) {
		t.Fatalf("got %+v: an event cut by a read error was dispatched", evs)
	}
}

func TestDecoderNoProgress(t *testing.T) {
	t.Parallel()
	_, err := NewDecoder(emptyReader{}, 0).Next()
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v", err)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// Every recorded stream decodes to the same events however its bytes are cut
// and whatever its line ends.
func TestDecoderFixtures(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := reference(raw)
			if len(want) < 3 {
				t.Fatalf("oracle found %d events", len(want))
			}
			crlf := bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n"))
			cr := bytes.ReplaceAll(raw, []byte("\n"), []byte("\r"))
			for name, in := range map[string][]byte{"lf": raw, "crlf": crlf, "cr": cr} {
				for rname, r := range map[string]io.Reader{
					"whole":    bytes.NewReader(in),
					"one byte": iotest.OneByteReader(bytes.NewReader(in)),
					"random":   split(in, uint64(len(in))),
				} {
					evs, err := decodeAll(t, r, 0)
					if err != nil {
						t.Fatalf("%s/%s: %v", name, rname, err)
					}
					if !equal(evs, want) {
						t.Fatalf("%s/%s: events differ", name, rname)
					}
				}
			}
		})
	}
}

func FuzzDecoder(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 300)], uint64(1))
	}
	f.Add([]byte("\uFEFFdata: a\r\rid: 1\x00\rdata\r\n:c\n\r"), uint64(7))
	f.Add([]byte("\r\n\r\ndata:x\r"), uint64(3))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		want := reference(in)
		for _, r := range []io.Reader{bytes.NewReader(in), split(in, seed)} {
			evs, err := decodeAll(t, r, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(evs, want) {
				t.Fatalf("got  %+v\nwant %+v", evs, want)
			}
		}
		// A small maximum: either the same events or ErrEventTooLarge,
		// with the buffer bounded.
		const max = 32
		d := NewDecoder(split(in, seed), max)
		for i := 0; ; i++ {
			ev, err := d.Next()
			if err == io.EOF {
				break
			}
			if errors.Is(err, model.ErrEventTooLarge) {
				break
			}
			if err != nil && !errors.Is(err, ErrTruncated) {
				t.Fatal(err)
			}
			if i >= len(want) || string(ev.Data) != want[i].Data || ev.Type != want[i].Type {
				t.Fatalf("event %d differs under a small maximum", i)
			}
			if len(d.buf) > max+2 || len(ev.Data) > max {
				t.Fatalf("grew past the maximum: buffer %d, data %d", len(d.buf), len(ev.Data))
			}
		}
	})
}
