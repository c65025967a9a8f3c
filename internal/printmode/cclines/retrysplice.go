package cclines

import (
	"maps"
	"strings"

	"github.com/sluicehq/sluice/model"
)

// A stream retried after it broke mid-answer would show the host the
// failed attempt's deltas and then the retried attempt's from the start:
// the answer's beginning twice (Claude Code's stream_event lines do so).
// Deltas cannot be taken back, so print mode splices the retried attempt
// onto what was shown: its message and block starts are not written
// again, and its text deltas only from where the failed attempt's left
// off. When the retried text departs from what was shown, the rest is
// written as it comes (nothing better can be done once it is out).

// splice is what an attempt showed, for an attempt that retries it.
type splice struct {
	// shown is each text block's streamed text, by block index.
	shown map[int]string
	// pending is, while retrying, what of shown the retried attempt has
	// still to repeat.
	pending map[int]string
	// off is set when the attempt streamed a block other than text
	// (thinking, a tool call), which is not spliced, or more text than
	// is worth holding twice.
	off bool
	// retrying is set from the retry until the attempt departs from what
	// was shown.
	retrying bool
}

// maxSpliced bounds the text held for splicing: a retry is rare, and a
// long answer is held once, by the session.
const maxSpliced = 64 << 10

// started notes a block start; it reports whether the start is to be
// written.
func (s *splice) started(index int, kind model.BlockType) bool {
	if s.retrying {
		if _, ok := s.pending[index]; ok && kind == model.BlockText {
			return false
		}
		s.retrying = false
	}
	if kind != model.BlockText {
		s.off = true
		return true
	}
	if s.shown == nil {
		s.shown = map[int]string{}
	}
	s.shown[index] = ""
	return true
}

// text takes a text delta of block index and returns what of it to write.
func (s *splice) text(index int, chunk string) string {
	if s.retrying {
		rest, ok := s.pending[index]
		switch {
		case !ok:
			s.retrying = false
		case strings.HasPrefix(rest, chunk):
			s.pending[index] = rest[len(chunk):]
			return ""
		case strings.HasPrefix(chunk, rest):
			s.pending[index] = ""
			chunk = chunk[len(rest):]
		default:
			s.retrying = false // departed: written as it comes
		}
	}
	if !s.off {
		if len(s.shown[index])+len(chunk) > maxSpliced {
			s.off, s.shown = true, nil
		} else {
			s.shown[index] += chunk
		}
	}
	return chunk
}

// retry starts splicing the next attempt onto what was shown, when it
// was text only.
func (s *splice) retry() {
	s.retrying = !s.off && len(s.shown) > 0
	if s.retrying {
		s.pending = maps.Clone(s.shown)
	}
}

// messageStart reports whether a message start is to be written: not
// when it starts an attempt spliced onto the last.
func (s *splice) messageStart() bool {
	if s.retrying {
		return false
	}
	s.shown, s.pending, s.off = nil, nil, false
	return true
}
