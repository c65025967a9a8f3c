package agent

import (
	"fmt"
	"runtime"
	"strings"
)

// systemPrompt is the built-in system prompt plus the user's. Called with
// s.mu held.
func (s *Session) systemPrompt() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `You are sluice, a coding agent working in a terminal with the user.
Working directory: %s
Platform: %s/%s
Date: %s
Permission mode: %s

Use the tools to read, search, edit and run things instead of guessing. Read a file before editing it.
Keep answers short and direct; use Markdown. When the task is done, say what you did.`,
		s.toolEnv.WorkDir, runtime.GOOS, runtime.GOARCH, s.opts.Now().Format("2006-01-02"), s.mode)
	if s.mode == ModePlan {
		sb.WriteString("\n\nYou are in plan mode: do not change anything. Investigate with the read-only tools and present a plan.")
	}
	if s.opts.SystemPrompt != "" {
		sb.WriteString("\n\n")
		sb.WriteString(s.opts.SystemPrompt)
	}
	return sb.String()
}
