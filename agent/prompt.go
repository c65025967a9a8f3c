package agent

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/sluicehq/sluice/protocol"
)

// systemPrompt is the built-in system prompt plus the user's. Called with
// s.mu held.
func (s *Session) systemPrompt() string {
	var sb strings.Builder
	if s.opts.BaseSystemPrompt != "" {
		sb.WriteString(s.opts.BaseSystemPrompt)
	} else {
		s.builtinPrompt(&sb)
	}
	if s.opts.SystemPrompt != "" {
		sb.WriteString("\n\n")
		sb.WriteString(s.opts.SystemPrompt)
	}
	if len(s.opts.Memory) > 0 {
		sb.WriteString("\n\nInstructions from the project's memory files follow; later files are more specific and take precedence.")
		for _, f := range s.opts.Memory {
			fmt.Fprintf(&sb, "\n\nContents of %s:\n\n%s", f.Path, strings.TrimRight(f.Content, "\n"))
		}
	}
	return sb.String()
}

func (s *Session) builtinPrompt(sb *strings.Builder) {
	fmt.Fprintf(sb, `You are sluice, a coding agent working in a terminal with the user.
Working directory: %s
Platform: %s/%s
Date: %s
Permission mode: %s

Use the tools to read, search, edit and run things instead of guessing. Read a file before editing it.
Keep answers short and direct; use Markdown. When the task is done, say what you did.`,
		s.toolEnv.WorkDir, runtime.GOOS, runtime.GOARCH, s.opts.Now().Format("2006-01-02"), s.mode)
	if s.mode == protocol.ModePlan {
		sb.WriteString("\n\nYou are in plan mode: do not change anything. Investigate with the read-only tools and present a plan.")
	}
}

// Memory returns the instruction files joined to the system prompt.
func (s *Session) Memory() []MemoryFile { return append([]MemoryFile(nil), s.opts.Memory...) }
