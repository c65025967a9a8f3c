package acp

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
)

// Pages follow each other in newest-first order, each session once, ties
// in time ordered by id; the last page has no cursor.
func TestPage(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	mk := func(id string, sec int) agent.SessionInfo {
		return agent.SessionInfo{ID: id, Modified: t0.Add(time.Duration(sec) * time.Second)}
	}
	all := []agent.SessionInfo{mk("a", 1), mk("b", 5), mk("c", 3), mk("d", 3), mk("e", 9)}
	want := []string{"e", "b", "c", "d", "a"}
	for _, size := range []int{1, 2, 3, 5, 7} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			t.Parallel()
			var got []string
			var after *listCursor
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatal("the pages do not end")
				}
				// The client passes the cursor as a token.
				if after != nil {
					c, ok := parseCursor(after.encode())
					if !ok {
						t.Fatalf("cursor %q does not parse", after.encode())
					}
					after = &c
				}
				out, next := page(slices.Clone(all), after, size)
				if len(out) > size || (next != nil && len(out) != size) {
					t.Fatalf("page of %d with size %d (next %v)", len(out), size, next)
				}
				for _, in := range out {
					got = append(got, in.ID)
				}
				if next == nil {
					break
				}
				after = next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pages gave %v, want %v", got, want)
			}
		})
	}
	// A cursor whose session is gone still names a position.
	out, _ := page(slices.Clone(all), &listCursor{modified: t0.Add(4 * time.Second), id: "zz"}, 10)
	if ids := idsOf(out); !slices.Equal(ids, []string{"c", "d", "a"}) {
		t.Fatalf("after a removed session: %v", ids)
	}
}

func idsOf(infos []agent.SessionInfo) []string {
	var out []string
	for _, in := range infos {
		out = append(out, in.ID)
	}
	return out
}

func TestParseCursor(t *testing.T) {
	t.Parallel()
	good := listCursor{modified: time.Unix(0, 1_700_000_000_123_456_789), id: "sess-1/x"}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{good.encode(), true},
		{"", false},
		{"not base64!", false},
		{"MTIz", false},              // "123": no id
		{"MTIzLw", false},            // "123/": empty id
		{"eC95", false},              // "x/y": no time
		{good.encode() + "=", false}, // padding is not ours
	} {
		c, ok := parseCursor(tc.in)
		if ok != tc.ok {
			t.Errorf("parseCursor(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
		if ok && (c.id != good.id || !c.modified.Equal(good.modified)) {
			t.Errorf("parseCursor(%q) = %+v, want %+v", tc.in, c, good)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(listCursor{modified: time.Unix(5, 6), id: "abc"}.encode())
	f.Add("")
	f.Add("LTEvLw")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := parseCursor(s)
		if !ok {
			return
		}
		again, ok := parseCursor(c.encode())
		if !ok || again.id != c.id || !again.modified.Equal(c.modified) {
			t.Fatalf("%q: %+v does not round-trip (%+v, %v)", s, c, again, ok)
		}
	})
}

// session/list pages through the stored sessions with nextCursor; a cursor
// it did not make is invalid params.
func TestListSessionsPages(t *testing.T) {
	t.Parallel()
	var answers [][]modeltest.Step
	for i := range 3 {
		answers = append(answers, modeltest.Answer(fmt.Sprint("m", i), "ok"))
	}
	h := newHarness(t, modeltest.NewScript(answers...), harnessOpts{pageSize: 2})
	h.initialize(sdk.ClientCapabilities{})
	made := map[sdk.SessionId]bool{}
	for range 3 {
		s := h.newSession()
		if _, err := h.prompt(s.SessionId, "hello"); err != nil {
			t.Fatal(err)
		}
		made[s.SessionId] = true
	}
	seen := map[sdk.SessionId]bool{}
	var cursor *string
	for pages := 1; ; pages++ {
		list, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cwd: sdk.Ptr(h.work()), Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, si := range list.Sessions {
			if !made[si.SessionId] || seen[si.SessionId] {
				t.Fatalf("page %d lists %s (made %v, seen %v)", pages, si.SessionId, made, seen)
			}
			seen[si.SessionId] = true
		}
		if list.NextCursor == nil {
			if pages != 2 || len(seen) != 3 {
				t.Fatalf("%d pages, %d sessions; want 2 pages of 3 sessions", pages, len(seen))
			}
			break
		}
		if len(list.Sessions) != 2 || pages > 2 {
			t.Fatalf("page %d: %d sessions and a next cursor", pages, len(list.Sessions))
		}
		cursor = list.NextCursor
	}
	_, err := h.conn.ListSessions(h.ctx(), sdk.ListSessionsRequest{Cursor: sdk.Ptr("bogus")})
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Fatalf("a bogus cursor: %v, want invalid params", err)
	}
}
