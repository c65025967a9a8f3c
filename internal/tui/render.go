package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/protocol"
)

// Styles of the transcript. Lip Gloss pads a multi-line string to a
// rectangle, so styles are applied line by line.
var (
	stUser    = lipgloss.NewStyle().Bold(true)
	stBang    = lipgloss.NewStyle().Foreground(lipgloss.Color("13")).Bold(true)
	stDim     = lipgloss.NewStyle().Faint(true)
	stErr     = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	stOK      = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	stRunning = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	stBold    = lipgloss.NewStyle().Bold(true)
	stNotice  = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	stAccent  = lipgloss.NewStyle().Foreground(lipgloss.Color("12"))
)

// Layout of a block: a glyph, then the block's lines indented under it.
const (
	indent       = "  "
	resultFirst  = "  ⎿  "
	resultIndent = "     "
)

// styleLines applies st to each line.
func styleLines(st lipgloss.Style, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if l != "" {
			l = st.Render(l)
		}
		out[i] = l
	}
	return out
}

// hang puts head before the first line and indents the others as deep.
func hang(head, rest string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = head
		}
		if l == "" && i > 0 {
			out[i] = ""
			continue
		}
		out[i] = p + l
	}
	return out
}

// thinkingHeader is a reasoning block's header: "Thinking 9s" while it
// streams (from its start to now), "Thought for 15s" once ended (from its
// recorded start and end, so a reloaded session shows the same), and no
// duration when a time is missing or the end precedes the start.
func thinkingHeader(b protocol.Block, now time.Time) string {
	if b.Stage == protocol.StageEnd {
		if b.StartedAt <= 0 || b.EndedAt < b.StartedAt {
			return "Thought"
		}
		ms := b.EndedAt - b.StartedAt
		if s := (ms + 500) / 1000; s > 0 {
			return fmt.Sprintf("Thought for %ds", s)
		}
		return "Thought for <1s"
	}
	if b.StartedAt <= 0 {
		return "Thinking"
	}
	ms := now.UnixMilli() - b.StartedAt
	if ms < 0 {
		return "Thinking"
	}
	return fmt.Sprintf("Thinking %ds", ms/1000)
}

// toolDetail is what follows a tool's name: its compact parameters once
// they are known. While the parameters still stream, they are a JSON
// document cut anywhere, which reads as noise: the header then says only
// that the call is being prepared (preparing is true).
func toolDetail(b protocol.Block) (detail string, preparing bool) {
	if b.CompactParams != "" {
		return b.CompactParams, false
	}
	return "", b.Stage == protocol.StageStart || b.Stage == protocol.StageStreaming
}

func toolGlyph(b protocol.Block) string {
	switch {
	case b.Stage != protocol.StageEnd:
		return stRunning.Render("●")
	case b.Success != nil && *b.Success:
		return stOK.Render("●")
	default:
		return stErr.Render("●")
	}
}

func toolHeader(b protocol.Block, width int) string {
	name := b.Name
	if name == "" {
		name = "tool"
	}
	head := stBold.Render(sanitize(name))
	switch d, preparing := toolDetail(b); {
	case d != "":
		head += "(" + sanitize(d) + ")"
	case preparing:
		head += " " + stDim.Render("preparing…")
	}
	return toolGlyph(b) + " " + ansi.Truncate(head, max(width-2, 10), "…")
}

// toolLines renders a tool block collapsed: the header, then the growing
// short result while it runs, and the outcome at the end.
func toolLines(b protocol.Block, width int) []string {
	lines := []string{toolHeader(b, width)}
	inner := max(width-len(resultIndent), 10)
	var body []string
	// A subagent's work shows under its call: its latest tool calls and,
	// while it runs, the last line it wrote.
	sub := subagentLines(b.Messages, inner, b.Stage == protocol.StageRunning)
	switch b.Stage {
	case protocol.StageRunning:
		switch {
		case len(sub) > 0:
			body = sub
		case b.ShortResult == "":
			body = styleLines(stDim, []string{"Running…"})
		default:
			body = styleLines(stDim, append(moreLines(b), wrapPlain(strings.TrimRight(b.ShortResult, "\n"), inner)...))
		}
	case protocol.StageEnd:
		ok := b.Success != nil && *b.Success
		if !ok {
			msg := b.Error
			if msg == "" {
				msg = "failed"
			}
			body = styleLines(stErr, wrapPlain("Error: "+msg, inner))
		}
		if sr := strings.TrimRight(b.ShortResult, "\n"); sr != "" && (ok || sr != b.Error) {
			body = append(body, styleLines(stDim, append(moreLines(b), wrapPlain(sr, inner)...))...)
		}
		if len(body) == 0 {
			body = styleLines(stDim, []string{"(no output)"})
		}
		body = append(sub, body...)
	}
	return append(lines, hang(resultFirst, resultIndent, body)...)
}

// subagentShown is how many of a subagent's tool calls its call shows
// collapsed (the latest ones).
const subagentShown = 3

// subagentLines renders a subagent's messages collapsed: its latest tool
// calls, how many came before, and with live the last line of its text.
func subagentLines(msgs []protocol.Message, width int, live bool) []string {
	d := protocol.DigestOf(msgs)
	var out []string
	tools := d.Tools
	if n := len(tools) - subagentShown; n > 0 {
		out = append(out, stDim.Render(fmt.Sprintf("… +%d earlier tool uses", n)))
		tools = tools[n:]
	}
	for _, b := range tools {
		out = append(out, toolHeader(b, width))
	}
	if live && d.LastLine != "" {
		out = append(out, stDim.Render(ansi.Truncate(sanitize(d.LastLine), width, "…")))
	}
	return out
}

// moreLines says how many lines of a tool's output the short result (its
// last lines) leaves out, as a line to put before it; nothing when it
// leaves out none.
func moreLines(b protocol.Block) []string {
	hidden := strings.Count(strings.TrimRight(b.Result, "\n"), "\n") - strings.Count(strings.TrimRight(b.ShortResult, "\n"), "\n")
	switch {
	case hidden <= 0:
		return nil
	case hidden == 1:
		return []string{"… +1 line (ctrl+o to expand)"}
	}
	return []string{fmt.Sprintf("… +%d lines (ctrl+o to expand)", hidden)}
}

// toolLinesExpanded renders a tool block with its whole parameters and
// result.
func toolLinesExpanded(b protocol.Block, width int) []string {
	lines := []string{toolHeader(b, width)}
	inner := max(width-4, 10)
	if b.Parameters != "" {
		lines = append(lines, indent+stDim.Render("parameters:"))
		lines = append(lines, hang(indent+indent, indent+indent, wrapPlain(prettyJSON(b.Parameters), inner))...)
	}
	switch {
	case b.Stage == protocol.StageEnd:
		if b.Error != "" {
			lines = append(lines, hang(indent, indent, styleLines(stErr, wrapPlain("Error: "+b.Error, inner)))...)
		}
		lines = append(lines, indent+stDim.Render("result:"))
		res := strings.TrimRight(b.Result, "\n")
		if res == "" {
			res = "(no output)"
		}
		lines = append(lines, hang(indent+indent, indent+indent, wrapPlain(res, inner))...)
	case b.Stage == protocol.StageRunning:
		lines = append(lines, indent+stDim.Render("output so far:"))
		lines = append(lines, hang(indent+indent, indent+indent, wrapPlain(strings.TrimRight(b.Result, "\n"), inner))...)
	}
	if len(b.Messages) > 0 {
		lines = append(lines, indent+stDim.Render("subagent:"))
		lines = append(lines, hang(indent+indent, indent+indent, subagentExpanded(b.Messages, inner-2))...)
	}
	return lines
}

// subagentExpanded renders all of a subagent's messages plainly: its
// prompt, text and tool calls with their outcome.
func subagentExpanded(msgs []protocol.Message, width int) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Blocks {
			switch {
			case b.Type == protocol.BlockTool:
				out = append(out, toolLines(b, width)...)
			case b.Type == protocol.BlockText && m.Role == protocol.RoleUser:
				out = append(out, styleLines(stDim, wrapPlain("> "+strings.TrimSpace(b.Content), width))...)
			case b.Type == protocol.BlockText || b.Type == protocol.BlockError:
				if t := strings.TrimSpace(b.Content); t != "" {
					out = append(out, wrapPlain(t, width)...)
				}
			}
		}
	}
	return out
}

func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}

// userLines renders a user message's text; a shell command ("!cmd") is
// shown as such.
func userLines(text string, width int) []string {
	if strings.HasPrefix(text, "!") {
		return hang(stBang.Render("! "), indent, styleLines(stBang, wrapPlain(strings.TrimPrefix(text, "!"), width-2)))
	}
	return hang(stAccent.Render("> "), indent, styleLines(stUser, wrapPlain(text, width-2)))
}

func errorLines(text string, width int) []string {
	return hang(stErr.Render("✗ "), indent, styleLines(stErr, wrapPlain(text, width-2)))
}

// part is a block laid out for the screen, with its prefixes applied
// lazily: the live area shows only the last lines of what is streaming,
// so only those are prefixed and styled, and a frame costs what is on
// screen rather than the whole block.
type part struct {
	pre []string // lines shown as they are
	// body is the concatenation of segs; its first line gets head, the
	// others rest, and each non-empty one style.
	segs       [][]string
	head, rest string
	style      func(string) string
	// off is how many of the first lines are left out (printed already).
	off int
	// pin: the first line is a header to keep in view (reasoningPart).
	pin bool
}

// count is the number of lines of the part.
func (p part) count() int {
	n := len(p.pre) - p.off
	for _, s := range p.segs {
		n += len(s)
	}
	return n
}

// line returns line i of the part.
func (p part) line(i int) string {
	i += p.off
	if i < len(p.pre) {
		return p.pre[i]
	}
	j := i - len(p.pre)
	k := j
	var l string
	for _, s := range p.segs {
		if k < len(s) {
			l = s[k]
			break
		}
		k -= len(s)
	}
	if l == "" && j > 0 {
		return ""
	}
	if p.style != nil && l != "" {
		l = p.style(l)
	}
	if j == 0 {
		return p.head + l
	}
	return p.rest + l
}

// all returns every line of the part.
func (p part) all() []string {
	out := make([]string, p.count())
	for i := range out {
		out[i] = p.line(i)
	}
	return out
}

func fixed(lines []string) part { return part{pre: lines} }

// workingLine says that the agent works; rendered once.
var workingLine = stRunning.Render("✻ ") + stDim.Render("Working… · esc to interrupt")

// compactingLine says that the conversation is being compacted, for how
// long, and how long the summary is so far (the view state's compaction).
func compactingLine(c protocol.Compaction, now time.Time) string {
	s := "Compacting conversation…"
	if c.StartedAt > 0 {
		if ms := now.UnixMilli() - c.StartedAt; ms >= 0 {
			s += fmt.Sprintf(" %ds", ms/1000)
		}
	}
	if c.Chars > 0 {
		s += fmt.Sprintf(" · %d chars of summary", c.Chars)
	}
	return stRunning.Render("✻ ") + stDim.Render(s+" · esc to interrupt")
}

// faint dims s with a plain escape sequence, for lines rendered at every
// frame.
func faint(s string) string { return "\x1b[2m" + s + "\x1b[22m" }

// thinkingStyle is the reasoning's style. It is applied with a plain
// escape sequence: it runs for each line of a streaming block on screen,
// at every frame.
func thinkingStyle(s string) string { return "\x1b[2;3m" + s + "\x1b[22;23m" }

func reasoningPart(header string, body ...[]string) part {
	h := "∴ " + header
	if !strings.HasPrefix(header, "Thought") {
		h += "…"
	}
	return part{pre: []string{thinkingStyle(h)}, segs: body, head: indent, rest: indent, style: thinkingStyle, pin: true}
}

// textPart lays out an answer's rendered lines under a bullet.
func textPart(rendered ...[]string) part {
	return part{segs: rendered, head: "● ", rest: indent}
}
