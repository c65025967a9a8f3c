package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/testbin"
)

// TestPseudoTerminalLongAnswer runs the built sluice binary under tmux
// against a local model server that streams long reasoning and a 300-line
// answer, pausing the stream at points the test chooses. At three sizes,
// with two resizes mid-stream: while the reasoning, longer than the screen,
// streams, its timer shows; it folds to one line; the answer's start is in
// the scrollback while the rest still streams, the live area is not cut;
// and at the end the terminal holds every line of the answer once.
func TestPseudoTerminalLongAnswer(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is required (SLUICE_REQUIRE_TMUX is set) but not installed")
		}
		t.Skip("tmux is not installed")
	}
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := testbin.Sluice(t)
	for _, tc := range []struct {
		w, h    int
		resizes [2][2]int
	}{
		{100, 30, [2][2]int{{70, 24}, {120, 40}}},
		{72, 24, [2][2]int{{100, 30}, {50, 20}}},
		{50, 40, [2][2]int{{44, 16}, {80, 24}}},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.w, tc.h), func(t *testing.T) {
			t.Parallel()
			src, markers := longAnswer(0, 300)
			text := fakemodel.Chunks(src, 40)
			thoughts := words(5000, 60)
			var reasoning []string
			for _, w := range thoughts {
				reasoning = append(reasoning, w+" is one more thought.\n")
			}
			reasoned, summarized, called := make(chan struct{}), make(chan struct{}), make(chan struct{})
			dir := t.TempDir()
			notes := filepath.Join(dir, "notes.txt")
			if err := os.WriteFile(notes, []byte("zqnote\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			gates := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
			at := [2]int{len(text) / 3, 2 * len(text) / 3}
			fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
				switch {
				case r.ToolResult != "":
					return fakemodel.Answer{Text: []string{"Read it."}}
				case r.LastUserText == "read the notes":
					// The call's parameters hold after their first half.
					return fakemodel.Answer{Tool: &fakemodel.ToolCall{ID: "toolu_1", Name: "Read",
						Input: map[string]string{"file_path": notes}}, ToolGate: called}
				}
				if strings.HasPrefix(r.LastUserText, "Summarize") {
					// /compact: the summary holds after two chunks.
					return fakemodel.Answer{Text: []string{"The user asked ", "for a long answer. ", "It was given."},
						Gates: map[int]<-chan struct{}{2: summarized}}
				}
				return fakemodel.Answer{Reasoning: reasoning, ReasoningGate: reasoned, Text: text,
					Gates: map[int]<-chan struct{}{at[0]: gates[0], at[1]: gates[1]}}
			})
			t.Cleanup(fm.Close)
			// Closing the gates lets a stream still held end with the test.
			t.Cleanup(func() {
				for _, c := range append(gates[:], reasoned, summarized, called) {
					select {
					case <-c:
					default:
						close(c)
					}
				}
			})

			x := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
			x.must("new-session", "-d", "-x", fmt.Sprint(tc.w), "-y", fmt.Sprint(tc.h), "-s", "t", "-c", dir,
				"-e", "SLUICE_HOME="+filepath.Join(dir, "home"),
				"-e", "ANTHROPIC_BASE_URL="+fm.URL(), "-e", "ANTHROPIC_API_KEY=test-key",
				fmt.Sprintf("%s --model fake-model; sleep 600", bin))
			t.Cleanup(func() { _, _ = x.run("kill-server") })
			x.must("set-option", "-t", "t", "history-limit", "10000")

			x.waitText("✻ sluice")
			x.keys("a long answer please", "Enter")
			// The reasoning is twice the screen's height; held open, its
			// header with the timer is in view.
			x.waitFor("the reasoning streamed", func(_, s string) bool {
				return strings.Contains(s, thoughts[len(thoughts)-1])
			})
			if s := x.screen(); !regexp.MustCompile(`(?m)^∴ Thinking \d+s…$`).MatchString(s) {
				t.Fatalf("long reasoning without its timer header:\n%s", s)
			}
			close(reasoned)

			for i, g := range gates {
				// Held at the gate: every line complete before it is in
				// the terminal, the first ones scrolled away.
				done := markersIn(src[:len(strings.Join(text[:at[i]], ""))-len(unfinishedTail(strings.Join(text[:at[i]], "")))], markers)
				x.waitText(done[len(done)-1])
				if i == 0 {
					if s := x.screen(); strings.Contains(s, "lines above") || strings.Contains(s, markers[0]) {
						t.Fatalf("the live area holds more than the unfinished tail:\n%s", s)
					}
					if !strings.Contains(x.history(), markers[0]) {
						t.Fatal("the answer's start is not in the scrollback")
					}
				}
				w, h := tc.resizes[i][0], tc.resizes[i][1]
				x.must("resize-window", "-t", "t", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h))
				rule := regexp.MustCompile(`(?m)^─{` + fmt.Sprint(w) + `}$`)
				x.waitFor("the frame at the new size", func(_, s string) bool { return rule.MatchString(s) })
				close(g)
			}
			x.waitText(markers[len(markers)-1])
			x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })

			// A tool call whose parameters still stream is being prepared:
			// no piece of its JSON shows.
			x.keys("read the notes", "Enter")
			x.waitFor("the call being prepared", func(_, s string) bool { return strings.Contains(s, "● Read preparing…") })
			if s := x.screen(); strings.Contains(s, `{"`) || strings.Contains(s, "file_path") {
				t.Fatalf("raw JSON of streaming parameters on screen:\n%s", s)
			}
			close(called)
			x.waitText("Read it.")
			x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })

			// A compaction says what it is while the summary streams.
			x.keys("/compact", "Enter")
			x.waitFor("the compaction's label", func(_, s string) bool {
				return regexp.MustCompile(`✻ Compacting conversation… \d+s · 34 chars`).MatchString(s)
			})
			close(summarized)
			x.waitText("Conversation compacted")
			x.waitFor("idle", func(_, s string) bool {
				return !strings.Contains(s, "Compacting") && !strings.Contains(s, "Working…")
			})

			hist := x.history()
			var bad []string
			for _, m := range markers {
				if n := strings.Count(hist, m); n != 1 {
					bad = append(bad, fmt.Sprintf("%s %d times", m, n))
				}
			}
			for _, m := range thoughts {
				if strings.Contains(hist, m) {
					bad = append(bad, "folded reasoning shown: "+m)
				}
			}
			for _, tc := range []struct {
				re   string
				want int
			}{
				{`(?m)^> a long answer please$`, 1},
				{`(?m)^∴ Thought for (\d+s|<1s)$`, 1},
				{`(?m)^● Section ` + markers[0] + `$`, 1},
				{`##`, 0},
				{"```", 0},
				{`Ask anything`, 1},
				{`Working…`, 0},
			} {
				if n := len(regexp.MustCompile(tc.re).FindAllStringIndex(hist, -1)); n != tc.want {
					bad = append(bad, fmt.Sprintf("%s %d times, want %d", tc.re, n, tc.want))
				}
			}
			if len(bad) > 0 {
				t.Fatalf("%s\nterminal history:\n%s", strings.Join(bad, "\n"), hist)
			}
		})
	}
}

// markersIn returns the markers that occur in s, in order.
func markersIn(s string, markers []string) []string {
	var out []string
	for _, m := range markers {
		if strings.Contains(s, m) {
			out = append(out, m)
		}
	}
	return out
}

// TestPseudoTerminalLongList runs the built sluice binary under tmux on an
// answer that is one tight list of 300 items, held mid-stream: the list's
// start is in the scrollback and off the screen while it streams, a
// resize there keeps it, and at the end the terminal holds every item
// once, numbered 1 to 300.
func TestPseudoTerminalLongList(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is required (SLUICE_REQUIRE_TMUX is set) but not installed")
		}
		t.Skip("tmux is not installed")
	}
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	t.Parallel()
	bin := testbin.Sluice(t)
	src, markers := longList(0, 300)
	text := fakemodel.Chunks(src, 40)
	gate, at := make(chan struct{}), len(text)/2
	fm := fakemodel.New(func(r fakemodel.Request) fakemodel.Answer {
		return fakemodel.Answer{Text: text, Gates: map[int]<-chan struct{}{at: gate}}
	})
	t.Cleanup(fm.Close)
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)
	dir := t.TempDir()
	x := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	x.must("new-session", "-d", "-x", "80", "-y", "24", "-s", "t", "-c", dir,
		"-e", "SLUICE_HOME="+filepath.Join(dir, "home"),
		"-e", "ANTHROPIC_BASE_URL="+fm.URL(), "-e", "ANTHROPIC_API_KEY=test-key",
		fmt.Sprintf("%s --model fake-model; sleep 600", bin))
	t.Cleanup(func() { _, _ = x.run("kill-server") })
	x.must("set-option", "-t", "t", "history-limit", "10000")

	x.waitText("✻ sluice")
	x.keys("a long list please", "Enter")
	// Held at the gate: every item but the last one begun is printed.
	sent := strings.Join(text[:at], "")
	done := markersIn(sent[:len(sent)-len(unfinishedItem(sent))], markers)
	x.waitText(done[len(done)-1])
	if s := x.screen(); strings.Contains(s, "lines above") || strings.Contains(s, markers[0]) {
		t.Fatalf("the live area holds more than the unfinished item:\n%s", s)
	}
	if !strings.Contains(x.history(), markers[0]) {
		t.Fatal("the list's start is not in the scrollback")
	}
	x.must("resize-window", "-t", "t", "-x", "60", "-y", "20")
	rule := regexp.MustCompile(`(?m)^─{60}$`)
	x.waitFor("the frame at the new size", func(_, s string) bool { return rule.MatchString(s) })
	release()
	x.waitText(markers[len(markers)-1])
	x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })

	hist := x.history()
	var bad []string
	for _, m := range markers {
		if n := strings.Count(hist, m); n != 1 {
			bad = append(bad, fmt.Sprintf("%s %d times", m, n))
		}
	}
	for _, n := range []int{1, 2, 150, 299, 300} {
		if c := len(regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d\. step `, n)).FindAllString(hist, -1)); c != 1 {
			bad = append(bad, fmt.Sprintf("item %d numbered so %d times", n, c))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s\nterminal history:\n%s", strings.Join(bad, "\n"), hist)
	}
}
