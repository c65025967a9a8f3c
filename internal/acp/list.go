package acp

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
)

// DefaultListPageSize is how many sessions one session/list page holds.
const DefaultListPageSize = 50

// listOrder sorts sessions newest first, ties by id, so that a position in
// the list is a total order a cursor can name.
func listOrder(a, b agent.SessionInfo) int {
	if c := b.Modified.Compare(a.Modified); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// listCursor names a position in the list: the last session of a page.
// The next page starts after it in listOrder, so a page never repeats a
// session of the pages before it unless the session was modified since
// (it moved to the top, where a refreshed list shows it).
type listCursor struct {
	modified time.Time
	id       string
}

// encode is the opaque token the client passes back.
func (c listCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.modified.UnixNano(), 10) + "/" + c.id))
}

// parseCursor reads a token made by encode.
func parseCursor(s string) (listCursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return listCursor{}, false
	}
	ns, id, ok := strings.Cut(string(raw), "/")
	if !ok || id == "" {
		return listCursor{}, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return listCursor{}, false
	}
	return listCursor{modified: time.Unix(0, n), id: id}, true
}

// page sorts infos and returns the page that follows after (the first page
// when after is nil) of at most size sessions, with the cursor of the next
// page when there is one.
func page(infos []agent.SessionInfo, after *listCursor, size int) ([]agent.SessionInfo, *listCursor) {
	slices.SortFunc(infos, listOrder)
	start := 0
	if after != nil {
		at := agent.SessionInfo{ID: after.id, Modified: after.modified}
		start, _ = slices.BinarySearchFunc(infos, at, listOrder)
		if start < len(infos) && listOrder(infos[start], at) == 0 {
			start++
		}
	}
	end := min(start+size, len(infos))
	out := infos[start:end]
	if end == len(infos) {
		return out, nil
	}
	last := out[len(out)-1]
	return out, &listCursor{modified: last.Modified, id: last.ID}
}
