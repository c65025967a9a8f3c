package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/store"
)

// Fork copies the stored session id to a new session — the same messages,
// context and rewind points under a new id (Options.SessionID, or a new
// one) — and opens the copy: what follows is stored under the new id and the
// original stays as it was (Claude Code's --fork-session).
func Fork(opts Options, id string) (*Session, error) {
	if opts.Store == nil {
		return nil, errors.New("agent: Fork needs Options.Store")
	}
	opts.setDefaults()
	wd := opts.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	ctx := context.Background()
	recs, _, err := opts.Store.Load(ctx, store.Key{WorkDir: wd, ID: id})
	if err != nil {
		return nil, err
	}
	newID := opts.SessionID
	if newID == "" {
		newID = opts.NewID()
	}
	// The copy names itself: its meta record takes the new id.
	copied := make([]json.RawMessage, len(recs))
	for i, raw := range recs {
		copied[i] = raw
		var r record
		if json.Unmarshal(raw, &r) != nil || r.Type != recMeta || r.Meta == nil {
			continue
		}
		r.Meta.ID = newID
		if copied[i], err = json.Marshal(r); err != nil {
			return nil, fmt.Errorf("agent: fork session %s: %w", id, err)
		}
	}
	l, err := opts.Store.Create(ctx, store.Key{WorkDir: wd, ID: newID})
	if err != nil {
		return nil, err
	}
	err = l.Append(ctx, copied...)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("agent: fork session %s: %w", id, err)
	}
	opts.WorkDir = wd
	return Open(opts, newID)
}
