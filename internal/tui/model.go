package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// Bounds of the UI.
const (
	// resumeTail is how many messages of an existing session are printed
	// when the UI attaches to it; earlier ones stay in the session (and in
	// the terminal's scrollback of earlier runs).
	resumeTail = 100
	// expandedTail is how many of the last messages the expanded view
	// shows.
	expandedTail = 100
	// maxBatch bounds the events applied before a frame is rendered.
	maxBatch = 1024
	// inputMaxHeight is the input box's tallest height in lines.
	inputMaxHeight = 8
	// frameHold is how long printing waits for a frame to reach the
	// terminal: a few of Bubble Tea's frame periods.
	frameHold = 100 * time.Millisecond
)

// Messages of the UI's own commands.
type (
	// eventsMsg carries the events that arrived since the last batch, in
	// order. gen tells which subscription they came from.
	eventsMsg struct {
		gen int
		evs []protocol.Event
	}
	// subEndedMsg says that a subscription ended (the session closed).
	subEndedMsg struct {
		gen int
		err error
	}
	tickMsg    struct{}
	printedMsg struct{}
	// markMsg and settleMsg bracket the writes of a print (printGate);
	// writes is how many there were.
	markMsg   struct{}
	settleMsg struct{ writes int }
	// frameCheckMsg follows settleMsg: a print still waiting for a frame
	// then asks Bubble Tea for one (clearScreen).
	frameCheckMsg struct{}
	// clearedMsg follows a tea.ClearScreen (clearScreen): Bubble Tea has
	// handled it (it handles messages in order).
	clearedMsg struct{}
	// releaseMsg ends a hold on printing (holdPrints).
	releaseMsg struct{ hold int }
	// runDoneMsg says that a piece of work the UI started has ended.
	runDoneMsg struct {
		gen  int
		kind jobKind
		w    session.Job
		cost float64 // USD
		err  error
	}
	// noteMsg puts a line in the status bar.
	noteMsg struct{ text string }
	// btwMsg is the answer to a side question (/btw).
	btwMsg struct {
		question, answer string
		err              error
	}
)

type jobKind int

const (
	jobMessage jobKind = iota
	jobBang
	jobCompact
)

// sent is work this UI sent to the session that has not ended.
type sent struct {
	w    session.Job
	kind jobKind
	text string
}

type blockKey struct {
	msg string
	idx int
}

// blockCache holds the rendering of a block that is on screen and not yet
// printed. Entries are removed when the block is printed or its message
// leaves the list, so the caches hold only the live area.
type blockCache struct {
	md    streamMD
	plain plainStream
	final []string // the finished rendering of an ended block
}

// ui is the Bubble Tea model of the UI. It is used only by the Bubble
// Tea event loop; the commands it returns touch none of its fields.
type ui struct {
	ctx   context.Context
	opts  Options
	clock model.Clock

	sess backend
	sub  session.Subscription
	gen  int // bumped when the UI attaches to a session

	// list is the UI's copy of the session, kept by the one reducer.
	list protocol.List
	// Scrollback: messages before pm are printed and closed; of message pm
	// the first pb blocks are printed, and of block pb the first pl lines:
	// an answer's lines go to the scrollback as they become final, while
	// the block streams (emitStable). What follows is the live area.
	pm, pb, pl int
	// sent is the work this UI sent that has not ended, oldest first.
	sent   []sent
	caches map[blockKey]*blockCache
	md     *markdown
	style  string // answers' colours: "dark" or "light"
	ready  bool   // the terminal's size is known

	outbox   []string // lines to print above the UI, in order
	printing bool     // a print is on its way to the terminal
	// printedAny: something was printed, so the live frame is below it,
	// not at the top of the screen.
	printedAny bool
	// printed is everything emitted for the scrollback, in order, so that
	// it can be printed again at a new terminal size (reprint).
	printed []printedEntry
	// reprint: the terminal changed size since the scrollback was
	// printed; the next print clears the terminal and prints it all again.
	reprint bool
	// holdPrints delays printing until a frame is on the terminal: at the
	// start (before the first frame Bubble Tea places printed lines as if
	// the frame filled the screen, charmbracelet/bubbletea#1740), and after
	// the expanded view (until the main screen is back, a print would land
	// on the alternate screen). holds counts the holds, so that a timer of
	// an earlier one does not end a later one.
	holdPrints bool
	// quitting: the user asked to quit; the program ends after the
	// pending prints.
	quitting bool
	holds    int
	// expandAfterPrint defers ctrl+o while a print is on its way: it must
	// reach the main screen before the alternate one replaces it.
	expandAfterPrint bool
	// homes counts the screen clears on their way through Bubble Tea
	// (clearScreen); while there are any, the frame's cursor is in the
	// frame's top left corner.
	homes int
	// settleHome: settleMsg put the cursor in the corner (one of homes)
	// for its print, which waits for a frame.
	settleHome bool
	printer    func(string) tea.Cmd
	reprinter  func(string) tea.Cmd // clears the terminal, then prints
	// gate is the program's output (Run); nil when the model runs without
	// Bubble Tea's program (tests).
	gate    *printGate
	profile colorprofile.Profile

	width, height int
	notice        string // the stream's trouble (stalled, retrying)
	status        string // feedback of the last command
	// answered holds the permission requests this UI answered whose
	// permissionResolved has not arrived yet: their prompts are not shown
	// again (the list holds them until then).
	answered   map[string]bool
	permSel    int
	picker     *picker
	expanded   *expandedView
	input      textarea.Model
	history    []string
	histPos    int
	draft      string
	usage      protocol.Usage
	cost       float64
	tickArmed  bool
	armedQuit  bool // ctrl+c was pressed once on an empty, idle prompt
	inputCache struct {
		key    inputKey
		box    []string
		cursor *tea.Cursor
	}
	statusCache struct{ raw, line string }
}

func newModel(ctx context.Context, opts Options, b backend) *ui {
	m := &ui{
		ctx:     ctx,
		opts:    opts,
		clock:   opts.Clock,
		caches:  map[blockKey]*blockCache{},
		style:   "dark",
		width:   80,
		height:  24,
		profile: colorprofile.TrueColor,
	}
	if opts.Style != "" {
		m.style = opts.Style
	}
	if m.clock == nil {
		m.clock = model.SystemClock
	}
	m.printer = m.teaPrinter
	m.reprinter = m.teaReprinter
	if opts.Width > 0 && opts.Height > 0 {
		m.width, m.height, m.ready = opts.Width, opts.Height, true
	}
	m.md = newMarkdown(m.style, m.width-2)
	m.input = newInput(m.width)
	m.attach(b, fmt.Sprintf("✻ sluice · %s · /help for commands · ctrl+o expanded view · esc interrupts", b.WorkDir()))
	return m
}

// printRoom is how many terminal rows one print may take: the live frame
// is kept that much shorter than the terminal (View).
//
// Bubble Tea inserts printed lines above the frame it last flushed, which
// may still be the frame from before the printed content left the live
// area (it flushes on a ticker; nothing tells when). When the printed rows
// and that frame together are taller than the terminal, rows of the old
// frame are scrolled into the scrollback for good: content shown twice
// (charmbracelet/bubbletea#1736). With every frame at most height-room
// rows and every print at most room rows, the two always fit, whichever
// frame was flushed last.
func printRoom(height int) int { return max(height/4, 1) }

// teaPrinter prints s above the program in pieces of at most printRoom
// rows, through the print gate, then reports it printed so that the next
// print waits for this one (commands run concurrently).
func (m *ui) teaPrinter(s string) tea.Cmd {
	p := m.pieces(s)
	return m.gatedPrint(len(p), p...)
}

// clearTerminal moves the cursor home and clears the screen and the
// scrollback.
const clearTerminal = "\x1b[H\x1b[2J\x1b[3J"

// teaReprinter clears the terminal, screen and scrollback, then prints s
// (the whole scrollback again, laid out for the new size). The clear goes
// out as a print of its own, so that it reaches the terminal in order with
// the prints (Bubble Tea writes prints at once, raw output on its next
// frame), and the frame is then drawn afresh (clearScreen), since the one
// on the terminal is gone. The gate holds it all until that frame.
func (m *ui) teaReprinter(s string) tea.Cmd {
	p := m.pieces(s)
	return m.gatedPrint(1+len(p), append([]tea.Cmd{tea.Println(clearTerminal), m.clearScreen()}, p...)...)
}

// clearScreen makes Bubble Tea draw the next frame whole (tea.ClearScreen)
// and keeps the frame's cursor in the frame's top left corner until Bubble
// Tea has handled it (clearedMsg). Bubble Tea handles a tea.ClearScreen by
// moving its cursor to that corner, and the move waits in its buffer for
// the next frame, while a print is written at once from where it believes
// the cursor is. When a frame was flushed since the last print (on Bubble
// Tea's own ticker, which a loaded machine can slip in anywhere), the
// cursor was elsewhere in the frame: the move was not empty, and a print
// before the next frame was inserted into the middle of the frame, which
// stayed in the scrollback with the frames after it (a reprint on a
// resize, TestPseudoTerminalShrinkMidStream now and then under load, every
// time with a frame forced between the clear's print and the
// tea.ClearScreen). With the cursor in that corner after every frame, the
// move is empty. Call it in the update that decides the clear: the view
// that update leaves is the first with the cursor there.
func (m *ui) clearScreen() tea.Cmd {
	m.homes++
	return tea.Sequence(tea.ClearScreen, func() tea.Msg { return clearedMsg{} })
}

// pieces cuts s into prints of at most printRoom rows each.
func (m *ui) pieces(s string) []tea.Cmd {
	if m.profile < colorprofile.TrueColor {
		var buf strings.Builder
		w := colorprofile.Writer{Forward: &buf, Profile: m.profile}
		_, _ = w.WriteString(s)
		s = buf.String()
	}
	var cmds []tea.Cmd
	for _, piece := range splitRows(s, m.width, printRoom(m.height)) {
		if piece == "" {
			piece = " " // Bubble Tea prints nothing for an empty string
		}
		cmds = append(cmds, tea.Println(piece))
	}
	return cmds
}

// gatedPrint holds the program's output from this update on, runs steps
// after marking the print gate (printGate) and settles it, then reports
// the print done. writes is how many of the steps write to the terminal:
// a print writes once (its text is never empty), a screen clear only
// marks the next frame.
func (m *ui) gatedPrint(writes int, steps ...tea.Cmd) tea.Cmd {
	if m.gate != nil {
		m.gate.hold()
	}
	cmds := append([]tea.Cmd{func() tea.Msg { return markMsg{} }}, steps...)
	cmds = append(cmds,
		func() tea.Msg { return settleMsg{writes: writes} },
		func() tea.Msg { return frameCheckMsg{} },
		func() tea.Msg { return printedMsg{} })
	return tea.Sequence(cmds...)
}

// splitRows cuts s into pieces of at most room terminal rows, counting the
// rows a line wider than the terminal wraps onto.
func splitRows(s string, width, room int) []string {
	var pieces []string
	lines := strings.Split(s, "\n")
	start, rows := 0, 0
	for i, l := range lines {
		r := 1
		if w := ansi.StringWidth(l); width > 0 && w > width {
			r += (w - 1) / width
		}
		if rows > 0 && rows+r > room {
			pieces = append(pieces, strings.Join(lines[start:i], "\n"))
			start, rows = i, 0
		}
		rows += r
	}
	return append(pieces, strings.Join(lines[start:], "\n"))
}

// attach makes b the session on screen: its state replaces the list, the
// last messages are printed, and its events are read from now on.
func (m *ui) attach(b backend, banner string) {
	if m.sub != nil {
		m.sub.Close()
	}
	m.gen++
	m.sess = b
	snap, sub := b.SnapshotAndSubscribe()
	m.sub = sub
	m.list.Reset(snap)
	clear(m.caches)
	m.sent = nil
	m.answered, m.permSel, m.notice = map[string]bool{}, 0, ""
	m.pm, m.pb, m.pl = 0, 0, 0
	m.closeStreamed()
	if banner != "" {
		m.emit([]string{stAccent.Render(banner)})
	}
	if n := m.list.Len(); n > resumeTail {
		m.pm = n - resumeTail
		m.emit([]string{stDim.Render(fmt.Sprintf("… %d earlier messages", m.pm))})
	}
	m.advance()
}

// Init starts reading the session's events and sends the first prompt.
func (m *ui) Init() tea.Cmd {
	cmds := []tea.Cmd{m.pump(), tea.RequestBackgroundColor, m.flushPrints()}
	if m.holdPrints {
		cmds = append(cmds, m.hold(frameHold))
	}
	if p := strings.TrimSpace(m.opts.Prompt); p != "" {
		cmds = append(cmds, m.submit(p))
	}
	return tea.Batch(cmds...)
}

// pump reads the next events of the current subscription: it waits for
// one, then takes every event already queued behind it, so that a burst
// is applied whole before the next frame. Nothing is dropped or delayed.
func (m *ui) pump() tea.Cmd {
	sub, gen, ctx := m.sub, m.gen, m.ctx
	return func() tea.Msg {
		ev, err := sub.Next(ctx)
		if err != nil {
			return subEndedMsg{gen: gen, err: err}
		}
		evs := []protocol.Event{ev}
		for len(evs) < maxBatch && sub.Pending() > 0 {
			ev, err := sub.Next(ctx)
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		return eventsMsg{gen: gen, evs: evs}
	}
}

// Update handles one message.
func (m *ui) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
	case tea.ColorProfileMsg:
		m.profile = msg.Profile
	case tea.BackgroundColorMsg:
		if m.opts.Style == "" && !msg.IsDark() && m.style != "light" {
			m.style = "light"
			m.md = newMarkdown(m.style, m.width-2)
			clear(m.caches)
		}
	case eventsMsg:
		if msg.gen != m.gen {
			break
		}
		for _, ev := range msg.evs {
			if msg.gen != m.gen {
				break // a resync replaced the subscription
			}
			m.apply(ev)
		}
		cmds = append(cmds, m.pump())
	case subEndedMsg:
		if msg.gen == m.gen && m.ctx.Err() == nil {
			m.status = "the session ended"
		}
	case tickMsg:
		m.tickArmed = false
	case markMsg:
		if m.gate != nil {
			m.gate.mark()
		}
	case settleMsg:
		if m.gate != nil && m.gate.settle(msg.writes) {
			// The print waits for a frame. The cursor goes to the frame's
			// corner now, so that a frame flushed from here on leaves it
			// there (clearScreen); one flushed before this update's view
			// released the print.
			m.homes++
			m.settleHome = true
		}
	case frameCheckMsg:
		if m.settleHome {
			m.settleHome = false
			if m.gate.settling() {
				// Bubble Tea draws only a changed view; a cleared screen
				// is drawn again whatever the view.
				cmds = append(cmds, m.clearScreen())
			}
			m.homes--
		}
	case clearedMsg:
		m.homes--
	case printedMsg:
		m.printing = false
		if m.expandAfterPrint {
			m.expandAfterPrint = false
			m.expand()
		}
	case releaseMsg:
		if msg.hold == m.holds {
			m.holdPrints = false
		}
	case runDoneMsg:
		if msg.gen != m.gen {
			break
		}
		m.sent = slices.DeleteFunc(m.sent, func(s sent) bool { return s.w == msg.w })
		m.cost += msg.cost
		if msg.kind == jobCompact && msg.err != nil {
			m.status = "compact: " + msg.err.Error()
		}
		m.advance()
	case noteMsg:
		m.status = msg.text
	case btwMsg:
		if msg.err != nil {
			m.status = "/btw: " + msg.err.Error()
		} else {
			m.emit(styleLines(stDim, append([]string{"btw: " + msg.question}, strings.Split(strings.TrimRight(msg.answer, "\n"), "\n")...)))
		}
	case sessionsMsg:
		cmds = append(cmds, m.resumePicker(msg))
	case openedMsg:
		cmds = append(cmds, m.opened(msg))
	case rewoundMsg:
		m.rewound(msg)
	case tea.KeyPressMsg:
		cmds = append(cmds, m.key(msg))
	case tea.PasteMsg:
		if m.expanded == nil && m.picker == nil && m.prompt() == nil {
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(msg)
			cmds = append(cmds, cmd)
		}
	}
	cmds = append(cmds, m.flushPrints(), m.armTick())
	return m, tea.Batch(cmds...)
}

func (m *ui) resize(w, h int) {
	if w <= 0 || h <= 0 {
		return
	}
	if w != m.width {
		m.md = newMarkdown(m.style, w-2)
		clear(m.caches)
	}
	if m.ready && (w != m.width || h < m.height) {
		// The terminal reflows what it holds to the new width, the live
		// frame too: Bubble Tea then redraws the frame from where it was
		// before the reflow, and rows of the old frame stay above the new
		// one, in the scrollback once the frame no longer fits (the frame is
		// redrawn relative to the cursor; nothing tells how many rows the
		// reflow added above it). A shorter terminal scrolls the frame's top
		// rows away the same way. So the terminal is cleared and everything
		// printed is printed again at the new size, as Claude Code does.
		m.reprint = true
	}
	m.width, m.height = w, h
	m.restream()
	m.input.SetWidth(max(w-2, 10))
	if m.expanded != nil {
		m.expanded.layout(m)
	}
	if !m.ready {
		m.ready = true
		m.advance()
	}
}

// busy reports whether work is running or sent by this UI.
func (m *ui) busy() bool { return m.list.Running() || len(m.sent) > 0 }

// printedEntry is one emitted piece of the scrollback: a block of a
// message (laid out again from the list at a new width while the message
// is there) or fixed lines.
type printedEntry struct {
	lines []string
	block *blockKey
	// open: the block still streams and lines are what of it is printed
	// so far (the first pl lines of its rendering), with no blank line
	// after them yet.
	open bool
}

// emit queues lines to print above the UI, followed by a blank line.
func (m *ui) emit(lines []string) {
	m.emitEntry(printedEntry{lines: lines})
}

// emitBlock queues block bi of msg, laid out for the scrollback. When its
// first lines were printed while it streamed (it is block pb of message pm
// and pl > 0), the rest of the stream's rendering follows them.
func (m *ui) emitBlock(msg protocol.Message, bi int) {
	if m.pl == 0 {
		m.emitEntry(printedEntry{lines: m.renderBlock(msg, bi, true).all(), block: &blockKey{msg.ID, bi}})
		return
	}
	all := textPart(m.cache(msg.ID, bi).md.final(m.md, msg.Blocks[bi].Content)).all()
	m.outbox = append(m.outbox, all[min(m.pl, len(all)):]...)
	m.outbox = append(m.outbox, "")
	if e := m.streamedEntry(); e != nil {
		e.lines, e.open = all, false
	}
}

// emitStable queues the lines of streaming block bi of msg (block pb of
// message pm) that no later chunk can change and are not printed yet: an
// answer's text up to its last paragraph, heading or list item begun
// outside a code fence (streamMD). Other blocks print whole at their end; a reasoning block
// folds to its header then.
func (m *ui) emitStable(msg protocol.Message, bi int) {
	b := msg.Blocks[bi]
	if b.Type != protocol.BlockText || msg.Role != protocol.RoleAssistant {
		return
	}
	c := m.cache(msg.ID, bi)
	c.md.view(m.md, b.Content)
	p := textPart(c.md.stableLines())
	n := p.count()
	if n <= m.pl {
		return
	}
	lines := make([]string, 0, n-m.pl)
	for k := m.pl; k < n; k++ {
		lines = append(lines, p.line(k))
	}
	m.pl = n
	m.outbox = append(m.outbox, lines...)
	if e := m.streamedEntry(); e != nil {
		e.lines = append(e.lines, lines...)
		return
	}
	m.printed = append(m.printed, printedEntry{lines: slices.Clone(lines), block: &blockKey{msg.ID, bi}, open: true})
}

// streamedEntry is the printed entry of the block printed while it
// streams, if any.
func (m *ui) streamedEntry() *printedEntry {
	for i := len(m.printed) - 1; i >= 0; i-- {
		if m.printed[i].open {
			return &m.printed[i]
		}
	}
	return nil
}

// closeStreamed leaves the block printed while it streamed as printed so
// far: it left the list, or the print cursor left it.
func (m *ui) closeStreamed() {
	if e := m.streamedEntry(); e != nil {
		e.open = false
		m.outbox = append(m.outbox, "") // the blank line after each entry
	}
}

// restream lays out the block printed while it streams again for the
// current width: the stable part of its source is the same, its lines are
// not. The terminal is reprinted at the new width (reprinted), with these
// lines for the block; the live area shows what follows them.
func (m *ui) restream() {
	e := m.streamedEntry()
	if e == nil || m.pl == 0 || m.pm >= m.list.Len() || m.pb >= len(m.list.At(m.pm).Blocks) {
		return
	}
	msg := m.list.At(m.pm)
	c := m.cache(msg.ID, m.pb)
	c.md.view(m.md, msg.Blocks[m.pb].Content)
	e.lines = textPart(c.md.stableLines()).all()
	m.pl = len(e.lines)
}

func (m *ui) emitEntry(e printedEntry) {
	if len(e.lines) == 0 {
		return
	}
	m.printed = append(m.printed, e)
	m.outbox = append(m.outbox, e.lines...)
	m.outbox = append(m.outbox, "")
}

// wrapRows cuts the lines wider than width where the terminal wraps them
// when they are printed: a frame line must fit one row (Bubble Tea counts
// a frame's rows by its lines).
func wrapRows(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		if width > 0 && ansi.StringWidth(l) > width {
			out = append(out, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
		} else {
			out = append(out, l)
		}
	}
	return out
}

// reprinted returns the whole scrollback laid out for the current width:
// blocks still in the list rendered again, other lines wrapped to it.
func (m *ui) reprinted() []string {
	m.restream()
	var out []string
	for i, e := range m.printed {
		lines := e.lines
		if e.block != nil && !e.open {
			if mi := m.list.Index(e.block.msg); mi >= 0 && e.block.idx < len(m.list.At(mi).Blocks) {
				lines = m.renderBlock(m.list.At(mi), e.block.idx, true).all()
				m.printed[i].lines = lines
			}
		}
		for _, l := range lines {
			if ansi.StringWidth(l) > m.width {
				out = append(out, strings.Split(ansi.Wrap(l, m.width, ""), "\n")...)
			} else {
				out = append(out, l)
			}
		}
		if !e.open {
			out = append(out, "")
		}
	}
	return out
}

// hold stops printing for d, so that a frame reaches the terminal first.
func (m *ui) hold(d time.Duration) tea.Cmd {
	m.holdPrints = true
	m.holds++
	n, clock, ctx := m.holds, m.clock, m.ctx
	return func() tea.Msg {
		t := clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return releaseMsg{hold: n}
		case <-ctx.Done():
			return nil
		}
	}
}

// quit ends the program once what waits to be printed is printed.
func (m *ui) quit() tea.Cmd {
	m.quitting = true
	return m.flushPrints()
}

// flushPrints sends what waits to be printed, once the previous print is
// through (prints must keep their order) and unless the expanded view
// holds the screen (nothing can be printed on the alternate screen).
func (m *ui) flushPrints() tea.Cmd {
	if m.quitting {
		// Print what is left without the holds, then end the program:
		// nothing finished may be lost from the terminal.
		switch {
		case m.printing:
			return nil // printedMsg comes back here
		case len(m.outbox) == 0:
			return tea.Quit
		}
		s := strings.Join(m.outbox, "\n")
		m.outbox = m.outbox[:0:0]
		return m.startPrint(m.printer, s)
	}
	// Content goes out in the update that takes it from the live area, not
	// after a wait for the frame without it: waiting blanked it from the
	// screen until the print landed (a visible blink each time a message
	// finished). Bubble Tea inserts the lines above the frame last flushed,
	// which may still hold the content; the print gate (printGate) writes
	// the print together with the next frame, and the frame and the print
	// always fit the terminal together (printRoom), so that frame is
	// redrawn in place, never scrolled into the scrollback. While a print
	// waits here, its content stays in the live area (View).
	if m.printing || m.holdPrints || m.expanded != nil {
		return nil
	}
	if m.reprint {
		// Everything emitted, the lines still waiting in the outbox too.
		m.reprint = false
		m.outbox = m.outbox[:0:0]
		return m.startPrint(m.reprinter, strings.Join(m.reprinted(), "\n"))
	}
	if len(m.outbox) == 0 {
		return nil
	}
	s := strings.Join(m.outbox, "\n")
	m.outbox = m.outbox[:0:0]
	return m.startPrint(m.printer, s)
}

// startPrint hands s to out (the printer or the reprinter).
func (m *ui) startPrint(out func(string) tea.Cmd, s string) tea.Cmd {
	m.printing, m.printedAny = true, true
	return out(s)
}

// armTick schedules the next second of a streaming reasoning block's
// timer, or of a compaction's: they show whole seconds since their start,
// so the tick comes when the next second begins.
func (m *ui) armTick() tea.Cmd {
	if m.tickArmed || m.expanded != nil {
		return nil
	}
	now := m.clock.Now().UnixMilli()
	var next int64 = -1
	at := func(startedAt int64) {
		d := 1000 - (now-startedAt)%1000
		if now < startedAt {
			d = startedAt - now
		}
		if next < 0 || d < next {
			next = d
		}
	}
	m.liveBlocks(func(_ protocol.Message, _ int, b protocol.Block) {
		if b.Type == protocol.BlockReasoning && b.Stage != protocol.StageEnd && b.StartedAt > 0 {
			at(b.StartedAt)
		}
	})
	if c := m.list.Compaction(); c != nil && c.StartedAt > 0 {
		at(c.StartedAt) // its elapsed time
	}
	if next < 0 {
		return nil
	}
	m.tickArmed = true
	clock, ctx := m.clock, m.ctx
	d := time.Duration(next) * time.Millisecond
	return func() tea.Msg {
		t := clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return tickMsg{}
		case <-ctx.Done():
			return nil
		}
	}
}

// liveBlocks calls f for each block of the live area, in order.
func (m *ui) liveBlocks(f func(msg protocol.Message, i int, b protocol.Block)) {
	for i := m.pm; i < m.list.Len(); i++ {
		msg := m.list.At(i)
		start := 0
		if i == m.pm {
			start = m.pb
		}
		for bi := start; bi < len(msg.Blocks); bi++ {
			f(msg, bi, msg.Blocks[bi])
		}
	}
}

// View renders the live area: what is still changing, the prompt and the
// status line. Everything finished is in the scrollback.
func (m *ui) View() tea.View {
	if m.expanded != nil {
		return m.expanded.view(m)
	}
	var parts []part
	total := 0
	if n := len(m.outbox); n > 1 && m.printedAny {
		// What waits to be printed (behind an earlier print or a hold)
		// stays in the live area until the update that prints it, so that
		// it is never off the terminal in between. Each entry ends with a
		// blank line; the last one is the gap to the next part.
		//
		// Not before the first print: the frame is then at the top of the
		// screen, and a frame redrawn from there (an erase from the top
		// left corner) is scrolled into the scrollback by some terminals
		// (tmux's scroll-on-clear), where what waits would stay as a
		// second copy.
		p := part{pre: wrapRows(m.outbox[:n-1], m.width)}
		parts = append(parts, p)
		total += p.count()
	}
	m.liveBlocks(func(msg protocol.Message, bi int, _ protocol.Block) {
		p := m.renderBlock(msg, bi, false)
		if bi == m.pb && msg.ID == m.list.At(m.pm).ID {
			p.off = min(m.pl, p.count()) // printed while it streams
		}
		if n := p.count(); n > 0 {
			if len(parts) > 0 {
				total++ // the blank line between blocks
			}
			parts = append(parts, p)
			total += n
		}
	})
	mid, box, boxCursor, bottom := m.bottom()
	// The frame stays printRoom rows short of the terminal (see printRoom).
	avail := max(m.height-printRoom(m.height)-len(mid)-len(box)-len(bottom)-1, 1)
	// Only the last lines of the live area fit: only they are laid out.
	skip := 0
	var lines []string
	if total > avail {
		skip = total - avail + 1
		// A streaming reasoning block cut at the top keeps its header,
		// with its timer, in view.
		if p, start := partAt(parts, skip); p.pin && skip > start {
			skip++
			lines = append(lines, p.line(0), faint(fmt.Sprintf("%s… %d lines above · ctrl+o shows all", indent, skip-1)))
		} else {
			lines = append(lines, faint(fmt.Sprintf("… %d lines above · ctrl+o shows all", skip)))
		}
	}
	i := 0
	for pi, p := range parts {
		if pi > 0 {
			if i >= skip {
				lines = append(lines, "")
			}
			i++
		}
		n := p.count()
		if i+n <= skip {
			i += n
			continue
		}
		for k := max(skip-i, 0); k < n; k++ {
			lines = append(lines, p.line(k))
		}
		i += n
	}
	if len(lines) > 0 {
		lines = append(lines, "")
	}
	lines = append(lines, mid...)
	y := len(lines)
	lines = append(lines, box...)
	lines = append(lines, bottom...)
	v := tea.NewView(strings.Join(lines, "\n"))
	switch {
	case m.homes > 0:
		c := tea.NewCursor(0, 0)
		if boxCursor != nil {
			*c = *boxCursor // its shape and colour
			c.Position = tea.Position{}
		}
		v.Cursor = c
	case boxCursor != nil:
		c := *boxCursor
		c.Position.Y += y
		v.Cursor = &c
	}
	return v
}

// partAt returns the part that holds line i of the live area (parts one
// after the other, a blank line between two) and the index of its first
// line.
func partAt(parts []part, i int) (part, int) {
	at := 0
	for pi, p := range parts {
		if pi > 0 {
			at++
		}
		if i < at+p.count() {
			return p, at
		}
		at += p.count()
	}
	return part{}, at
}

// renderBlock lays out block bi of msg. A final rendering is for the
// scrollback; otherwise the block is live and its rendering is cached, so
// that a delta costs what is new, not the whole block.
func (m *ui) renderBlock(msg protocol.Message, bi int, final bool) part {
	b := msg.Blocks[bi]
	w := m.width
	switch b.Type {
	case protocol.BlockText:
		if msg.Role == protocol.RoleUser {
			return fixed(userLines(b.Content, w))
		}
		if strings.TrimSpace(b.Content) == "" {
			return part{}
		}
		if final {
			return textPart(m.md.render(b.Content))
		}
		c := m.cache(msg.ID, bi)
		if b.Stage == protocol.StageEnd {
			if c.final == nil {
				c.final = m.md.render(b.Content)
			}
			return textPart(c.final)
		}
		return textPart(c.md.view(m.md, b.Content)...)
	case protocol.BlockReasoning:
		header := thinkingHeader(b, m.clock.Now())
		if final || b.Stage == protocol.StageEnd {
			// Finished reasoning folds to its header; its text is in the
			// expanded view.
			return reasoningPart(header)
		}
		done, rest := m.cache(msg.ID, bi).plain.parts(b.Content, w-2)
		return reasoningPart(header, done, rest)
	case protocol.BlockTool:
		if b.CompactParams == "" && !final {
			// A call waiting for permission has its parameters complete:
			// the request carries their compact form before the block does.
			for _, p := range m.list.PendingPermissions() {
				if p.MessageID == msg.ID && p.BlockIndex == bi {
					b.CompactParams = p.CompactParams
				}
			}
		}
		return fixed(toolLines(b, w))
	case protocol.BlockError:
		return fixed(errorLines(b.Content, w))
	case protocol.BlockCompact:
		return fixed([]string{stAccent.Render("※ ") + stDim.Render("Conversation compacted · ctrl+o shows the summary")})
	}
	return part{}
}

func (m *ui) cache(msgID string, bi int) *blockCache {
	k := blockKey{msgID, bi}
	c := m.caches[k]
	if c == nil {
		c = &blockCache{}
		m.caches[k] = c
	}
	return c
}

// bottom renders what is under the live transcript: the work queued
// behind the run (from any face: the session's view state) and notices
// (mid), the input box or the prompt that replaces it, with the cursor
// relative to it, and the status line.
func (m *ui) bottom() (mid, box []string, cursor *tea.Cursor, status []string) {
	// The background tasks running, from the view state: they outlive
	// the run that started them.
	for _, tk := range m.list.Tasks() {
		line := "⏺ " + tk.TaskID + " running: " + firstLineOf(tk.Description)
		if out := lastLineOf(tk.ShortResult); out != "" {
			line += " · " + out
		}
		mid = append(mid, stDim.Render(truncate(line, m.width)))
	}
	for _, q := range m.list.Queued() {
		first, _, _ := strings.Cut(queuedText(q), "\n")
		mid = append(mid, stDim.Render("⏵ queued: "+truncate(first, m.width-12)))
	}
	if m.notice != "" {
		mid = append(mid, stNotice.Render(truncate(m.notice, m.width)))
	}
	switch c := m.list.Compaction(); {
	case c != nil:
		mid = append(mid, truncate(compactingLine(*c, m.clock.Now()), m.width))
	case m.busy():
		mid = append(mid, workingLine)
	}
	switch {
	case m.prompt() != nil:
		box = m.permissionBox()
	case m.picker != nil:
		box = m.picker.view(m.width)
	default:
		box, cursor = m.inputBox()
	}
	status = []string{m.statusLine()}
	return mid, box, cursor, status
}

// firstLineOf is s's first line.
func firstLineOf(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// lastLineOf is s's last non-blank line.
func lastLineOf(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	return strings.TrimSpace(s[strings.LastIndexByte(s, '\n')+1:])
}

// inputKey is what the input box's rendering depends on.
type inputKey struct {
	value            string
	line, col, width int
	focused          bool
}

// inputBox renders the prompt between two rules. Rendering a text area
// costs more than a delta does, so the rendering is kept until the text,
// the cursor or the width changes.
func (m *ui) inputBox() ([]string, *tea.Cursor) {
	k := inputKey{value: m.input.Value(), line: m.input.Line(), col: m.input.Column(), width: m.width,
		focused: m.input.Focused()}
	if m.inputCache.key != k {
		rule := stDim.Render(strings.Repeat("─", max(m.width, 1)))
		box := []string{rule}
		box = append(box, strings.Split(m.input.View(), "\n")...)
		box = append(box, rule)
		var cursor *tea.Cursor
		if c := m.input.Cursor(); c != nil {
			c.Position.Y++
			cursor = c
		}
		m.inputCache.key, m.inputCache.box, m.inputCache.cursor = k, box, cursor
	}
	var c *tea.Cursor
	if m.inputCache.cursor != nil {
		cc := *m.inputCache.cursor
		c = &cc
	}
	return m.inputCache.box, c
}

func (m *ui) statusLine() string {
	left := m.sess.Model()
	if left == "" {
		left = "default model"
	}
	if mode := m.sess.PermissionMode(); mode != "" {
		left += " · " + string(mode)
	}
	right := fmt.Sprintf("↑%s ↓%s tokens · $%.4f", humanTokens(m.usage.InputTokens+m.usage.CacheReadInputTokens+m.usage.CacheCreationInputTokens), humanTokens(m.usage.OutputTokens), m.cost)
	if m.status != "" {
		left += " · " + m.status
	}
	raw := left + "\x00" + right + "\x00" + fmt.Sprint(m.width)
	if m.statusCache.raw == raw {
		return m.statusCache.line
	}
	line := ""
	if gap := m.width - lipgloss.Width(left) - lipgloss.Width(right); gap < 1 {
		line = truncate(stDim.Render(left+" · "+right), m.width)
	} else {
		line = stDim.Render(left + strings.Repeat(" ", gap) + right)
	}
	m.statusCache.raw, m.statusCache.line = raw, line
	return line
}

func humanTokens(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func truncate(s string, w int) string {
	if w < 1 {
		w = 1
	}
	return ansi.Truncate(s, w, "…")
}

// newInput builds the prompt: multi-line, growing with its content.
func newInput(width int) textarea.Model {
	ta := textarea.New()
	ta.Prompt = "> "
	ta.ShowLineNumbers = false
	ta.Placeholder = "Ask anything · /help for commands · !cmd runs a shell command"
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = inputMaxHeight
	ta.CharLimit = 0
	ta.SetVirtualCursor(false)
	st := ta.Styles()
	st.Focused.CursorLine = lipgloss.NewStyle()
	st.Focused.Base = lipgloss.NewStyle()
	st.Blurred.Base = lipgloss.NewStyle()
	st.Cursor.Blink = false
	ta.SetStyles(st)
	// Enter sends; these keys break the line instead.
	ta.KeyMap.InsertNewline.SetKeys("shift+enter", "alt+enter", "ctrl+j")
	ta.SetWidth(max(width-2, 10))
	ta.Focus()
	return ta
}
