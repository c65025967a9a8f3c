package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// Read limits.
const (
	// DefaultReadLimit is how many lines Read shows when the call gives no
	// limit.
	DefaultReadLimit = 2000
	// MaxLineChars is where Read cuts a long line.
	MaxLineChars = 2000
	// maxReadOutput bounds what one Read returns, whatever the limit.
	maxReadOutput = 256 * 1024
	// sniffLen is how much of a file decides whether it is text.
	sniffLen = 8000
)

// Read shows a text file with numbered lines, as cat -n does.
type Read struct {
	// DisplayDir is the directory Compact shows paths relative to.
	DisplayDir string
	// Files, when set, is where the file is read from instead of the disk.
	Files Files
}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   *int   `json:"offset,omitempty"`
	Limit    *int   `json:"limit,omitempty"`
}

// Name implements tool.Tool.
func (*Read) Name() string { return "Read" }

// Kind implements tool.Tool.
func (*Read) Kind() tool.Kind { return tool.ReadOnly }

// Description implements tool.Tool.
func (*Read) Description() string {
	return `Reads a text file and returns its lines numbered as cat -n does (line number, tab, line).

- file_path is absolute, or relative to the working directory.
- By default up to 2000 lines from the start; for long files, pass offset (the 1-based line to start at) and limit (how many lines).
- Lines longer than 2000 characters are cut.
- The line numbers are not part of the file: leave them out of any text you pass to Edit.
- Directories and binary files are refused: list directories with Glob or Bash ls.
- Reading several files that may be relevant in one turn, in parallel, is fine.`
}

// Schema implements tool.Tool.
func (*Read) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to read (absolute, or relative to the working directory)"},
    "offset": {"type": "number", "description": "The line number to start reading from (1-based). Use it for files too long to read at once"},
    "limit": {"type": "number", "description": "The number of lines to read. Use it for files too long to read at once"}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the path.
func (r *Read) Compact(params json.RawMessage) string { return compactPath(r.DisplayDir, params) }

// Run implements tool.Tool.
func (r *Read) Run(ctx context.Context, env *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in readInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("read: %w", err)
	}
	start, limit := 1, DefaultReadLimit
	if in.Offset != nil && *in.Offset > 1 {
		start = *in.Offset
	}
	if in.Limit != nil {
		if *in.Limit <= 0 {
			return tool.Result{}, fmt.Errorf("read: %w: limit must be positive", ErrInvalidParams)
		}
		limit = *in.Limit
	}
	path, err := ResolvePath(env, in.FilePath)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read: %w", err)
	}
	src, err := r.open(ctx, path)
	if err != nil {
		return tool.Result{}, fmt.Errorf("read: %w", err)
	}
	defer src.Close()
	br := bufio.NewReaderSize(src, 64*1024)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return tool.Result{}, fmt.Errorf("read: %w", err)
	}
	if looksBinary(head) {
		return tool.Result{}, fmt.Errorf("read: %s: %w: Read shows text files only", path, ErrBinaryFile)
	}
	if len(head) == 0 {
		return tool.Result{Content: "The file exists but is empty.", Summary: "Read 0 lines"}, nil
	}

	var sb, text strings.Builder
	total, shown, capped, ended := 0, 0, false, false
	for {
		line, more, nl, err := readLine(br)
		if err != nil {
			return tool.Result{}, fmt.Errorf("read: %w", err)
		}
		if !more {
			break
		}
		total, ended = total+1, nl
		if total%4096 == 0 && ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("read: %w", ctx.Err())
		}
		if total < start || shown >= limit || capped {
			continue
		}
		if sb.Len() > maxReadOutput {
			capped = true
			continue
		}
		fmt.Fprintf(&sb, "%6d\t%s\n", total, line)
		text.WriteString(line)
		if nl {
			text.WriteByte('\n')
		}
		shown++
	}
	if shown == 0 {
		return tool.Result{
			Content: fmt.Sprintf("The file has %s; offset %d is past its end.", plural(total, "line"), start),
			Summary: "Read 0 lines",
		}, nil
	}
	content := strings.TrimSuffix(sb.String(), "\n")
	if last := start + shown - 1; last < total {
		why := ""
		if capped {
			why = " (output limit reached)"
		}
		content += fmt.Sprintf("\n\n(Showing lines %d-%d of %d%s. Pass offset=%d to read on.)", start, last, total, why, last+1)
	}
	return tool.Result{
		Content: content, Summary: "Read " + plural(shown, "line"),
		File: &protocol.ToolFile{
			Path: path, Text: text.String(), StartLine: start, Lines: shown, TotalLines: total,
			FinalNewline: ended, Limited: shown == limit || capped,
		},
	}, nil
}

// open opens the file at path: through Files when set, else from the disk,
// refusing directories and what is not a regular file.
func (r *Read) open(ctx context.Context, path string) (io.ReadCloser, error) {
	if r.Files != nil {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s: %w (list it with Glob or Bash ls)", path, ErrIsDirectory)
		}
		text, err := r.Files.ReadTextFile(ctx, path)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader(text)), nil
	}
	// Stat before opening: opening a FIFO would block.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: %w (list it with Glob or Bash ls)", path, ErrIsDirectory)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or a device could block or never end.
		return nil, fmt.Errorf("%s: %w: not a regular file", path, ErrInvalidParams)
	}
	return os.Open(path)
}

// readLine reads one line without its line ending, keeping at most
// MaxLineChars characters (and a marker when it cut some). more is false at
// the end of the file; ended says that a newline ended the line. Memory
// stays bounded however long the line is.
func readLine(br *bufio.Reader) (line string, more, ended bool, err error) {
	const keepBytes = MaxLineChars * utf8.UTFMax
	var kept []byte
	read := false
	for {
		chunk, err := br.ReadSlice('\n')
		read = read || len(chunk) > 0
		if room := keepBytes - len(kept); room > 0 {
			kept = append(kept, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, false, err
		}
		if !read {
			return "", false, false, nil
		}
		kept = bytes.TrimSuffix(bytes.TrimSuffix(kept, []byte("\n")), []byte("\r"))
		return cutChars(string(kept), MaxLineChars), true, err == nil, nil
	}
}

// cutChars cuts s after n characters, marking the cut.
func cutChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + " … [line cut]"
		}
		i++
	}
	return s
}

// looksBinary guesses from a file's first bytes whether it is binary: a NUL
// byte, a PDF header, or more than one byte in ten that is neither valid
// UTF-8 nor a usual control character.
func looksBinary(p []byte) bool {
	if bytes.IndexByte(p, 0) >= 0 || bytes.HasPrefix(p, []byte("%PDF-")) {
		return true
	}
	p = p[:completeRunes(p)]
	n, odd := len(p), 0
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		p = p[size:]
		switch {
		case r == utf8.RuneError && size == 1:
			odd++
		case r < 0x20 && !strings.ContainsRune("\t\n\r\f\v\b\x1b", r), r == 0x7f:
			odd++
		}
	}
	return odd*10 > n
}
