package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// Tool rules in Claude Code's syntax (--allowedTools, --disallowedTools):
// a tool name, optionally with a specifier in parentheses.
//
//	Bash                 every Bash call
//	Bash(git log:*)      commands that start with "git log"
//	Bash(npm run *)      a wildcard pattern
//	Bash(npm test)       exactly that command
//	Read(./src/**)       Read, Glob and Grep under ./src (gitignore-style
//	                     globs; //abs for an absolute path, ~/ for home)
//	Edit(docs/*.md)      Edit and Write of matching files
//	WebFetch(domain:x)   fetches from host x
//	mcp__server          every tool of an MCP server
//	mcp__server__tool    one MCP tool (mcp__server__* too)
type Rule struct {
	Tool      string
	Specifier string // "" when the rule names the tool alone
}

// ParseRule parses one rule.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	name, rest, found := strings.Cut(s, "(")
	if !found {
		if s == "" {
			return Rule{}, fmt.Errorf("empty tool rule")
		}
		return Rule{Tool: s}, nil
	}
	if !strings.HasSuffix(rest, ")") || name == "" {
		return Rule{}, fmt.Errorf("tool rule %q: want Tool or Tool(specifier)", s)
	}
	return Rule{Tool: strings.TrimSpace(name), Specifier: strings.TrimSuffix(rest, ")")}, nil
}

// Rules are the allow and deny rules of a session.
type Rules struct {
	Allow, Deny []Rule
	// WorkDir resolves relative path specifiers.
	WorkDir string
	// ReadOnlyBash allows Bash commands that only read (ls, cat, git
	// status, ...) without asking, as Claude Code does in every mode.
	ReadOnlyBash bool
	// ExactBash are Bash commands allowed without asking when the call's
	// command is exactly one of them (deny rules still win): the demo
	// model's scripted command in print mode, where nobody could be asked.
	ExactBash []string
}

// ParseRules parses --allowedTools and --disallowedTools values.
func ParseRules(allow, deny []string, workDir string) (*Rules, error) {
	r := &Rules{WorkDir: workDir, ReadOnlyBash: true}
	if err := r.Add(allow, deny); err != nil {
		return nil, err
	}
	return r, nil
}

// Add parses more allow and deny rules (in the values' syntax) into r.
func (r *Rules) Add(allow, deny []string) error {
	for _, s := range ToolList(allow) {
		rule, err := ParseRule(s)
		if err != nil {
			return err
		}
		r.Allow = append(r.Allow, rule)
	}
	for _, s := range ToolList(deny) {
		rule, err := ParseRule(s)
		if err != nil {
			return err
		}
		r.Deny = append(r.Deny, rule)
	}
	return nil
}

// Decide is the rules' verdict on a call: deny rules first, then allow
// rules (every part of a compound command must be allowed), then
// read-only commands; no opinion otherwise.
func (r *Rules) Decide(call agent.ToolCall) agent.Verdict {
	for _, rule := range r.Deny {
		if r.matches(rule, call, false) {
			return agent.Verdict{Decision: protocol.DecisionDeny, Reason: fmt.Sprintf("Permission to use %s has been denied by the rule %s.", call.Name, rule)}
		}
	}
	for _, rule := range r.Allow {
		if r.matches(rule, call, true) {
			return agent.Verdict{Decision: protocol.DecisionAllow}
		}
	}
	if call.Name == "Bash" && slices.Contains(r.ExactBash, strings.TrimSpace(bashCommand(call.Input))) {
		return agent.Verdict{Decision: protocol.DecisionAllow}
	}
	if call.Name == "Bash" {
		parts, ok := commandParts(bashCommand(call.Input))
		if ok && len(parts) > 0 {
			allowed := true
			for _, p := range parts {
				if !(r.ReadOnlyBash && readOnlyCommand(p)) && !r.allowsCommand(p) {
					allowed = false
					break
				}
			}
			if allowed {
				return agent.Verdict{Decision: protocol.DecisionAllow}
			}
		}
	}
	return agent.Verdict{}
}

// Hides reports whether a deny rule names the tool as a whole (Bash, not
// Bash(rm:*); mcp__server for its tools): Claude Code does not offer such
// a tool to the model at all.
func (r *Rules) Hides(name string) bool {
	for _, rule := range r.Deny {
		if rule.Specifier != "" {
			continue
		}
		if rule.Tool == name || (strings.HasPrefix(rule.Tool, "mcp__") && toolMatches(rule.Tool, name)) ||
			(rule.Tool == "Task" && name == "Agent") {
			return true
		}
	}
	return false
}

func (r Rule) String() string {
	if r.Specifier == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// allowsCommand reports whether an allow rule covers one simple command.
func (r *Rules) allowsCommand(cmd string) bool {
	for _, rule := range r.Allow {
		if rule.Tool == "Bash" && (rule.Specifier == "" || commandMatches(rule.Specifier, cmd)) {
			return true
		}
	}
	return false
}

// matches reports whether rule covers call. For an allow rule a compound
// Bash command must be covered part by part (Decide does that); a deny
// rule covers it when any part matches.
func (r *Rules) matches(rule Rule, call agent.ToolCall, allow bool) bool {
	if !toolMatches(rule.Tool, call.Name) {
		return false
	}
	if rule.Specifier == "" {
		return true
	}
	switch call.Name {
	case "Bash":
		parts, ok := commandParts(bashCommand(call.Input))
		if !ok || len(parts) == 0 {
			return !allow && commandMatches(rule.Specifier, bashCommand(call.Input))
		}
		if allow {
			if len(parts) > 1 {
				return false // Decide checks the parts one by one
			}
			return commandMatches(rule.Specifier, parts[0])
		}
		for _, p := range parts {
			if commandMatches(rule.Specifier, p) {
				return true
			}
		}
		return false
	case "WebFetch":
		domain, ok := strings.CutPrefix(rule.Specifier, "domain:")
		u, err := url.Parse(inputString(call.Input, "url"))
		return ok && err == nil && strings.EqualFold(u.Hostname(), domain)
	}
	p := inputString(call.Input, "file_path")
	if p == "" {
		p = inputString(call.Input, "path")
	}
	if p == "" {
		p = inputString(call.Input, "notebook_path")
	}
	return p != "" && r.pathMatches(rule.Specifier, p)
}

// toolMatches: the same name; Edit rules cover Write too and Read rules
// Glob and Grep, as in Claude Code; mcp__server covers its tools.
func toolMatches(rule, name string) bool {
	switch {
	case rule == name, rule == "*":
		return true
	case rule == "Edit":
		return name == "Write" || name == "MultiEdit" || name == "NotebookEdit"
	case rule == "Read":
		return name == "Glob" || name == "Grep"
	case strings.HasPrefix(rule, "mcp__"):
		if prefix, ok := strings.CutSuffix(rule, "*"); ok {
			return strings.HasPrefix(name, prefix)
		}
		return strings.Count(rule, "__") == 1 && strings.HasPrefix(name, rule+"__")
	}
	return false
}

// commandMatches matches a Bash specifier: "prefix:*" (the command, or
// it followed by a space and anything), a pattern with "*" wildcards, or
// the exact command.
func commandMatches(spec, cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	if strings.Contains(spec, "*") {
		var re strings.Builder
		re.WriteString("^")
		for i, part := range strings.Split(spec, "*") {
			if i > 0 {
				re.WriteString(".*")
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
		re.WriteString("$")
		ok, _ := regexp.MatchString(re.String(), cmd)
		return ok
	}
	return cmd == spec
}

// pathMatches matches a path specifier, gitignore-style: "//x" is the
// absolute path /x, "~/x" is under home, others are relative to the
// working directory; "**" crosses directories, "*" does not; a pattern
// without "/" matches a file name in any directory.
func (r *Rules) pathMatches(spec, p string) bool {
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.WorkDir, abs)
	}
	abs = filepath.Clean(abs)
	var pattern string
	switch {
	case strings.HasPrefix(spec, "//"):
		pattern = spec[1:]
	case strings.HasPrefix(spec, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		pattern = filepath.Join(home, spec[2:])
	case !strings.Contains(strings.TrimPrefix(spec, "./"), "/") && !strings.HasPrefix(spec, "/"):
		return globMatch(strings.TrimPrefix(spec, "./"), filepath.Base(abs)) ||
			globMatch(filepath.Join(r.WorkDir, strings.TrimPrefix(spec, "./")), abs)
	default:
		pattern = filepath.Join(r.WorkDir, strings.TrimPrefix(spec, "/"))
	}
	if strings.HasSuffix(spec, "/**") || strings.HasSuffix(spec, "/") {
		dir := strings.TrimSuffix(strings.TrimSuffix(pattern, "**"), "/")
		if abs == dir {
			return true
		}
	}
	return globMatch(pattern, abs)
}

func globMatch(pattern, name string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			re.WriteString(".*")
			i++
		case c == '*':
			re.WriteString("[^/]*")
		case c == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	ok, _ := regexp.MatchString(re.String(), name)
	return ok
}

func bashCommand(input json.RawMessage) string { return inputString(input, "command") }

func inputString(input json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	var s string
	json.Unmarshal(m[key], &s)
	return s
}

// commandParts splits a command line at &&, ||, ;, | and newlines. It
// reports false for what it cannot judge safely: redirections, command or
// process substitution, backgrounding, subshells, here-documents.
func commandParts(cmd string) ([]string, bool) {
	if strings.ContainsAny(cmd, "`><()&{}") && !onlyAndAnd(cmd) {
		return nil, false
	}
	if strings.Contains(cmd, "$(") {
		return nil, false
	}
	var parts []string
	for _, p := range splitAny(cmd, []string{"&&", "||", ";", "|", "\n"}) {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return parts, true
}

// onlyAndAnd reports whether every "&" in cmd is part of "&&" and no other
// character of commandParts' refusal set is there.
func onlyAndAnd(cmd string) bool {
	return !strings.ContainsAny(strings.ReplaceAll(cmd, "&&", ""), "`><()&{}")
}

func splitAny(s string, seps []string) []string {
	out := []string{s}
	for _, sep := range seps {
		var next []string
		for _, p := range out {
			next = append(next, strings.Split(p, sep)...)
		}
		out = next
	}
	return out
}

// readOnlyCommands are commands that only read, whatever their arguments
// (besides the ones refused in readOnlyCommand).
// (Not sort, uniq, date or hostname: some of their arguments write.)
var readOnlyCommands = map[string]bool{
	"echo": true, "printf": true, "ls": true, "pwd": true, "cat": true, "head": true, "tail": true,
	"wc": true, "grep": true, "rg": true, "egrep": true, "fgrep": true, "which": true, "whoami": true,
	"true": true, "false": true, "file": true, "stat": true, "du": true, "df": true, "uname": true,
	"id": true, "basename": true, "dirname": true, "realpath": true, "readlink": true, "cut": true,
	"tr": true, "diff": true, "cmp": true, "test": true, "type": true, "nl": true, "jq": true,
}

// readOnlyGit are git's subcommands that only read.
var readOnlyGit = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "blame": true, "ls-files": true,
	"rev-parse": true, "describe": true, "shortlog": true, "grep": true,
}

// readOnlyCommand reports whether one simple command only reads.
func readOnlyCommand(cmd string) bool {
	fields := strings.Fields(cmd)
	if len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		if strings.HasPrefix(f, "$") || strings.Contains(f, "=") && f == fields[0] {
			return false // variables and assignments can run anything
		}
	}
	switch name := fields[0]; {
	case readOnlyCommands[name]:
		return true
	case name == "find":
		for _, f := range fields[1:] {
			switch f {
			case "-exec", "-execdir", "-delete", "-ok", "-okdir", "-fprint", "-fprintf", "-fls":
				return false
			}
		}
		return true
	case name == "git" && len(fields) > 1:
		if !readOnlyGit[fields[1]] {
			return fields[1] == "branch" && len(fields) == 2 || fields[1] == "remote" && (len(fields) == 2 || fields[2] == "-v")
		}
		for _, f := range fields[2:] {
			if f == "--output" || strings.HasPrefix(f, "--output=") || f == "--ext-diff" {
				return false
			}
		}
		return true
	}
	return false
}
