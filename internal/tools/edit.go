package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/sluicehq/sluice/tool"
)

// snippetContext is how many lines around a change Edit shows the model.
const (
	snippetContext  = 4
	snippetMaxLines = 40
)

// Edit replaces exact text in a file.
type Edit struct {
	// DisplayDir is the directory Compact shows paths relative to.
	DisplayDir string
	// Files, when set, is where the file is read and written instead of
	// the disk.
	Files Files
}

type editInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// Name implements tool.Tool.
func (*Edit) Name() string { return "Edit" }

// Kind implements tool.Tool.
func (*Edit) Kind() tool.Kind { return tool.Edit }

// Description implements tool.Tool.
func (*Edit) Description() string {
	return `Replaces exact text in a file: old_string becomes new_string.

- file_path is absolute, or relative to the working directory. Read the file first, so that old_string is its current text.
- old_string must match the file exactly, whitespace and indentation included, and without the line-number prefixes that Read shows.
- old_string must occur exactly once: include enough surrounding lines to make it unique. To change every occurrence (renaming a variable, say), set replace_all to true.
- With an empty old_string, Edit creates a file that does not exist yet (or fills an empty one) with new_string.
- The result shows the edited lines with their numbers.`
}

// Schema implements tool.Tool.
func (*Edit) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to change (absolute, or relative to the working directory)"},
    "old_string": {"type": "string", "description": "The exact text to replace"},
    "new_string": {"type": "string", "description": "The text to replace it with (must differ from old_string)"},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string (default false)"}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the path.
func (e *Edit) Compact(params json.RawMessage) string { return compactPath(e.DisplayDir, params) }

// TargetPath is the path the call would change, for the permission policy.
func (*Edit) TargetPath(params json.RawMessage) string { return targetPath(params) }

// Run implements tool.Tool. An old_string that is missing, or ambiguous
// without replace_all, gives a result with IsError set that tells the model
// what to do.
func (e *Edit) Run(ctx context.Context, env *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in editInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("edit: %w", err)
	}
	if in.OldString == in.NewString {
		return tool.Result{}, fmt.Errorf("edit: %w: old_string and new_string are identical; there is nothing to change", ErrInvalidParams)
	}
	path, err := ResolvePath(env, in.FilePath)
	if err != nil {
		return tool.Result{}, fmt.Errorf("edit: %w", err)
	}
	mode, existed, err := existingMode(path)
	if err != nil {
		return tool.Result{}, fmt.Errorf("edit: %w", err)
	}
	var data []byte
	switch {
	case e.Files != nil:
		// The editor may hold a buffer for a file not saved yet.
		text, rerr := e.Files.ReadTextFile(ctx, path)
		if rerr == nil {
			data, existed = []byte(text), true
		} else if existed {
			return tool.Result{}, fmt.Errorf("edit: %w", rerr)
		}
	case existed:
		if data, err = os.ReadFile(path); err != nil {
			return tool.Result{}, fmt.Errorf("edit: %w", err)
		}
	}
	rel := workRel(env, path)
	if in.OldString == "" {
		if len(data) > 0 {
			return tool.Result{IsError: true, Content: fmt.Sprintf(
				"old_string is empty, but %s is not: an empty old_string only creates a new file. Give the text to replace, or use Write to replace the whole file.", path)}, nil
		}
		if err := saveFile(ctx, e.Files, path, in.NewString, mode); err != nil {
			return tool.Result{}, fmt.Errorf("edit: %w", err)
		}
		n := plural(countLines(in.NewString), "line")
		return tool.Result{
			Content: fmt.Sprintf("Created %s (%s).", path, n),
			Summary: fmt.Sprintf("Wrote %s to %s", n, rel),
			File:    changed(path, "", in.NewString, !existed),
		}, nil
	}
	if !existed {
		return tool.Result{}, fmt.Errorf("edit: %s: %w", path, fs.ErrNotExist)
	}

	content := string(data)
	old, repl := in.OldString, in.NewString
	count := strings.Count(content, old)
	if count == 0 && strings.Contains(content, "\r\n") && strings.Contains(old, "\n") {
		// Models write "\n"; a file with Windows line ends has "\r\n".
		old = toCRLF(old)
		repl = toCRLF(repl)
		count = strings.Count(content, old)
	}
	switch {
	case count == 0:
		return tool.Result{IsError: true, Content: fmt.Sprintf(
			"old_string was not found in %s. It must match the file exactly, whitespace and indentation included; Read the file again to see its current text.", path)}, nil
	case count > 1 && !in.ReplaceAll:
		return tool.Result{IsError: true, Content: fmt.Sprintf(
			"old_string was found %d times in %s. Include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence.", count, path)}, nil
	}
	at := strings.Index(content, old)
	times := 1
	if in.ReplaceAll {
		times = -1
	}
	updated := strings.Replace(content, old, repl, times)
	if err := saveFile(ctx, e.Files, path, updated, mode); err != nil {
		return tool.Result{}, fmt.Errorf("edit: %w", err)
	}
	n := plural(count, "occurrence")
	first := strings.Count(updated[:at], "\n") + 1
	last := first + max(countLines(repl), 1) - 1
	return tool.Result{
		Content: fmt.Sprintf("Edited %s: replaced %s. The first change and the lines around it:\n%s",
			path, n, numberedLines(updated, first-snippetContext, last+snippetContext)),
		Summary: fmt.Sprintf("Replaced %s in %s", n, rel),
		File:    changed(path, content, updated, false),
	}, nil
}

// toCRLF turns every line end of s into "\r\n".
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// numberedLines shows lines from..to (1-based, clamped, at most
// snippetMaxLines) of text as Read does.
func numberedLines(text string, from, to int) string {
	from = max(from, 1)
	to = min(to, from+snippetMaxLines-1)
	var sb strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n := i + 1
		if n < from {
			continue
		}
		if n > to {
			break
		}
		fmt.Fprintf(&sb, "%6d\t%s\n", n, cutChars(strings.TrimSuffix(line, "\r"), MaxLineChars))
	}
	return strings.TrimSuffix(sb.String(), "\n")
}
