package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// bufferFiles is a client's editor: its buffers, by absolute path.
type bufferFiles map[string]string

func (b bufferFiles) ReadTextFile(_ context.Context, path string) (string, error) {
	text, ok := b[path]
	if !ok {
		return "", errors.New("no such buffer")
	}
	return text, nil
}

func (b bufferFiles) WriteTextFile(_ context.Context, path, content string) error {
	b[path] = content
	return nil
}

// Write reports the text a call would replace, read where it would write,
// within the bound; nothing for a new file, a binary or too large one.
func TestWriteReplaced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		disk    map[string]string
		buffers map[string]string // relative paths; nil: the disk
		params  string
		max     int
		want    string
		wantOK  bool
	}{
		{name: "existing file", disk: map[string]string{"a.txt": "old\ntext\n"}, params: `{"file_path":"a.txt","content":"new"}`, max: 100, want: "old\ntext\n", wantOK: true},
		{name: "empty file", disk: map[string]string{"a.txt": ""}, params: `{"file_path":"a.txt","content":"new"}`, max: 100, wantOK: true},
		{name: "new file", params: `{"file_path":"a.txt","content":"new"}`, max: 100},
		{name: "at the bound", disk: map[string]string{"a.txt": "12345"}, params: `{"file_path":"a.txt","content":"x"}`, max: 5, want: "12345", wantOK: true},
		{name: "over the bound", disk: map[string]string{"a.txt": "123456"}, params: `{"file_path":"a.txt","content":"x"}`, max: 5},
		{name: "binary", disk: map[string]string{"a.bin": "\x00\x01\x02"}, params: `{"file_path":"a.bin","content":"x"}`, max: 100},
		{name: "not UTF-8", disk: map[string]string{"a.txt": "caf\xe9"}, params: `{"file_path":"a.txt","content":"x"}`, max: 100},
		{name: "directory", disk: map[string]string{"d/f": "x"}, params: `{"file_path":"d","content":"x"}`, max: 100},
		{name: "outside", params: `{"file_path":"../a.txt","content":"x"}`, max: 100},
		{name: "bad params", params: `[1]`, max: 100},
		{name: "the editor's buffer, not the disk", disk: map[string]string{"a.txt": "saved"}, buffers: map[string]string{"a.txt": "unsaved"},
			params: `{"file_path":"a.txt","content":"x"}`, max: 100, want: "unsaved", wantOK: true},
		{name: "no buffer", buffers: map[string]string{}, params: `{"file_path":"a.txt","content":"x"}`, max: 100},
		{name: "buffer over the bound", buffers: map[string]string{"a.txt": "123456"}, params: `{"file_path":"a.txt","content":"x"}`, max: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, env := workDir(t)
			writeFiles(t, dir, tt.disk)
			w := &Write{}
			if tt.buffers != nil {
				b := bufferFiles{}
				for rel, text := range tt.buffers {
					path, err := ResolvePath(env, rel)
					if err != nil {
						t.Fatal(err)
					}
					b[path] = text
				}
				w.Files = b
			}
			got, ok := w.Replaced(t.Context(), env, json.RawMessage(tt.params), tt.max)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Replaced = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
