package pgstore

import (
	"time"

	"github.com/sluicehq/sluice/store"
)

// Later returns a view of s whose lease clock runs d ahead of the
// database's: to it, a lease with a TTL under d taken through s has
// expired, without the test waiting for it.
func Later(s *Store, d time.Duration) *Store {
	return &Store{pool: s.pool, renew: s.renew, clockOffset: s.clockOffset + d}
}

// LoseNextAck makes l's next append that commits fail as if the
// connection broke before the server's answer came.
func LoseNextAck(l store.Log) {
	lg := l.(*log)
	lg.mu.Lock()
	lg.lostAck = true
	lg.mu.Unlock()
}
