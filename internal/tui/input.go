package tui

import (
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// Results of commands that run outside the event loop.
type (
	sessionsMsg struct {
		gen   int
		infos []agent.SessionInfo
		err   error
	}
	openedMsg struct {
		sess *agent.Session
		err  error
	}
	rewoundMsg struct {
		gen  int
		text string
		err  error
	}
)

var helpText = []string{
	"Commands",
	"  /help            this help",
	"  /clear           start over: clears the conversation",
	"  /compact         fold the conversation into a summary",
	"  /rewind          go back to one of your messages",
	"  /resume          continue a stored session",
	"  /model [name]    show or change the model",
	"  /memory          the memory files (AGENTS.md, CLAUDE.md) read into the system prompt",
	"  /btw question    a side question, answered without entering the conversation",
	"  /exit            quit",
	"  !command         run a shell command (its output joins the conversation)",
	"Keys",
	"  enter send · shift+enter, alt+enter or ctrl+j new line (or end a line with \\)",
	"  ↑/↓ history · esc interrupt · ctrl+o expanded view · ctrl+c clear, twice to quit",
	"  a message sent while the agent works joins its run at the next step (queued until then)",
}

// key handles a key press.
func (m *ui) key(k tea.KeyPressMsg) tea.Cmd {
	s := k.String()
	if s != "ctrl+c" && m.armedQuit {
		m.armedQuit, m.status = false, ""
	}
	switch {
	case m.expanded != nil:
		return m.expandedKey(s)
	case s == "ctrl+o":
		if m.printing {
			m.expandAfterPrint = true
		} else {
			m.expand()
		}
		return nil
	case m.prompt() != nil:
		return m.permissionKey(s)
	case m.picker != nil:
		return m.picker.key(m, s)
	}
	switch s {
	case "ctrl+c":
		switch {
		case m.input.Value() != "":
			m.input.Reset()
		case m.busy():
			m.interrupt()
		case m.armedQuit:
			return m.quit()
		default:
			m.armedQuit = true
			m.status = "press ctrl+c again to quit"
		}
		return nil
	case "ctrl+d":
		if m.input.Value() == "" {
			return m.quit()
		}
	case "esc":
		if m.busy() {
			m.interrupt()
		}
		return nil
	case "enter":
		v := m.input.Value()
		if strings.HasSuffix(v, "\\") {
			// A line ending with a backslash continues on the next.
			m.input.SetValue(strings.TrimSuffix(v, "\\") + "\n")
			return nil
		}
		m.input.Reset()
		m.histPos = len(m.history)
		return m.submit(v)
	case "up":
		if m.input.Line() == 0 && m.histPos > 0 {
			if m.histPos == len(m.history) {
				m.draft = m.input.Value()
			}
			m.histPos--
			m.input.SetValue(m.history[m.histPos])
			return nil
		}
	case "down":
		if m.input.Line() == m.input.LineCount()-1 && m.histPos < len(m.history) {
			m.histPos++
			if m.histPos == len(m.history) {
				m.input.SetValue(m.draft)
			} else {
				m.input.SetValue(m.history[m.histPos])
			}
			return nil
		}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// interrupt aborts the work in progress. What streamed stays (the agent
// ends the open blocks); what this UI sent that the abort dropped before it
// was sent goes back to the prompt, in order.
func (m *ui) interrupt() {
	m.abort("interrupted by the user")
	// Abort drops the queued work at once: its handles are done, without
	// a message id (that of work that ran is set from its start).
	var texts []string
	for i, s := range m.sent {
		if s.kind == jobCompact || s.text == "" {
			continue
		}
		select {
		case <-s.w.Done():
		default:
			continue
		}
		if res, _ := s.w.Wait(m.ctx); res.MessageID != "" {
			continue
		}
		t := s.text
		if s.kind == jobBang {
			t = "!" + t
		}
		texts = append(texts, t)
		m.sent[i].text = "" // restored once
	}
	if len(texts) > 0 {
		if v := m.input.Value(); v != "" {
			texts = append(texts, v)
		}
		m.input.SetValue(strings.Join(texts, "\n"))
	}
}

// setModel changes the model of the next requests.
func (m *ui) setModel(name string) {
	if err := m.sess.SetModel(m.ctx, name); err != nil {
		m.status = err.Error()
		return
	}
	m.status = "model: " + name
}

// abort stops the session's work in progress and drops what is queued.
func (m *ui) abort(reason string) {
	if err := m.sess.Abort(m.ctx, reason); err != nil {
		m.status = err.Error()
	}
}

// submit handles what was typed: a command, a shell command or a message.
// Work goes to the session at once, in the order typed: a message sent
// while a run is going joins it at its next model request (steering); the
// session lists what waits as queued until it is sent.
func (m *ui) submit(text string) tea.Cmd {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil
	}
	if n := len(m.history); n == 0 || m.history[n-1] != text {
		m.history = append(m.history, text)
	}
	m.histPos = len(m.history)
	m.status = ""
	switch {
	case strings.HasPrefix(t, "/"):
		return m.command(t)
	case strings.HasPrefix(t, "!"):
		if c := strings.TrimSpace(t[1:]); c != "" {
			return m.send(jobBang, c)
		}
		return nil
	default:
		return m.send(jobMessage, text)
	}
}

// send gives work to the session and returns the command that waits for
// its end.
func (m *ui) send(kind jobKind, text string) tea.Cmd {
	var (
		w   session.Job
		err error
	)
	switch kind {
	case jobMessage:
		_, w, err = m.sess.SubmitMessage(m.ctx, text)
	case jobBang:
		w, err = m.sess.SubmitBang(m.ctx, text)
	case jobCompact:
		w, err = m.sess.SubmitCompact(m.ctx)
	}
	if err != nil {
		m.status = err.Error()
		return nil
	}
	m.sent = append(m.sent, sent{w: w, kind: kind, text: text})
	ctx, gen := m.ctx, m.gen
	return func() tea.Msg {
		res, err := w.Wait(ctx)
		return runDoneMsg{gen: gen, kind: kind, w: w, cost: res.CostUSD, err: err}
	}
}

// queuedText is queued work as typed.
func queuedText(q protocol.QueuedWork) string {
	switch q.Kind {
	case protocol.QueueBang:
		return "!" + q.Text
	case protocol.QueueCompact:
		return "/compact"
	}
	return q.Text
}

func (m *ui) command(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	arg = strings.TrimSpace(arg)
	b, ctx, gen := m.sess, m.ctx, m.gen
	switch name {
	case "help", "?":
		m.emit(styleLines(stDim, helpText))
	case "exit", "quit":
		return m.quit()
	case "memory":
		m.emit(styleLines(stDim, memoryLines(b.Memory())))
	case "btw":
		if arg == "" {
			m.status = "/btw needs a question: /btw what does this function return?"
			return nil
		}
		m.status = "asking on the side…"
		return func() tea.Msg {
			answer, err := b.Ask(ctx, arg)
			return btwMsg{question: arg, answer: answer, err: err}
		}
	case "clear":
		return func() tea.Msg {
			if _, err := b.Clear(ctx); err != nil {
				return noteMsg{"clear: " + err.Error()}
			}
			return nil
		}
	case "compact":
		return m.send(jobCompact, "")
	case "rewind":
		m.rewindPicker()
	case "resume":
		if m.opts.List == nil || m.opts.Open == nil {
			m.status = "sessions are not stored: /resume is not available"
			return nil
		}
		list := m.opts.List
		return func() tea.Msg {
			infos, err := list()
			return sessionsMsg{gen: gen, infos: infos, err: err}
		}
	case "model":
		if arg != "" {
			m.setModel(arg)
			return nil
		}
		m.modelPicker()
	default:
		m.status = fmt.Sprintf("unknown command /%s (/help lists them)", name)
	}
	return nil
}

// memoryLines lists the memory files with their sizes.
func memoryLines(files []agent.MemoryFile) []string {
	if len(files) == 0 {
		return []string{"No memory files: AGENTS.md or CLAUDE.md in the working directory, its parents up to the repository root, or ~/.claude/CLAUDE.md join the system prompt."}
	}
	lines := []string{"Memory files in the system prompt (later ones take precedence)"}
	for _, f := range files {
		lines = append(lines, fmt.Sprintf("  %s (%d lines)", f.Path, strings.Count(strings.TrimRight(f.Content, "\n"), "\n")+1))
	}
	return lines
}

func (m *ui) rewindPicker() {
	var items []pickItem
	for i := m.list.Len() - 1; i >= 0; i-- {
		msg := m.list.At(i)
		if msg.Role != protocol.RoleUser {
			continue
		}
		items = append(items, pickItem{label: firstLine(msg.Text()), value: msg.ID})
	}
	if len(items) == 0 {
		m.status = "nothing to rewind to"
		return
	}
	m.picker = &picker{
		title: "Rewind: the conversation goes back to before the message you pick",
		items: items,
		pick: func(m *ui, it pickItem) tea.Cmd {
			b, ctx, gen := m.sess, m.ctx, m.gen
			text := ""
			if i := m.list.Index(it.value); i >= 0 {
				text = m.list.At(i).Text()
			}
			return func() tea.Msg {
				_, err := b.Rewind(ctx, it.value)
				return rewoundMsg{gen: gen, text: text, err: err}
			}
		},
	}
}

// rewound puts the text of the message rewound to back into the prompt.
func (m *ui) rewound(msg rewoundMsg) {
	if msg.gen != m.gen {
		return
	}
	if msg.err != nil {
		m.status = "rewind: " + msg.err.Error()
		return
	}
	if m.input.Value() == "" {
		m.input.SetValue(msg.text)
	}
}

func (m *ui) modelPicker() {
	cur := m.sess.Model()
	var items []pickItem
	for _, name := range m.opts.Models {
		label := name
		if name == cur {
			label += " (current)"
		}
		items = append(items, pickItem{label: label, value: name})
	}
	if len(items) == 0 {
		m.status = "model: " + cur + " (/model NAME changes it)"
		return
	}
	m.picker = &picker{
		title: "Model",
		items: items,
		pick: func(m *ui, it pickItem) tea.Cmd {
			m.setModel(it.value)
			return nil
		},
	}
}

func (m *ui) resumePicker(msg sessionsMsg) tea.Cmd {
	if msg.gen != m.gen {
		return nil
	}
	if msg.err != nil {
		m.status = "resume: " + msg.err.Error()
		return nil
	}
	var items []pickItem
	for _, in := range msg.infos {
		if in.ID == m.sess.ID() {
			continue
		}
		title := in.Title
		if title == "" {
			title = "(untitled)"
		}
		items = append(items, pickItem{label: in.Modified.Format("2006-01-02 15:04") + "  " + firstLine(title), value: in.ID})
	}
	if len(items) == 0 {
		m.status = "no other stored session in this directory"
		return nil
	}
	open := m.opts.Open
	m.picker = &picker{
		title: "Resume a session",
		items: items,
		pick: func(m *ui, it pickItem) tea.Cmd {
			m.status = "opening the session…"
			return func() tea.Msg {
				s, err := open(it.value)
				return openedMsg{sess: s, err: err}
			}
		},
	}
	return nil
}

// opened switches to a session opened by /resume; the one left is closed.
func (m *ui) opened(msg openedMsg) tea.Cmd {
	if msg.err != nil {
		m.status = "resume: " + msg.err.Error()
		return nil
	}
	old := m.sess
	m.abort("switched to another session")
	title := "resumed session " + msg.sess.ID()
	m.attach(newAgentBackend(msg.sess), "── "+title+" ──")
	m.status = ""
	return tea.Batch(m.pump(), func() tea.Msg {
		if err := old.Close(); err != nil && !errors.Is(err, agent.ErrClosed) {
			return noteMsg{"closing the previous session: " + err.Error()}
		}
		return nil
	})
}

// Permission prompts.

var permChoices = []struct {
	label    string
	decision protocol.Decision
}{
	{"Yes", protocol.DecisionAllow},
	{"Yes, and don't ask again for this tool in this session", protocol.DecisionAllowAlways},
	{"No (esc)", protocol.DecisionDeny},
}

// prompt is the permission request to ask about: the oldest the list
// holds that this UI has not answered, or nil.
func (m *ui) prompt() *protocol.PermissionRequest {
	for _, p := range m.list.PendingPermissions() {
		if !m.answered[p.RequestID] {
			return &p
		}
	}
	return nil
}

// forgetAnswered drops the answers whose requests the list no longer
// holds (a snapshot replaced it without their permissionResolved).
func (m *ui) forgetAnswered() {
	pending := map[string]bool{}
	for _, p := range m.list.PendingPermissions() {
		pending[p.RequestID] = true
	}
	for id := range m.answered {
		if !pending[id] {
			delete(m.answered, id)
		}
	}
}

func (m *ui) permissionBox() []string {
	p := m.prompt()
	detail := p.CompactParams
	if detail == "" {
		detail = p.Parameters
	}
	rule := stDim.Render(strings.Repeat("─", max(m.width, 1)))
	lines := []string{rule, stBold.Render(truncate(fmt.Sprintf("Allow %s(%s)?", p.Name, detail), m.width))}
	if p.Reason != "" {
		lines = append(lines, stDim.Render(truncate(p.Reason, m.width)))
	}
	for i, c := range permChoices {
		mark := "  "
		if i == m.permSel {
			mark = stAccent.Render("❯ ")
		}
		lines = append(lines, fmt.Sprintf("%s%d. %s", mark, i+1, c.label))
	}
	return append(lines, rule)
}

func (m *ui) permissionKey(s string) tea.Cmd {
	choice := -1
	switch s {
	case "up", "k":
		m.permSel = (m.permSel + len(permChoices) - 1) % len(permChoices)
	case "down", "j", "tab":
		m.permSel = (m.permSel + 1) % len(permChoices)
	case "1", "y":
		choice = 0
	case "2", "a":
		choice = 1
	case "3", "n", "esc":
		choice = 2
	case "enter":
		choice = m.permSel
	case "ctrl+c":
		choice = 2
	}
	if choice < 0 {
		return nil
	}
	p := m.prompt()
	m.answered[p.RequestID], m.permSel = true, 0
	if err := m.sess.AnswerPermission(m.ctx, p.RequestID, permChoices[choice].decision); err != nil && !errors.Is(err, agent.ErrUnknownRequest) {
		m.status = "permission: " + err.Error()
	}
	return nil
}

// Pickers: a list to choose from, shown in place of the prompt.

type pickItem struct{ label, value string }

type picker struct {
	title string
	items []pickItem
	sel   int
	pick  func(m *ui, it pickItem) tea.Cmd
}

const pickerRows = 10

func (p *picker) view(width int) []string {
	rule := stDim.Render(strings.Repeat("─", max(width, 1)))
	lines := []string{rule, stBold.Render(truncate(p.title, width))}
	first := max(0, min(p.sel-pickerRows/2, len(p.items)-pickerRows))
	for i := first; i < len(p.items) && i < first+pickerRows; i++ {
		mark := "  "
		label := truncate(p.items[i].label, width-2)
		if i == p.sel {
			mark = stAccent.Render("❯ ")
			label = stBold.Render(label)
		}
		lines = append(lines, mark+label)
	}
	lines = append(lines, stDim.Render(fmt.Sprintf("↑/↓ choose · enter pick · esc cancel  (%d/%d)", p.sel+1, len(p.items))))
	return append(lines, rule)
}

func (p *picker) key(m *ui, s string) tea.Cmd {
	switch s {
	case "up", "k", "ctrl+p":
		p.sel = max(p.sel-1, 0)
	case "down", "j", "ctrl+n":
		p.sel = min(p.sel+1, len(p.items)-1)
	case "pgup":
		p.sel = max(p.sel-pickerRows, 0)
	case "pgdown":
		p.sel = min(p.sel+pickerRows, len(p.items)-1)
	case "esc", "ctrl+c":
		m.picker = nil
	case "enter":
		m.picker = nil
		return p.pick(m, p.items[p.sel])
	}
	return nil
}
