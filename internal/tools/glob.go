package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sluicehq/sluice/tool"
)

// DefaultMaxGlobResults is how many paths Glob returns at most.
const DefaultMaxGlobResults = 100

// Glob finds files whose path matches a pattern, newest first.
type Glob struct {
	// DisplayDir is the directory Compact shows paths relative to.
	DisplayDir string
	// MaxResults bounds the paths returned; 0 means DefaultMaxGlobResults.
	MaxResults int
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

// Name implements tool.Tool.
func (*Glob) Name() string { return "Glob" }

// Kind implements tool.Tool.
func (*Glob) Kind() tool.Kind { return tool.ReadOnly }

// Description implements tool.Tool.
func (*Glob) Description() string {
	return `Finds files by name with a glob pattern, such as "**/*.go" or "src/**/*.{ts,tsx}".

- ** matches any number of directories, * any part of a name, ? one character, {a,b} either alternative, [abc] a character class.
- The pattern is matched against paths relative to path (the working directory by default).
- Returns absolute paths, most recently modified first, at most 100; .git directories are skipped.
- To search file contents, use Grep. Several searches that may be useful can run in one turn, in parallel.`
}

// Schema implements tool.Tool.
func (*Glob) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The glob pattern to match files against"},
    "path": {"type": "string", "description": "The directory to search in (default: the working directory). Omit it rather than passing \"null\" or \"undefined\""}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the pattern, and the directory when given.
func (g *Glob) Compact(params json.RawMessage) string {
	var in globInput
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	if in.Path != "" {
		return in.Pattern + " in " + displayPath(g.DisplayDir, in.Path)
	}
	return in.Pattern
}

// Run implements tool.Tool.
func (g *Glob) Run(ctx context.Context, env *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in globInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("glob: %w", err)
	}
	if in.Pattern == "" {
		return tool.Result{}, fmt.Errorf("glob: %w: pattern is empty", ErrInvalidParams)
	}
	dir, pattern := ".", filepath.ToSlash(in.Pattern)
	if in.Path != "" {
		// A directory named by the call must exist; one named by the
		// pattern's prefix may not (then nothing matches).
		root, err := searchRoot(env, in.Path)
		if err != nil {
			return tool.Result{}, fmt.Errorf("glob: %w", err)
		}
		dir = root
	}
	// Walk only below the pattern's fixed prefix ("src/**/*.go": src); an
	// absolute pattern names its own directory.
	prefix, rest := doublestar.SplitPattern(pattern)
	if filepath.IsAbs(prefix) {
		dir = prefix
	} else {
		dir = filepath.Join(dir, prefix)
	}
	if !doublestar.ValidatePattern(rest) {
		return tool.Result{}, fmt.Errorf("glob: %w: bad pattern %q", ErrInvalidParams, in.Pattern)
	}
	root, err := searchRoot(env, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return tool.Result{Content: "No files found", Summary: "Found 0 files"}, nil
	}
	if err != nil {
		return tool.Result{}, fmt.Errorf("glob: %w", err)
	}

	type match struct {
		path string
		mod  time.Time
	}
	var found []match
	err = walkFiles(ctx, root, true, func(path, rel string, d fs.DirEntry) error {
		if !doublestar.MatchUnvalidated(rest, rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // Gone since it was listed.
		}
		found = append(found, match{path, info.ModTime()})
		return nil
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("glob: %w", err)
	}
	slices.SortFunc(found, func(a, b match) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return cmp.Compare(a.path, b.path)
	})
	if len(found) == 0 {
		return tool.Result{Content: "No files found", Summary: "Found 0 files"}, nil
	}
	limit := orDefault(g.MaxResults, DefaultMaxGlobResults)
	var sb strings.Builder
	for i, m := range found[:min(limit, len(found))] {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(m.path)
	}
	if len(found) > limit {
		fmt.Fprintf(&sb, "\n(Showing the %d most recently modified of %d files. Use a more specific pattern or path.)", limit, len(found))
	}
	return tool.Result{Content: sb.String(), Summary: "Found " + plural(len(found), "file")}, nil
}

// searchRoot resolves a search's directory, which must exist.
func searchRoot(env *tool.Env, dir string) (string, error) {
	root, err := ResolvePath(env, dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: %w", root, ErrNotDirectory)
	}
	return root, nil
}

// walkFiles calls fn for every file below root in lexical order, with its
// path and its slash-separated path relative to root; .git directories are
// skipped and symlinks are not followed (with links false, they are not
// reported either). Unreadable directories are skipped; the walk stops when
// ctx is done or fn fails.
func walkFiles(ctx context.Context, root string, links bool, fn func(path, rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // Unreadable: skip it, as rg and find do.
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 && !links {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(path, filepath.ToSlash(rel), d)
	})
}
