package streamjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// decodeFile decodes a recorded run and returns its events.
func decodeFile(t *testing.T, name string) (*Decoder, []protocol.Event) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder()
	var evs []protocol.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		e, err := d.Line(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs = append(evs, e...)
	}
	return d, evs
}

// reduce applies the events with the project's reducer.
func reduce(t *testing.T, evs []protocol.Event) []protocol.Message {
	t.Helper()
	l := protocol.NewList(protocol.Snapshot{})
	for _, ev := range evs {
		if err := l.Apply(ev); err != nil {
			t.Fatalf("apply %T: %v", ev, err)
		}
	}
	return l.Snapshot().Messages
}

func TestRecordedRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file        string
		stopReasons []string
		lastText    string
	}{
		{"plain_text.ndjson", []string{"end_turn"}, ""},
		{"thinking_then_text.ndjson", []string{"end_turn"}, ""},
		{"tool_use_bash.ndjson", []string{"tool_use", "end_turn"}, "The command printed: hello"},
		{"parallel_tools.ndjson", []string{"tool_use", "end_turn"}, "Both commands ran: one, two."},
		{"retry_529.ndjson", []string{"end_turn"}, "Recovered after 529."},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			d, evs := decodeFile(t, tt.file)
			var stops []string
			for _, ev := range evs {
				if te, ok := ev.(protocol.TurnEnded); ok {
					stops = append(stops, te.StopReason)
				}
			}
			if strings.Join(stops, ",") != strings.Join(tt.stopReasons, ",") {
				t.Errorf("stop reasons %v, want %v", stops, tt.stopReasons)
			}
			if _, ok := evs[len(evs)-1].(protocol.RunStateChanged); !ok {
				t.Errorf("last event %T, want runStateChanged", evs[len(evs)-1])
			}
			res, ok := d.Result()
			if !ok || res.IsError {
				t.Fatalf("result %+v, %v", res, ok)
			}
			msgs := reduce(t, evs)
			last := msgs[len(msgs)-1].Text()
			if last != res.Text {
				t.Errorf("last message text %q != result %q", last, res.Text)
			}
			if tt.lastText != "" && last != tt.lastText {
				t.Errorf("last text %q, want %q", last, tt.lastText)
			}
			if d.SessionID() == "" {
				t.Error("no session id")
			}
		})
	}
}

// TestWithoutPartialMessages: a run recorded without
// --include-partial-messages has only assistant lines; their text is used.
func TestWithoutPartialMessages(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/tool_use_bash.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, `{"type":"stream_event"`) {
			kept = append(kept, l)
		}
	}
	d := NewDecoder()
	var evs []protocol.Event
	for _, l := range kept {
		e, err := d.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e...)
	}
	msgs := reduce(t, evs)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text())
	}
	want := "I'll run the command.|The command printed: hello"
	if got := strings.Join(texts, "|"); got != want {
		t.Errorf("texts %q, want %q", got, want)
	}
}

func TestRetryDiscardsUnfinishedMessage(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half an ans"}}}`,
		`{"type":"system","subtype":"api_retry","attempt":1}`,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m2"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"whole answer"}}}`,
		`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"}}}`,
		`{"type":"stream_event","event":{"type":"message_stop"}}`,
		`{"type":"stream_event","parent_tool_use_id":"toolu_1","event":{"type":"message_start","message":{"id":"sub"}}}`,
		`{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["too many turns"]}`,
	}
	d := NewDecoder()
	var evs []protocol.Event
	for _, l := range lines {
		e, err := d.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e...)
	}
	var discarded, errText string
	for _, ev := range evs {
		switch ev := ev.(type) {
		case protocol.AssistantMessageDiscarded:
			discarded = ev.MessageID
		case protocol.ErrorBlockAdded:
			errText = ev.Error
		case protocol.AssistantMessageAdded:
			if ev.Message.ID == "sub" {
				t.Error("a sub-agent's message was not skipped")
			}
		}
	}
	if discarded != "m1" || errText != "too many turns" {
		t.Errorf("discarded %q, error %q", discarded, errText)
	}
	if r, _ := d.Result(); r.Text != "" || !r.IsError {
		t.Errorf("result %+v", r)
	}
}

func TestSyntaxError(t *testing.T) {
	t.Parallel()
	if _, err := NewDecoder().Line([]byte("not json")); !errors.Is(err, ErrSyntax) {
		t.Errorf("err = %v, want ErrSyntax", err)
	}
	if evs, err := NewDecoder().Line([]byte("  \r\n")); err != nil || evs != nil {
		t.Errorf("blank line: %v %v", evs, err)
	}
}

// TestNotifications: sluice's own event lines pass through.
func TestNotifications(t *testing.T) {
	t.Parallel()
	line, err := protocol.Encode(protocol.TurnEnded{MessageID: "a", StopReason: "tool_use"})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := NewDecoder().Line(line)
	if err != nil || len(evs) != 1 {
		t.Fatalf("%v %v", evs, err)
	}
	if te, ok := evs[0].(protocol.TurnEnded); !ok || te.StopReason != "tool_use" {
		t.Errorf("got %#v", evs[0])
	}
}

func FuzzDecoder(f *testing.F) {
	for _, name := range []string{"tool_use_bash.ndjson", "retry_529.ndjson"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}}`))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m"}}}
{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use"}}}
{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text"}}}
{"type":"stream_event","event":{"type":"message_start","message":{"id":"m"}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}}
{"type":"result","subtype":"error","is_error":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder()
		var last int64
		// Every event from Claude Code's lines fits the reducer (sluice's
		// own notifications are passed through as they are); an error of
		// the run as a whole names no message.
		list := protocol.NewList(protocol.Snapshot{})
		for _, l := range bytes.Split(data, []byte("\n")) {
			evs, err := d.Line(l)
			if err != nil {
				continue
			}
			var probe struct {
				Method string `json:"method"`
			}
			json.Unmarshal(l, &probe)
			for _, ev := range evs {
				if ev.Head().Seq != last+1 {
					t.Fatalf("seq %d after %d", ev.Head().Seq, last)
				}
				last = ev.Head().Seq
				// Numbered as the router numbers them: an event that did
				// not fit leaves no gap.
				err := list.Apply(protocol.WithHeader(ev, protocol.Header{Seq: list.Seq() + 1}))
				if e, ok := ev.(protocol.ErrorBlockAdded); ok && e.MessageID == "" {
					continue
				}
				if err != nil && probe.Method == "" {
					t.Fatalf("%T does not fit the reducer: %v", ev, err)
				}
			}
		}
	})
}

// TestBlockIndicesFitTheReducer: blocks that make no event (a server
// tool's result) leave no gap in the block indices, an assistant line's
// tool blocks neither, and a failed result's error goes after the last
// message's blocks instead of over its text.
func TestBlockIndicesFitTheReducer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		want  []string // per message: its blocks' types and contents
	}{
		{
			name: "stream with a block the decoder skips",
			lines: []string{
				`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}}}`,
				`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`,
				`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Searching. "}}}`,
				`{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`,
				`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result"}}}`,
				`{"type":"stream_event","event":{"type":"content_block_stop","index":1}}`,
				`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Found it."}}}`,
				`{"type":"stream_event","event":{"type":"content_block_stop","index":2}}`,
				`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"}}}`,
				`{"type":"stream_event","event":{"type":"message_stop"}}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["it broke"]}`,
			},
			want: []string{"text:Searching. |text:Found it.|error:it broke"},
		},
		{
			name: "assistant lines, one block each",
			lines: []string{
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Running."}]}}`,
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash"}]}}`,
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Ran."}],"stop_reason":"end_turn"}}`,
			},
			want: []string{"text:Running.|text:Ran."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := NewDecoder()
			var evs []protocol.Event
			for _, l := range tt.lines {
				e, err := d.Line([]byte(l))
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, e...)
			}
			var got []string
			for _, m := range reduce(t, evs) {
				var bs []string
				for _, b := range m.Blocks {
					bs = append(bs, string(b.Type)+":"+b.Content)
				}
				got = append(got, strings.Join(bs, "|"))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
