package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// as reads n 'a's.
type as struct{ n int }

func (r *as) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = 'a'
	}
	r.n -= k
	return k, nil
}

func TestJoinStdinPrompt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg, stdin, want string
	}{
		{"-", "from stdin\n", "from stdin"},
		{"", "from stdin\n", "from stdin"},
		{"Summarise:", "a\nb\n", "Summarise:\na\nb"},
		{"just the argument", "", "just the argument"},
	}
	for _, tt := range tests {
		got, err := joinStdinPrompt(tt.arg, strings.NewReader(tt.stdin))
		if err != nil || got != tt.want {
			t.Errorf("joinStdinPrompt(%q, %q) = %q, %v; want %q", tt.arg, tt.stdin, got, err, tt.want)
		}
	}
}

// A prompt on stdin past the bound is an error, never cut.
func TestStdinPromptTooLong(t *testing.T) {
	t.Parallel()
	if _, err := joinStdinPrompt("", &as{n: maxStdinPrompt + 1}); err == nil || !strings.Contains(err.Error(), "longer than 64 MiB") {
		t.Fatalf("err = %v, want the prompt too long", err)
	}
	got, err := joinStdinPrompt("", io.MultiReader(&as{n: maxStdinPrompt - 1}, bytes.NewReader([]byte("\n"))))
	if err != nil || len(got) != maxStdinPrompt-1 {
		t.Fatalf("a prompt of exactly the bound: %d bytes, %v", len(got), err)
	}
}
