package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecondOpenFails: a state file is one process's; a second Open (a
// second relay on the same state directory) fails within the lock's wait,
// saying so, and the file opens again once the first closed it.
func TestSecondOpenFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relay.db")
	s := open(t, path)
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "another process holds it") {
		t.Fatalf("second open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path).Close()
}
