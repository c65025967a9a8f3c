package relay

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/relay/route"
	"github.com/sluicehq/sluice/model/modeltest"
)

// TestJoiner: a short remark goes out with the run's next message when
// that one comes within the pacing window (seed 004: a 39-character intro
// went alone), alone when the window ends first or both would not fit,
// and a long remark or any other message goes at once.
func TestJoiner(t *testing.T) {
	t.Parallel()
	const window = 2500 * time.Millisecond
	intro := route.Message{Kind: route.Interstitial, Text: "Let me look at the code structure first."}
	short := func(s string) route.Message { return route.Message{Kind: route.Interstitial, Text: s} }
	final := func(s string) route.Message { return route.Message{Kind: route.Final, Text: s} }
	long := short(strings.Repeat("a long remark ", 20))
	type step struct {
		say     *route.Message
		advance time.Duration
		sent    int // messages sent once the step is done
	}
	say := func(m route.Message, sent int) step { return step{say: &m, sent: sent} }
	wait := func(d time.Duration, sent int) step { return step{advance: d, sent: sent} }
	tests := []struct {
		name   string
		window time.Duration
		limit  int
		steps  []step
		want   []string
		held   string // what take returns at the end
	}{
		{"joins the next remark in the window", window, 4000,
			[]step{say(intro, 0), wait(window/2, 0), say(long, 1)},
			[]string{intro.Text + "\n\n" + long.Text}, ""},
		{"two short remarks wait together", window, 4000,
			[]step{say(intro, 0), wait(window-time.Millisecond, 0), say(short("Found it."), 0), wait(window, 1)},
			[]string{intro.Text + "\n\nFound it."}, ""},
		{"alone when the window ends", window, 4000,
			[]step{say(intro, 0), wait(window, 1), say(short("Found it."), 1)},
			[]string{intro.Text}, "Found it."},
		{"alone when both would not fit", window, 60,
			[]step{say(intro, 0), say(final("The answer is longer than twenty units."), 2)},
			[]string{intro.Text, "The answer is longer than twenty units."}, ""},
		{"joins a permission prompt", window, 4000,
			[]step{say(intro, 0), say(route.Message{Kind: KindPermission, Text: "🔐 Bash wants to run"}, 1)},
			[]string{intro.Text + "\n\n🔐 Bash wants to run"}, ""},
		{"a long remark goes at once", window, 4000,
			[]step{say(long, 1)},
			[]string{long.Text}, ""},
		{"without pacing nothing waits", 0, 4000,
			[]step{say(intro, 1), say(final("Done."), 2)},
			[]string{intro.Text, "Done."}, ""},
		{"held at the end: the caller's", window, 4000,
			[]step{say(intro, 0)},
			nil, intro.Text},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := modeltest.NewClock(time.Date(2026, 6, 20, 10, 0, 0, 0, time.UTC))
			var mu sync.Mutex
			cond := sync.NewCond(&mu)
			var got []string
			j := newJoiner(func(_ route.Kind, text string) {
				mu.Lock()
				got = append(got, text)
				cond.Broadcast()
				mu.Unlock()
			}, clock, tt.window, tt.limit)
			guard := time.AfterFunc(time.Minute, func() {
				mu.Lock()
				got = append(got, "(timed out)")
				cond.Broadcast()
				mu.Unlock()
			})
			defer guard.Stop()
			for i, s := range tt.steps {
				if s.say != nil {
					j.say(*s.say)
				} else {
					clock.Advance(s.advance)
				}
				mu.Lock()
				for len(got) < s.sent {
					cond.Wait()
				}
				if len(got) != s.sent {
					t.Errorf("after step %d: sent %q, want %d messages", i, got, s.sent)
				}
				mu.Unlock()
			}
			held := j.take()
			j.stop()
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) || held != tt.held {
				t.Errorf("sent %q and held %q, want %q and %q", got, held, tt.want, tt.held)
			}
		})
	}
}
