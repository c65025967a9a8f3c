// Package agentdefs reads subagent definitions in Claude Code's formats:
// Markdown files with YAML front matter (~/.claude/agents/*.md and the
// project's .claude/agents/*.md) and the JSON of the --agents flag.
package agentdefs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/agent"
)

// MaxFileBytes bounds one definition file.
const MaxFileBytes = 256 << 10

// ErrBad marks a definition that cannot be used.
var ErrBad = errors.New("bad subagent definition")

// Sources say which directories Load reads.
type Sources struct {
	User    bool // ~/.claude/agents
	Project bool // <project>/.claude/agents
}

// Load reads the definitions of the user's and the project's agents
// directories. A project's definition replaces the user's of the same
// name, as in Claude Code. A directory that does not exist holds none; a
// file that cannot be parsed is an error that names it.
func Load(home, projectDir string, from Sources) ([]agent.Subagent, error) {
	var dirs []string
	if from.User && home != "" {
		dirs = append(dirs, filepath.Join(home, ".claude", "agents"))
	}
	if from.Project && projectDir != "" {
		dirs = append(dirs, filepath.Join(projectDir, ".claude", "agents"))
	}
	var out []agent.Subagent
	for _, dir := range dirs {
		defs, err := loadDir(dir)
		if err != nil {
			return nil, err
		}
		out = Merge(out, defs)
	}
	return out, nil
}

func loadDir(dir string) ([]agent.Subagent, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []agent.Subagent
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := readBounded(path)
		if err != nil {
			return nil, err
		}
		d, err := Parse(data, strings.TrimSuffix(e.Name(), ".md"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		d.Source = path
		out = Merge(out, []agent.Subagent{d})
	}
	return out, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w: longer than %d KiB", path, ErrBad, MaxFileBytes>>10)
	}
	return data, nil
}

// frontMatter is a definition file's YAML header.
type frontMatter struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Tools       toolList `yaml:"tools"`
	Model       string   `yaml:"model"`
}

// toolList takes Claude Code's two spellings: "Read, Grep" or a list.
type toolList struct {
	names []string
	set   bool
}

func (t *toolList) UnmarshalYAML(n *yaml.Node) error {
	t.set = true
	switch n.Kind {
	case yaml.ScalarNode:
		t.names = splitTools(n.Value)
		return nil
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		t.names = cleanTools(names)
		return nil
	}
	return errors.New("tools: want a list or a comma-separated string")
}

func splitTools(s string) []string { return cleanTools(strings.Split(s, ",")) }

// cleanTools trims names and drops empty ones; "*" alone means all tools
// (nil).
func cleanTools(in []string) []string {
	out := []string{}
	for _, n := range in {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	if len(out) == 0 || slices.Contains(out, "*") {
		return nil
	}
	return out
}

// Parse reads one Markdown definition: front matter between "---" lines
// (name, description, tools, model), then the prompt. name defaults to
// fallbackName (the file's name).
func Parse(data []byte, fallbackName string) (agent.Subagent, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return agent.Subagent{}, fmt.Errorf("%w: no front matter (a first line of ---)", ErrBad)
	}
	head, body, ok := strings.Cut(text[len("---\n"):], "\n---")
	if !ok {
		return agent.Subagent{}, fmt.Errorf("%w: the front matter does not end (a line of ---)", ErrBad)
	}
	// The closing line may carry trailing spaces; the prompt starts after it.
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		if strings.TrimSpace(body[:i]) != "" {
			return agent.Subagent{}, fmt.Errorf("%w: the front matter does not end (a line of ---)", ErrBad)
		}
		body = body[i+1:]
	} else if strings.TrimSpace(body) != "" {
		return agent.Subagent{}, fmt.Errorf("%w: the front matter does not end (a line of ---)", ErrBad)
	} else {
		body = ""
	}
	var fm frontMatter
	if err := yaml.Unmarshal([]byte(head), &fm); err != nil {
		return agent.Subagent{}, fmt.Errorf("%w: front matter: %v", ErrBad, err)
	}
	return build(fm.Name, fallbackName, fm.Description, strings.TrimSpace(body), fm.Tools, fm.Model)
}

func build(name, fallback, desc, prompt string, tools toolList, model string) (agent.Subagent, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = fallback
	}
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return agent.Subagent{}, fmt.Errorf("%w: name %q (want one word, such as code-reviewer)", ErrBad, name)
	}
	d := agent.Subagent{
		Name: name, Description: strings.TrimSpace(desc), Prompt: prompt,
		Model: strings.TrimSpace(model),
	}
	if tools.set {
		d.Tools = tools.names
	}
	return d, nil
}

// jsonDef is one agent of --agents.
type jsonDef struct {
	Description string          `json:"description"`
	Prompt      string          `json:"prompt"`
	Tools       json.RawMessage `json:"tools"`
	Model       string          `json:"model"`
}

// ParseJSON reads --agents: a JSON object of definitions by name
// ({"reviewer": {"description": ..., "prompt": ..., "tools": [...],
// "model": ...}}), given inline or as the path of a file that holds one.
// The definitions come sorted by name.
func ParseJSON(spec string) ([]agent.Subagent, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	data := []byte(spec)
	if !strings.HasPrefix(spec, "{") {
		var err error
		if data, err = readBounded(spec); err != nil {
			return nil, fmt.Errorf("--agents: want a JSON object of agent definitions or a file holding one: %w", err)
		}
	}
	var defs map[string]jsonDef
	if err := json.Unmarshal(data, &defs); err != nil {
		return nil, fmt.Errorf("--agents: %w: %v", ErrBad, err)
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []agent.Subagent
	for _, n := range names {
		jd := defs[n]
		var tools toolList
		if len(jd.Tools) > 0 && string(jd.Tools) != "null" {
			var list []string
			var one string
			switch {
			case json.Unmarshal(jd.Tools, &list) == nil:
				tools = toolList{names: cleanTools(list), set: true}
			case json.Unmarshal(jd.Tools, &one) == nil:
				tools = toolList{names: splitTools(one), set: true}
			default:
				return nil, fmt.Errorf("--agents: %q: %w: tools: want a list of tool names", n, ErrBad)
			}
		}
		d, err := build(n, "", jd.Description, strings.TrimSpace(jd.Prompt), tools, jd.Model)
		if err != nil {
			return nil, fmt.Errorf("--agents: %w", err)
		}
		d.Source = "--agents"
		out = append(out, d)
	}
	return out, nil
}

// Merge returns base with over's definitions added, each replacing the
// one of base with its name.
func Merge(base, over []agent.Subagent) []agent.Subagent {
	out := slices.Clone(base)
	for _, d := range over {
		if i := slices.IndexFunc(out, func(b agent.Subagent) bool { return b.Name == d.Name }); i >= 0 {
			out[i] = d
		} else {
			out = append(out, d)
		}
	}
	return out
}

// Find returns the definition named name.
func Find(defs []agent.Subagent, name string) (agent.Subagent, bool) {
	for _, d := range defs {
		if d.Name == name {
			return d, true
		}
	}
	if name == agent.GeneralPurpose.Name {
		return agent.GeneralPurpose, true
	}
	return agent.Subagent{}, false
}
