package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads messages until EOF, recording oversize lines as "!".
func readAll(t testing.TB, c *LineConn) []string {
	var out []string
	for {
		line, err := c.Read(context.Background())
		switch {
		case err == nil:
			out = append(out, string(line))
		case errors.Is(err, ErrMessageTooLarge):
			out = append(out, "!")
		case errors.Is(err, io.EOF):
			return out
		default:
			t.Fatalf("read: %v", err)
		}
	}
}

// splitLines is the reference framing: lines split at "\n", a trailing
// "\r" dropped, blank lines skipped, lines over max (before dropping "\r")
// reported as "!".
func splitLines(data []byte, max int) []string {
	var out []string
	parts := bytes.Split(data, []byte{'\n'})
	if len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1]
	}
	for _, p := range parts {
		if len(p) > max {
			out = append(out, "!")
			continue
		}
		p = bytes.TrimSuffix(p, []byte{'\r'})
		if len(bytes.TrimSpace(p)) == 0 {
			continue
		}
		out = append(out, string(p))
	}
	return out
}

func TestLineConnFraming(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 200<<10) // longer than the bufio buffer
	cases := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"lines", "a\nb\n", 10, []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", 10, []string{"a", "b"}},
		{"last line without newline", "a\nb", 10, []string{"a", "b"}},
		{"blank lines", "\n\r\n  \na\n\n", 10, []string{"a"}},
		{"exactly the limit", "12345\n", 5, []string{"12345"}},
		{"over the limit", "123456\nok\n", 5, []string{"!", "ok"}},
		{"over the limit at EOF", "ok\n123456", 5, []string{"ok", "!"}},
		{"long line within the limit", long + "\n", len(long), []string{long}},
		{"long line over the limit", long + "\nnext\n", 1000, []string{"!", "next"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
				got := readAll(t, NewLineConn(r, io.Discard, c.max))
				if strings.Join(got, "|") != strings.Join(c.want, "|") {
					t.Fatalf("got %q, want %q", got, c.want)
				}
			}
		})
	}
}

func TestLineConnWriteAndClose(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := NewLineConn(strings.NewReader(""), &buf, 0)
	if err := c.Write(context.Background(), []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "{\"a\":1}\n" {
		t.Fatalf("wrote %q", buf.String())
	}
	c.Close()
	c.Close()
	if err := c.Write(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLineConn(strings.NewReader("a\n"), io.Discard, 0).Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a done context: %v", err)
	}
}

func TestCloseUnblocksARead(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	c := NewLineConn(r, io.Discard, 0)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	c.Close()
	if err := <-done; err == nil {
		t.Fatal("read returned a message after Close")
	}
}

func FuzzLineConn(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n c \n"), uint16(3), uint8(1))
	f.Add([]byte("12345\n123456\r\n1234\r"), uint16(5), uint8(2))
	f.Add([]byte("\r\r\n\n\r"), uint16(1), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, max uint16, chunk uint8) {
		limit := int(max%64) + 1
		var r io.Reader = bytes.NewReader(data)
		if chunk%2 == 1 {
			r = iotest.OneByteReader(r)
		} else if chunk%3 == 0 {
			r = iotest.HalfReader(r)
		}
		got := readAll(t, NewLineConn(r, io.Discard, limit))
		want := splitLines(data, limit)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("limit %d: got %q, want %q", limit, got, want)
		}
	})
}
