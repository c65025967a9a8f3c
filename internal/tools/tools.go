// Package tools holds sluice's built-in tools — Bash, Read, Write, Edit, Glob
// and Grep — with the names and input schemas of Claude Code's tools, which
// models are trained on.
//
// File tools resolve every path (absolute, or relative to the working
// directory) to a cleaned, symlink-free path and refuse one that is not
// inside the working directory or an allowed directory with
// tool.ErrOutsideWorkDir. Bash is not confined: it runs what it is given, in
// the working directory, and approval is the permission policy's business.
//
// Every tool is safe for concurrent use: a call keeps its state on its own
// stack, and the tools' fields are configuration read, never written, by Run.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/tool"
)

// Errors of the built-in tools, wrapped with the detail of the call.
var (
	// ErrInvalidParams is returned for input that does not fit the schema.
	ErrInvalidParams = errors.New("invalid parameters")
	// ErrIsDirectory is returned when a file tool is given a directory.
	ErrIsDirectory = errors.New("is a directory")
	// ErrNotDirectory is returned when a search is given a file where it
	// needs a directory.
	ErrNotDirectory = errors.New("not a directory")
	// ErrBinaryFile is returned when Read is given a file that is not text.
	ErrBinaryFile = errors.New("binary file")
	// ErrNoWorkDir is returned when the environment has no working directory.
	ErrNoWorkDir = errors.New("no working directory")
)

// Files reads and writes whole text files for Read, Write and Edit when
// they should not use the local disk directly: an editor that holds unsaved
// buffers (the Agent Client Protocol's fs/read_text_file and
// fs/write_text_file). Paths reach it resolved and checked against the
// working directory. Nil fields mean the local disk.
type Files interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

// Builtins returns the built-in tools, showing paths in Compact as the
// model gave them.
func Builtins() []tool.Tool { return BuiltinsIn("") }

// BuiltinsIn returns the built-in tools, showing paths in Compact
// relative to workDir when they are inside it. workDir only affects display:
// calls run in their Env's WorkDir.
func BuiltinsIn(workDir string) []tool.Tool {
	shells := &Shells{}
	return []tool.Tool{
		&Bash{Shells: shells},
		&Read{DisplayDir: workDir},
		&Write{DisplayDir: workDir},
		&Edit{DisplayDir: workDir},
		&Glob{DisplayDir: workDir},
		&Grep{DisplayDir: workDir},
		&TodoWrite{},
		&WebFetch{},
		&BashOutput{Shells: shells},
		&KillShell{Shells: shells},
	}
}

// NewBash returns a Bash tool with the default limits (the zero Bash).
func NewBash() *Bash { return &Bash{} }

// NewRead returns a Read tool (the zero Read).
func NewRead() *Read { return &Read{} }

// NewWrite returns a Write tool (the zero Write).
func NewWrite() *Write { return &Write{} }

// NewEdit returns an Edit tool (the zero Edit).
func NewEdit() *Edit { return &Edit{} }

// NewGlob returns a Glob tool with the default limits (the zero Glob).
func NewGlob() *Glob { return &Glob{} }

// NewGrep returns a Grep tool with the default limits (the zero Grep).
func NewGrep() *Grep { return &Grep{} }

// decode unmarshals params strictly enough to catch a model's mistakes: the
// input must be one JSON object; unknown fields are tolerated because models
// add harmless extras.
func decode(params json.RawMessage, v any) error {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || p[0] != '{' {
		return fmt.Errorf("%w: want a JSON object", ErrInvalidParams)
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidParams, err)
	}
	return nil
}

// displayPath shows p relative to dir when p is inside it, else as given.
func displayPath(dir, p string) string {
	if p == "" || dir == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// compactPath is the Compact of the file tools: their path parameter, shown
// relative to dir.
func compactPath(dir string, params json.RawMessage) string {
	var in struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	return displayPath(dir, in.FilePath)
}

// countLines counts lines the way an editor shows them: a final line without
// a newline counts, an empty text has none.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// plural returns "1 line" or "n lines" ("n matches").
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") {
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
