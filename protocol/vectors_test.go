package protocol_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// vector is one file of testdata/vectors (see normative/README.md).
type vector struct {
	Name        string                  `json:"name"`
	Description string                  `json:"description"`
	Start       *protocol.Snapshot      `json:"start"`
	Events      []protocol.Notification `json:"events"`
	Expected    json.RawMessage         `json:"expected"`
}

func loadVectors(t testing.TB) map[string]vector {
	t.Helper()
	files, err := filepath.Glob("testdata/vectors/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/vectors/*.json")
	files = append(files, more...)
	if len(files) < 9 {
		t.Fatalf("found only %d vector files", len(files))
	}
	out := map[string]vector{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = v
	}
	return out
}

func decodeEvents(t *testing.T, ns []protocol.Notification) []protocol.Event {
	t.Helper()
	evs := make([]protocol.Event, len(ns))
	for i, n := range ns {
		ev, err := protocol.Decode(n.Method, n.Params)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		evs[i] = ev
	}
	return evs
}

// jsonEqual compares two JSON documents as values.
func jsonEqual(t *testing.T, got any, want json.RawMessage) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var gv, wv any
	if err := json.Unmarshal(g, &gv); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wv); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gv, wv) {
		t.Errorf("got  %s\nwant %s", g, want)
	}
}

func TestVectors(t *testing.T) {
	t.Parallel()
	for file, v := range loadVectors(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			l := &protocol.List{}
			if v.Start != nil {
				l.Reset(*v.Start)
			}
			for _, ev := range decodeEvents(t, v.Events) {
				if err := l.Apply(ev); err != nil && !errors.Is(err, protocol.ErrStale) {
					t.Fatalf("apply seq %d: %v", ev.Head().Seq, err)
				}
			}
			jsonEqual(t, l.Snapshot(), v.Expected)
		})
	}
}

// TestVectorsMerged replays every vector through a buffering stage that
// merges whatever it can: the result must not change.
func TestVectorsMerged(t *testing.T) {
	t.Parallel()
	for file, v := range loadVectors(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			var queue []protocol.Event
			for _, ev := range decodeEvents(t, v.Events) {
				if n := len(queue); n > 0 {
					if m, ok := protocol.Merge(queue[n-1], ev); ok {
						queue[n-1] = m
						continue
					}
				}
				queue = append(queue, ev)
			}
			l := &protocol.List{}
			if v.Start != nil {
				l.Reset(*v.Start)
			}
			for _, ev := range queue {
				err := l.Apply(ev)
				if errors.Is(err, protocol.ErrGap) && v.Start != nil {
					// A merged event straddling the snapshot: resync.
					l.Reset(*v.Start)
					continue
				}
				if err != nil && !errors.Is(err, protocol.ErrStale) {
					t.Fatalf("apply seq %d: %v", ev.Head().Seq, err)
				}
			}
			if v.Start == nil {
				jsonEqual(t, l.Snapshot(), v.Expected)
			}
		})
	}
}

// TestWireRoundTrip checks that every event of the vectors encodes back to
// the same JSON: the Go types carry exactly the wire fields.
func TestWireRoundTrip(t *testing.T) {
	t.Parallel()
	for file, v := range loadVectors(t) {
		for i, n := range v.Events {
			ev, err := protocol.Decode(n.Method, n.Params)
			if err != nil {
				t.Fatalf("%s event %d: %v", file, i, err)
			}
			line, err := protocol.Encode(ev)
			if err != nil {
				t.Fatal(err)
			}
			// Encode frames the envelope by hand: it must write what
			// encoding/json would.
			params, _ := json.Marshal(ev)
			if want, _ := json.Marshal(protocol.Notification{JSONRPC: "2.0", Method: ev.Method(), Params: params}); string(line) != string(want) {
				t.Errorf("%s event %d: encoded\n%s\nwant\n%s", file, i, line, want)
			}
			var back protocol.Notification
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatal(err)
			}
			if back.Method != n.Method || back.JSONRPC != "2.0" {
				t.Errorf("%s event %d: method %q jsonrpc %q", file, i, back.Method, back.JSONRPC)
			}
			jsonEqual(t, back.Params, n.Params)
		}
	}
}

// BenchmarkDeltaWire is a text delta's way through the wire format: encoded
// for every client and a cluster's log, decoded by a following node.
func BenchmarkDeltaWire(b *testing.B) {
	ev := protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "0b4c7a52-3a1e-4d2e-9a55-6f0e8f0c2d11", Seq: 1234},
		MessageID: "msg_01XFDUDYJgAACzvnptvVoYEL", Chunk: "1796150060242885203 ", Stage: protocol.StageStreaming}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protocol.Encode(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	line, _ := protocol.Encode(ev)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protocol.DecodeNotification(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
