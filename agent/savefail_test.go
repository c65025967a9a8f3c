package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// fullStore is a JSONL store whose logs fail every append, as on a full
// disk, once full is set.
type fullStore struct {
	*store.JSONL
	full atomic.Bool
}

func (s *fullStore) Create(ctx context.Context, key store.Key) (store.Log, error) {
	l, err := s.JSONL.Create(ctx, key)
	return &fullLog{Log: l, full: &s.full}, err
}

type fullLog struct {
	store.Log
	full *atomic.Bool
}

func (l *fullLog) Append(ctx context.Context, recs ...json.RawMessage) error {
	if l.full.Load() {
		return fmt.Errorf("store: write: %w", syscall.ENOSPC)
	}
	return l.Log.Append(ctx, recs...)
}

// TestSaveFailureFailsTheRun: a run whose session could not be saved
// fails with ErrNotSaved and the cause, and says so in the display.
func TestSaveFailureFailsTheRun(t *testing.T) {
	t.Parallel()
	st := &fullStore{JSONL: store.NewJSONL(t.TempDir())}
	p := modeltest.NewScript(modeltest.Answer("m1", "An answer ", "that is not saved."), modeltest.Answer("m2", "Saved."))
	s := newSession(t, p, func(o *agent.Options) { o.Store = st })
	st.full.Store(true)
	res, err := s.Run(bg(t), "question")
	if !errors.Is(err, agent.ErrNotSaved) || !errors.Is(err, syscall.ENOSPC) || res.Text != "An answer that is not saved." {
		t.Fatalf("Run = %q, %v; want the answer and ErrNotSaved wrapping ENOSPC", res.Text, err)
	}
	msgs := s.Messages().Messages
	last := msgs[len(msgs)-1].Blocks
	if b := last[len(last)-1]; b.Type != protocol.BlockError || !strings.Contains(b.Content, "could not be saved") {
		t.Fatalf("the display does not say the session was not saved: %+v", last)
	}
	// Once the disk has room again, the next run succeeds.
	st.full.Store(false)
	if _, err := s.Run(bg(t), "again"); err != nil {
		t.Fatalf("the run after the disk freed up: %v", err)
	}
}
