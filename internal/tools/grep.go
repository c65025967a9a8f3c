package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/sluicehq/sluice/tool"
)

// Grep limits.
const (
	// DefaultMaxGrepFileSize is the size above which Grep skips a file.
	DefaultMaxGrepFileSize = 10 << 20
	// DefaultMaxGrepOutput bounds Grep's output in bytes.
	DefaultMaxGrepOutput = 50000
)

// Grep output modes, as ripgrep's flags and Claude Code's tool name them.
const (
	grepContent = "content"
	grepFiles   = "files_with_matches"
	grepCount   = "count"
)

// fileTypes maps Grep's type parameter to file name globs, after ripgrep's
// --type names (the common ones). Built when Grep first needs it: as a
// package-level map literal every command built it at init (3.7 KB).
var fileTypes = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"c":        {"*.c", "*.h"},
		"cpp":      {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"},
		"cs":       {"*.cs"},
		"css":      {"*.css", "*.scss", "*.sass", "*.less"},
		"go":       {"*.go"},
		"html":     {"*.html", "*.htm"},
		"java":     {"*.java"},
		"js":       {"*.js", "*.jsx", "*.mjs", "*.cjs"},
		"json":     {"*.json", "*.jsonl"},
		"kotlin":   {"*.kt", "*.kts"},
		"lua":      {"*.lua"},
		"make":     {"Makefile", "makefile", "GNUmakefile", "*.mk"},
		"md":       {"*.md", "*.markdown"},
		"markdown": {"*.md", "*.markdown"},
		"php":      {"*.php"},
		"proto":    {"*.proto"},
		"py":       {"*.py", "*.pyi"},
		"python":   {"*.py", "*.pyi"},
		"rb":       {"*.rb"},
		"ruby":     {"*.rb"},
		"rs":       {"*.rs"},
		"rust":     {"*.rs"},
		"scala":    {"*.scala"},
		"sh":       {"*.sh", "*.bash", "*.zsh"},
		"sql":      {"*.sql"},
		"swift":    {"*.swift"},
		"toml":     {"*.toml"},
		"ts":       {"*.ts", "*.tsx", "*.mts", "*.cts"},
		"txt":      {"*.txt"},
		"xml":      {"*.xml"},
		"yaml":     {"*.yaml", "*.yml"},
	}
})

// Grep searches file contents with a regular expression.
type Grep struct {
	// DisplayDir is the directory Compact shows paths relative to.
	DisplayDir string
	// MaxFileSize is the size above which a file is skipped; 0 means
	// DefaultMaxGrepFileSize.
	MaxFileSize int64
	// MaxOutput bounds the output in bytes; 0 means DefaultMaxGrepOutput.
	MaxOutput int
}

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	Type       string `json:"type,omitempty"`
	OutputMode string `json:"output_mode,omitempty"`
	IgnoreCase bool   `json:"-i,omitempty"`
	LineNums   *bool  `json:"-n,omitempty"`
	After      *int   `json:"-A,omitempty"`
	Before     *int   `json:"-B,omitempty"`
	Context    *int   `json:"-C,omitempty"`
	HeadLimit  *int   `json:"head_limit,omitempty"`
	Offset     *int   `json:"offset,omitempty"`
	Multiline  bool   `json:"multiline,omitempty"`
}

// Name implements tool.Tool.
func (*Grep) Name() string { return "Grep" }

// Kind implements tool.Tool.
func (*Grep) Kind() tool.Kind { return tool.ReadOnly }

// Description implements tool.Tool.
func (*Grep) Description() string {
	return `Searches file contents with a regular expression (RE2 syntax, as in Go and close to ripgrep's).

- Use Grep for every content search rather than grep or rg in Bash.
- Regular expression syntax: "log.*Error", "func\\s+\\w+". Braces and other special characters must be escaped to match literally: interface\\{\\} finds interface{}.
- path is a file or a directory (the working directory by default). Filter files with glob ("*.js", "**/*.{ts,tsx}", "!*_test.go" to exclude) or type ("go", "js", "ts", "py", "rust", "md", ...).
- output_mode: "files_with_matches" (the default) lists matching files, most recently modified first; "content" shows matching lines ("-n" line numbers, on by default; "-A", "-B", "-C" context lines); "count" shows the number of matching lines per file.
- head_limit keeps the first N lines or entries of the output, and offset skips the first N, to page through many results.
- Patterns match within one line unless multiline is true, in which case . also matches newlines and a match may span lines (struct \\{[\\s\\S]*?field).
- .git directories, binary files and files over 10 MB are skipped; symlinks are not followed.`
}

// Schema implements tool.Tool.
func (*Grep) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "The regular expression to search file contents for"},
    "path": {"type": "string", "description": "The file or directory to search (default: the working directory)"},
    "glob": {"type": "string", "description": "Only search files matching this glob (e.g. \"*.js\", \"*.{ts,tsx}\"); a leading ! excludes them"},
    "type": {"type": "string", "description": "Only search files of this type (e.g. go, js, ts, py, rust, md)"},
    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "\"content\" shows matching lines, \"files_with_matches\" lists matching files (default), \"count\" shows match counts"},
    "-i": {"type": "boolean", "description": "Case-insensitive search"},
    "-n": {"type": "boolean", "description": "Show line numbers (content mode; default true)"},
    "-A": {"type": "number", "description": "Lines to show after each match (content mode)"},
    "-B": {"type": "number", "description": "Lines to show before each match (content mode)"},
    "-C": {"type": "number", "description": "Lines to show before and after each match (content mode)"},
    "head_limit": {"type": "number", "description": "Keep only the first N lines or entries of the output"},
    "offset": {"type": "number", "description": "Skip the first N lines or entries of the output (with head_limit, to page)"},
    "multiline": {"type": "boolean", "description": "Let . match newlines and matches span lines (default false)"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the quoted pattern, then where and which
// files.
func (g *Grep) Compact(params json.RawMessage) string {
	var in grepInput
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	s := `"` + in.Pattern + `"`
	if in.Path != "" {
		s += " in " + displayPath(g.DisplayDir, in.Path)
	}
	if in.Glob != "" {
		s += " (" + in.Glob + ")"
	}
	if in.Type != "" {
		s += " (type " + in.Type + ")"
	}
	return s
}

// grepFile is what Grep found in one file.
type grepFile struct {
	path    string
	mod     time.Time
	lines   []string // The file's lines, for content mode only.
	matched []int    // 0-based indices of matching lines, ascending.
	count   int      // Matching lines; matches in multiline mode.
}

// Run implements tool.Tool.
func (g *Grep) Run(ctx context.Context, env *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in grepInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	mode := cmp.Or(in.OutputMode, grepFiles)
	if mode != grepContent && mode != grepFiles && mode != grepCount {
		return tool.Result{}, fmt.Errorf("grep: %w: output_mode %q (want content, files_with_matches or count)", ErrInvalidParams, in.OutputMode)
	}
	re, err := in.regexp()
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	filter, err := in.filter()
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	target, err := ResolvePath(env, cmp.Or(in.Path, "."))
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: %w", err)
	}

	out := &pager{skip: max(derefInt(in.Offset), 0), limit: max(derefInt(in.HeadLimit), 0), maxBytes: orDefault(g.MaxOutput, DefaultMaxGrepOutput)}
	single := !fi.IsDir()
	before, after := in.contextLines()
	numbers := in.LineNums == nil || *in.LineNums
	maxSize := orDefault(g.MaxFileSize, DefaultMaxGrepFileSize)
	var found []grepFile // Files and count modes; content goes straight out.
	var sum matchCount
	search := func(p string, info fs.FileInfo) error {
		if info.Size() > maxSize || !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil // Unreadable or gone: skip it, as rg does.
		}
		if bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
			return nil // Binary.
		}
		f, ok := match(re, data, in.Multiline, mode == grepContent)
		if !ok {
			return nil
		}
		f.path, f.mod = p, info.ModTime()
		if mode != grepContent {
			found = append(found, f)
			sum.add(f)
			return nil
		}
		if sum.files > 0 && (before > 0 || after > 0) {
			out.add("--")
		}
		sum.add(f)
		prefix := ""
		if !single {
			prefix = f.path
		}
		contentLines(out, f, prefix, numbers, before, after)
		if out.done {
			sum.partial = true
			return filepath.SkipAll // Output is full: stop searching.
		}
		return nil
	}
	if single {
		// A file named explicitly is searched whatever the filters say.
		_ = search(target, fi)
	} else {
		err = walkFiles(ctx, target, false, func(p, rel string, d fs.DirEntry) error {
			if !filter(rel) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			return search(p, info)
		})
		if err != nil {
			return tool.Result{}, fmt.Errorf("grep: %w", err)
		}
	}

	switch {
	case mode == grepFiles && sum.files == 0:
		return tool.Result{Content: "No files found", Summary: "Found 0 files"}, nil
	case sum.files == 0:
		return tool.Result{Content: "No matches found", Summary: sum.String()}, nil
	case mode == grepFiles:
		slices.SortStableFunc(found, func(a, b grepFile) int { return b.mod.Compare(a.mod) })
		for _, f := range found {
			out.add(f.path)
		}
		n := "Found " + plural(sum.files, "file")
		return tool.Result{Content: n + "\n" + out.String(), Summary: n}, nil
	case mode == grepCount:
		for _, f := range found {
			if single {
				out.add(strconv.Itoa(f.count))
			} else {
				out.add(f.path + ":" + strconv.Itoa(f.count))
			}
		}
		return tool.Result{Content: out.String() + "\n\n" + sum.String() + ".", Summary: sum.String()}, nil
	}
	return tool.Result{Content: out.String(), Summary: sum.String()}, nil
}

// matchCount counts matches and the files they are in.
type matchCount struct {
	matches, files int
	partial        bool // The search stopped early.
}

func (c *matchCount) add(f grepFile) {
	c.matches += f.count
	c.files++
}

// String says how many matches were found in how many files.
func (c *matchCount) String() string {
	s := fmt.Sprintf("Found %s in %s", plural(c.matches, "match"), plural(c.files, "file"))
	if c.partial {
		s = fmt.Sprintf("Found at least %s in %s", plural(c.matches, "match"), plural(c.files, "file"))
	}
	return s
}

func (in *grepInput) regexp() (*regexp.Regexp, error) {
	if in.Pattern == "" {
		return nil, fmt.Errorf("%w: pattern is empty", ErrInvalidParams)
	}
	flags := ""
	if in.IgnoreCase {
		flags += "i"
	}
	if in.Multiline {
		// rg -U --multiline-dotall: . crosses lines, ^ and $ stay line anchors.
		flags += "sm"
	}
	expr := in.Pattern
	if flags != "" {
		expr = "(?" + flags + ")" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (escape special characters such as { } ( ) to match them literally)", ErrInvalidParams, err)
	}
	return re, nil
}

// filter returns the test a walked file's relative path must pass: the glob
// (matched against the name when it has no "/", as ripgrep does; a leading
// "!" excludes) and the type.
func (in *grepInput) filter() (func(rel string) bool, error) {
	var types []string
	if in.Type != "" {
		var ok bool
		if types, ok = fileTypes()[strings.ToLower(in.Type)]; !ok {
			known := make([]string, 0, len(fileTypes()))
			for k := range fileTypes() {
				known = append(known, k)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("%w: unknown type %q (known: %s)", ErrInvalidParams, in.Type, strings.Join(known, ", "))
		}
	}
	glob, exclude := strings.CutPrefix(in.Glob, "!")
	if glob != "" && !doublestar.ValidatePattern(glob) {
		return nil, fmt.Errorf("%w: bad glob %q", ErrInvalidParams, in.Glob)
	}
	byName := !strings.Contains(glob, "/")
	return func(rel string) bool {
		name := path.Base(rel)
		if glob != "" {
			subject := rel
			if byName {
				subject = name
			}
			if doublestar.MatchUnvalidated(glob, subject) == exclude {
				return false
			}
		}
		if types == nil {
			return true
		}
		return slices.ContainsFunc(types, func(t string) bool { return doublestar.MatchUnvalidated(t, name) })
	}, nil
}

// contextLines returns how many lines to show before and after a match:
// -C sets both, -A and -B override it.
func (in *grepInput) contextLines() (before, after int) {
	c := max(derefInt(in.Context), 0)
	before, after = c, c
	if in.Before != nil {
		before = max(*in.Before, 0)
	}
	if in.After != nil {
		after = max(*in.After, 0)
	}
	return before, after
}

// match searches one file's data. keepLines keeps the file's lines for
// content output.
func match(re *regexp.Regexp, data []byte, multiline, keepLines bool) (grepFile, bool) {
	text := string(data)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	var f grepFile
	if multiline {
		// starts[i] is the byte offset where line i begins.
		starts := make([]int, len(lines))
		for i, off := 1, 0; i < len(lines); i++ {
			off += strings.IndexByte(text[off:], '\n') + 1
			starts[i] = off
		}
		lineAt := func(off int) int { return sort.SearchInts(starts, off+1) - 1 }
		for _, m := range re.FindAllStringIndex(text, -1) {
			f.count++
			first, last := lineAt(m[0]), lineAt(max(m[1]-1, m[0]))
			for l := max(first, lastOf(f.matched)+1); l <= last && l < len(lines); l++ {
				f.matched = append(f.matched, l)
			}
		}
	} else {
		for i, l := range lines {
			if re.MatchString(l) {
				f.matched = append(f.matched, i)
			}
		}
		f.count = len(f.matched)
	}
	if f.count == 0 {
		return grepFile{}, false
	}
	if keepLines {
		f.lines = lines
	}
	return f, true
}

func lastOf(s []int) int {
	if len(s) == 0 {
		return -1
	}
	return s[len(s)-1]
}

// contentLines adds the matching lines of f with their context to out,
// ripgrep style: "path:12:text" for a match, "path-11-text" for context,
// "--" between groups that are not adjacent.
func contentLines(out *pager, f grepFile, prefix string, numbers bool, before, after int) {
	next := -1 // The first line not shown yet; -1 before the first group.
	j := 0     // f.matched[j] is the first match not before the current line.
	for _, m := range f.matched {
		from, to := max(m-before, 0), min(m+after, len(f.lines)-1)
		if next >= 0 && from > next && (before > 0 || after > 0) {
			out.add("--")
		}
		for l := max(from, next); l <= to; l++ {
			for j < len(f.matched) && f.matched[j] < l {
				j++
			}
			sep := "-"
			if j < len(f.matched) && f.matched[j] == l {
				sep = ":"
			}
			var sb strings.Builder
			if prefix != "" {
				sb.WriteString(prefix + sep)
			}
			if numbers {
				sb.WriteString(strconv.Itoa(l+1) + sep)
			}
			sb.WriteString(cutChars(f.lines[l], MaxLineChars))
			if !out.add(sb.String()) {
				return
			}
		}
		next = max(next, to+1)
	}
}

// pager collects output entries (lines, or paths), skipping the first skip,
// keeping at most limit (0: no limit) and at most maxBytes in all.
type pager struct {
	skip, limit, maxBytes int
	seen                  int
	kept                  []string
	size                  int
	done                  bool // No more entries wanted.
	more                  bool // Entries were left out by limit or size.
}

// add offers one entry; it returns false once no more are wanted.
func (p *pager) add(s string) bool {
	if p.done {
		p.more = true
		return false
	}
	p.seen++
	if p.seen <= p.skip {
		return true
	}
	if (p.limit > 0 && len(p.kept) >= p.limit) || p.size+len(s)+1 > p.maxBytes {
		p.done, p.more = true, true
		return false
	}
	p.kept = append(p.kept, s)
	p.size += len(s) + 1
	return true
}

func (p *pager) String() string {
	s := strings.Join(p.kept, "\n")
	switch {
	case !p.more:
	case p.limit > 0 && len(p.kept) >= p.limit:
		s += fmt.Sprintf("\n(Stopped at head_limit=%d; pass offset=%d to see more.)", p.limit, p.skip+len(p.kept))
	default:
		s += fmt.Sprintf("\n(Output cut at %d bytes; narrow the search, or page with head_limit and offset=%d.)", p.maxBytes, p.skip+len(p.kept))
	}
	return s
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
