package relay

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/relay/route"
	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/model"
)

// shortRemark is the length (UTF-16 units) under which an interstitial
// waits for the run's next message to go out with it.
const shortRemark = 200

// joiner sends one run's messages, holding a short interstitial ("Let me
// look at the tests first.") for up to the channel's pacing window: when
// the run's next message comes within it, the remark goes out in the same
// message, separated by a blank line, if both fit the limit; otherwise it
// goes alone when the window ends. The chat gets fewer messages, and the
// pacing would have held the next one about that long anyway. When the run
// ends, the remark still held leads the final answer (take).
//
// The remark waits in memory only: a crash within the window loses it, as
// it would lose the text of a turn still streaming.
//
// say, take and stop are safe for concurrent use with the window's timer;
// messages are sent under the lock, so their order is kept.
type joiner struct {
	send   func(kind route.Kind, text string)
	clock  model.Clock
	window time.Duration
	limit  int
	done   chan struct{}
	wg     sync.WaitGroup

	mu   sync.Mutex
	held *route.Message
	gen  int // counts holds, so that an old timer leaves a newer remark alone
}

func newJoiner(send func(kind route.Kind, text string), clock model.Clock, window time.Duration, limit int) *joiner {
	return &joiner{send: send, clock: clock, window: window, limit: limit, done: make(chan struct{})}
}

// say sends m, joined to the remark held before it, or holds m.
func (j *joiner) say(m route.Message) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.held != nil {
		if joined := j.held.Text + "\n\n" + m.Text; split.Units(joined) <= j.limit {
			m.Text = joined
		} else {
			j.send(j.held.Kind, j.held.Text)
		}
		j.held = nil
	}
	if m.Kind != route.Interstitial || j.window <= 0 || split.Units(m.Text) >= shortRemark {
		j.send(m.Kind, m.Text)
		return
	}
	j.held = &m
	j.gen++
	gen := j.gen
	t := j.clock.NewTimer(j.window)
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer t.Stop()
		select {
		case <-t.C():
		case <-j.done:
			return
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.held != nil && j.gen == gen {
			j.send(j.held.Kind, j.held.Text)
			j.held = nil
		}
	}()
}

// take returns the remark held, if any, which is then the caller's to
// send.
func (j *joiner) take() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.held == nil {
		return ""
	}
	text := j.held.Text
	j.held = nil
	return text
}

// stop ends the window's timers; call take first.
func (j *joiner) stop() {
	close(j.done)
	j.wg.Wait()
}
