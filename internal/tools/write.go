package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// newFileMode is the mode of a file Write or Edit creates. (Honouring the
// umask would mean changing it process-wide to read it.)
const newFileMode fs.FileMode = 0o644

// Write creates or replaces a file with the given content.
type Write struct {
	// DisplayDir is the directory Compact shows paths relative to.
	DisplayDir string
	// Files, when set, is where the file is written instead of the disk.
	Files Files
}

type writeInput struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

// Name implements tool.Tool.
func (*Write) Name() string { return "Write" }

// Kind implements tool.Tool.
func (*Write) Kind() tool.Kind { return tool.Edit }

// Description implements tool.Tool.
func (*Write) Description() string {
	return `Writes a file: creates it (and its missing parent directories) or replaces its whole content.

- file_path is absolute, or relative to the working directory.
- To change part of an existing file, use Edit: it sends only the change. Read a file before replacing it, so nothing in it is lost by accident.
- The file is replaced atomically: readers see the old content or the new one, never half of it.
- Do not create documentation or README files unless asked to.`
}

// Schema implements tool.Tool.
func (*Write) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to write (absolute, or relative to the working directory)"},
    "content": {"type": "string", "description": "The whole content to write to the file"}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the path.
func (w *Write) Compact(params json.RawMessage) string { return compactPath(w.DisplayDir, params) }

// TargetPath is the path the call would change, for the permission policy.
func (*Write) TargetPath(params json.RawMessage) string { return targetPath(params) }

// Run implements tool.Tool.
func (w *Write) Run(ctx context.Context, env *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in writeInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("write: %w", err)
	}
	if in.Content == nil {
		return tool.Result{}, fmt.Errorf("write: %w: content is missing", ErrInvalidParams)
	}
	path, err := ResolvePath(env, in.FilePath)
	if err != nil {
		return tool.Result{}, fmt.Errorf("write: %w", err)
	}
	mode, existed, err := existingMode(path)
	if err != nil {
		return tool.Result{}, fmt.Errorf("write: %w", err)
	}
	before, known := "", !existed
	if existed {
		before, known = w.Replaced(ctx, env, params, maxFileData)
	}
	if err := saveFile(ctx, w.Files, path, *in.Content, mode); err != nil {
		return tool.Result{}, fmt.Errorf("write: %w", err)
	}
	var file *protocol.ToolFile
	if known {
		file = changed(path, before, *in.Content, !existed)
	}
	n := plural(countLines(*in.Content), "line")
	verb := "Created"
	if existed {
		verb = "Updated"
	}
	return tool.Result{
		Content: fmt.Sprintf("%s %s (%s).", verb, path, n),
		Summary: fmt.Sprintf("Wrote %s to %s", n, workRel(env, path)),
		File:    file,
	}, nil
}

// Replaced implements tool.Replacer: the file's current text, read where
// Run would write it (the client's buffer when Files is set).
func (w *Write) Replaced(ctx context.Context, env *tool.Env, params json.RawMessage, max int) (string, bool) {
	var in writeInput
	if decode(params, &in) != nil {
		return "", false
	}
	path, err := ResolvePath(env, in.FilePath)
	if err != nil {
		return "", false
	}
	var text string
	if w.Files != nil {
		if text, err = w.Files.ReadTextFile(ctx, path); err != nil {
			return "", false
		}
	} else {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(max) {
			return "", false
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		text = string(data)
	}
	if len(text) > max || !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0 {
		return "", false
	}
	return text, true
}

// targetPath is the file_path parameter of Write and Edit.
func targetPath(params json.RawMessage) string {
	var in struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(params, &in) // Bad params fail in Run.
	return in.FilePath
}

// existingMode returns the permissions of the file at path, or newFileMode
// when there is none yet. Anything but a regular file is refused.
func existingMode(path string) (mode fs.FileMode, existed bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newFileMode, false, nil
	case err != nil:
		return 0, false, err
	case fi.IsDir():
		return 0, false, fmt.Errorf("%s: %w", path, ErrIsDirectory)
	case !fi.Mode().IsRegular():
		return 0, false, fmt.Errorf("%s: %w: not a regular file", path, ErrInvalidParams)
	}
	return fi.Mode().Perm(), true, nil
}

// saveFile writes content to path through files when set, else to the
// disk (writeFile).
func saveFile(ctx context.Context, files Files, path, content string, mode fs.FileMode) error {
	if files != nil {
		return files.WriteTextFile(ctx, path, content)
	}
	return writeFile(path, []byte(content), mode)
}

// writeFile replaces path atomically: it writes a temporary file in the same
// directory, syncs it and renames it over path, creating missing parent
// directories first.
func writeFile(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// workRel shows a resolved path relative to the (resolved) working directory
// when it is inside it.
func workRel(env *tool.Env, path string) string {
	work, err := filepath.Abs(env.WorkDir)
	if err != nil {
		return path
	}
	if w, err := resolveLinks(work); err == nil {
		work = w
	}
	return displayPath(work, path)
}
