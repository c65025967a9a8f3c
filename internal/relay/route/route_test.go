package route

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/protocol"
)

// text streams s as the deltas of block i of message id, in pieces of n
// bytes cut at code point boundaries.
func text(id string, i int, s string, n int) []protocol.Event {
	var evs []protocol.Event
	for s != "" {
		k := min(n, len(s))
		for k < len(s) && !isRuneStart(s[k]) {
			k++
		}
		evs = append(evs, protocol.AssistantContentUpdated{MessageID: id, BlockIndex: i, Chunk: s[:k], Stage: protocol.StageStreaming})
		s = s[k:]
	}
	return append(evs, protocol.AssistantContentUpdated{MessageID: id, BlockIndex: i, Stage: protocol.StageEnd})
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func added(id string) protocol.Event {
	return protocol.AssistantMessageAdded{Message: protocol.Message{ID: id, Role: protocol.RoleAssistant}}
}

func ended(id, reason string) protocol.Event {
	return protocol.TurnEnded{MessageID: id, StopReason: reason}
}

func tool(id string, i int) protocol.Event {
	return protocol.ToolBlockUpdated{MessageID: id, BlockIndex: i, ToolID: "t", Name: "Bash", Stage: protocol.StageStart}
}

// child returns the events as a subagent run by tool call toolID publishes
// them.
func child(toolID string, evs ...any) []protocol.Event {
	var out []protocol.Event
	for _, ev := range seq(evs...) {
		out = append(out, protocol.WithHeader(ev, protocol.Header{ParentToolID: toolID}))
	}
	return out
}

func seq(parts ...any) []protocol.Event {
	var evs []protocol.Event
	for _, p := range parts {
		switch p := p.(type) {
		case protocol.Event:
			evs = append(evs, p)
		case []protocol.Event:
			evs = append(evs, p...)
		}
	}
	return evs
}

// answer builds a text of exactly n UTF-16 units in paragraphs of about
// 300 units.
func answer(n int) string {
	var b strings.Builder
	para := strings.Repeat("最终答案的一段内容，", 30)
	for split.Units(b.String())+2+split.Units(para) < n {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(para)
	}
	for split.Units(b.String()) < n {
		b.WriteString("尾")
	}
	return b.String()
}

type sent struct {
	at   string // "apply" or "finish"
	kind Kind
	text string
}

func run(r *Router, evs []protocol.Event, result string) []sent {
	var out []sent
	for _, ev := range evs {
		for _, m := range r.Apply(ev) {
			out = append(out, sent{"apply", m.Kind, m.Text})
		}
	}
	for _, m := range r.Finish(result) {
		out = append(out, sent{"finish", m.Kind, m.Text})
	}
	return out
}

func TestRouter(t *testing.T) {
	t.Parallel()
	long := answer(9121)
	qa := answer(1485)
	tests := []struct {
		name   string
		evs    []protocol.Event
		result string
		want   []sent // text "" means: any text
		check  func(t *testing.T, got []sent)
	}{
		{
			name: "trace A: pure Q&A is one message",
			evs:  seq(added("m1"), text("m1", 0, qa, 7), ended("m1", "end_turn")),
			want: []sent{{"finish", Final, qa}},
		},
		{
			name: "trace D: one interstitial at once, the 9,121-unit answer in three",
			evs: seq(
				added("m1"), text("m1", 0, "我先看一下 src/main.ts 的结构。", 5), tool("m1", 1), ended("m1", "tool_use"),
				added("m2"), text("m2", 0, long, 11), ended("m2", "end_turn"),
			),
			want: []sent{
				{"apply", Interstitial, "我先看一下 src/main.ts 的结构。"},
				{"finish", Final, ""}, {"finish", Final, ""}, {"finish", Final, ""},
			},
			check: func(t *testing.T, got []sent) {
				var parts []string
				for _, s := range got[1:] {
					parts = append(parts, s.text)
				}
				if strings.Join(parts, "\n\n") != long {
					t.Error("the final messages do not rebuild the answer")
				}
			},
		},
		{
			name: "a subagent's turns stay out of the chat",
			evs: seq(
				added("m1"), text("m1", 0, "Delegating.", 4), tool("m1", 1), ended("m1", "tool_use"),
				child("t", added("c1")), child("t", text("c1", 0, "child thinking aloud", 5)), child("t", ended("c1", "tool_use")),
				child("t", added("c2")), child("t", text("c2", 0, "child report", 5)), child("t", ended("c2", "max_tokens")),
				added("m2"), text("m2", 0, "Done.", 3), ended("m2", "end_turn"),
			),
			want: []sent{{"apply", Interstitial, "Delegating."}, {"finish", Final, "Done."}},
		},
		{
			name: "several tool turns: one message each, a turn without text none",
			evs: seq(
				added("m1"), text("m1", 0, "Reading.", 3), tool("m1", 1), ended("m1", "tool_use"),
				added("m2"), tool("m2", 0), ended("m2", "tool_use"),
				added("m3"), text("m3", 0, "Now grep.", 3), tool("m3", 1), tool("m3", 2), ended("m3", "tool_use"),
				added("m4"), text("m4", 0, "Done.", 3), ended("m4", "end_turn"),
			),
			want: []sent{
				{"apply", Interstitial, "Reading."},
				{"apply", Interstitial, "Now grep."},
				{"finish", Final, "Done."},
			},
		},
		{
			name: "text blocks of one turn are joined as the reducer joins them",
			evs: seq(
				added("m1"), text("m1", 0, "Before the tool, ", 4), tool("m1", 1), text("m1", 2, "after.", 4), ended("m1", "tool_use"),
			),
			want: []sent{{"apply", Interstitial, "Before the tool, after."}},
		},
		{
			name: "every terminal stop reason joins the final answer with a blank line",
			evs: seq(
				added("m1"), text("m1", 0, "part one", 4), ended("m1", "pause_turn"),
				added("m3"), text("m3", 0, "part three", 4), ended("m3", "some_future_reason"),
				added("m4"), text("m4", 0, "no", 4), ended("m4", "refusal"),
				added("m5"), text("m5", 0, "end", 4), ended("m5", "stop_sequence"),
				added("m6"), text("m6", 0, "cut", 4), ended("m6", "max_tokens"),
			),
			want: []sent{{"finish", Final, "part one\n\npart three\n\nno\n\nend\n\ncut"}},
		},
		{
			name: "a turn that continues one cut by max_tokens goes on without a blank line",
			evs: seq(
				added("m1"), text("m1", 0, "Intro.", 4), ended("m1", "end_turn"),
				added("m2"), text("m2", 0, "The list is lo", 4), ended("m2", "max_tokens"),
				added("m3"), text("m3", 0, "ng, and ends here.", 4), ended("m3", "end_turn"),
			),
			want: []sent{{"finish", Final, "Intro.\n\nThe list is long, and ends here."}},
		},
		{
			name: "abort: the interstitial went, the partial answer and the reason follow",
			evs: seq(
				added("m1"), text("m1", 0, "Looking.", 3), ended("m1", "tool_use"),
				added("m2"), text("m2", 0, "The answer so f", 3),
				protocol.ErrorBlockAdded{MessageID: "m2", BlockIndex: 1, Error: "aborted by the user"},
			),
			want: []sent{
				{"apply", Interstitial, "Looking."},
				{"finish", Partial, "The answer so f"},
				{"finish", Error, "⚠️ aborted by the user"},
			},
		},
		{
			name: "a discarded attempt is never sent",
			evs: seq(
				added("m1"), text("m1", 0, "first attempt", 3),
				protocol.AssistantMessageDiscarded{MessageID: "m1", Reason: "retry"},
				added("m2"), text("m2", 0, "second attempt", 3), ended("m2", "end_turn"),
			),
			want: []sent{{"finish", Final, "second attempt"}},
		},
		{
			name:   "safety net: nothing streamed, the result text goes",
			evs:    seq(added("m1"), ended("m1", "end_turn")),
			result: "\nthe result\n",
			want:   []sent{{"finish", Result, "the result"}},
		},
		{
			name:   "no safety net once something was sent",
			evs:    seq(added("m1"), text("m1", 0, "streamed", 3), ended("m1", "end_turn")),
			result: "streamed",
			want:   []sent{{"finish", Final, "streamed"}},
		},
		{
			name: "final answer first, then turns that never ended, in order",
			evs: seq(
				added("m1"), text("m1", 0, "final", 3), ended("m1", "end_turn"),
				added("m2"), text("m2", 0, "dangling one", 3),
				added("m3"), text("m3", 0, "dangling two", 3),
			),
			want: []sent{{"finish", Final, "final"}, {"finish", Partial, "dangling one"}, {"finish", Partial, "dangling two"}},
		},
		{
			name: "blank lines around a turn are trimmed, inside kept",
			evs:  seq(added("m1"), text("m1", 0, "\n\n  indented\n\n\n\nmore  \n\n", 3), ended("m1", "end_turn")),
			want: []sent{{"finish", Final, "  indented\n\n\n\nmore"}},
		},
		{
			name: "a long interstitial is split",
			evs:  seq(added("m1"), text("m1", 0, long, 50), ended("m1", "tool_use")),
			want: []sent{{"apply", Interstitial, ""}, {"apply", Interstitial, ""}, {"apply", Interstitial, ""}},
		},
		{
			name: "an error that names no message (the backend failed) still goes",
			evs: seq(
				added("m1"), text("m1", 0, "Half an ans", 3),
				protocol.ErrorBlockAdded{Error: "claude: exit status 1"},
			),
			want: []sent{{"finish", Partial, "Half an ans"}, {"finish", Error, "⚠️ claude: exit status 1"}},
		},
		{
			name: "events numbered mid-session, some merged, route as any",
			evs: seq(
				protocol.WithHeader(protocol.UserMessageAdded{Message: protocol.Message{ID: "u1", Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "question"}}}}, protocol.Header{Seq: 41}),
				protocol.WithHeader(added("m1"), protocol.Header{Seq: 42}),
				protocol.WithHeader(protocol.AssistantContentUpdated{MessageID: "m1", Chunk: "merged answer", Stage: protocol.StageStreaming}, protocol.Header{FirstSeq: 43, Seq: 47}),
				protocol.WithHeader(ended("m1", "end_turn"), protocol.Header{Seq: 48}),
			),
			want: []sent{{"finish", Final, "merged answer"}},
		},
		{
			name: "nothing at all: no message",
			evs:  seq(added("m1"), tool("m1", 0), ended("m1", "tool_use")),
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, limit := range []int{split.WeChatLimit, split.TelegramLimit} {
				got := run(New(limit), tt.evs, tt.result)
				if len(got) != len(tt.want) {
					t.Fatalf("limit %d: %d messages, want %d: %+v", limit, len(got), len(tt.want), got)
				}
				for i, w := range tt.want {
					g := got[i]
					if g.at != w.at || g.kind != w.kind || (w.text != "" && g.text != w.text) {
						t.Errorf("limit %d message %d = %s %s %q, want %s %s %q", limit, i, g.at, g.kind, g.text, w.at, w.kind, w.text)
					}
					if split.Units(g.text) > limit {
						t.Errorf("message %d is over the limit", i)
					}
				}
				if tt.check != nil {
					tt.check(t, got)
				}
			}
		})
	}
}

func TestFinishTwice(t *testing.T) {
	t.Parallel()
	r := New(100)
	r.Apply(added("m"))
	for _, ev := range text("m", 0, "x", 1) {
		r.Apply(ev)
	}
	if got := r.Finish(""); len(got) != 1 {
		t.Fatalf("first Finish: %v", got)
	}
	if got := r.Finish("again"); got != nil {
		t.Errorf("second Finish: %v", got)
	}
}

// TestNothingLost: whatever the order of turns, stop reasons, discards and
// aborts, the text of every turn that was not discarded is sent, once, in
// the order the rules say.
func TestNothingLost(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 9))
	reasons := []string{"tool_use", "end_turn", "max_tokens", "pause_turn", "refusal", "weird", ""}
	for i := 0; i < 120; i++ {
		var evs []protocol.Event
		var interstitials, finals, partials []string
		for k := rng.IntN(8); k >= 0; k-- {
			id := fmt.Sprintf("m%d", k)
			body := fmt.Sprintf("turn %d says %s", k, strings.Repeat("字 ", rng.IntN(3000)))
			evs = append(evs, added(id))
			evs = append(evs, text(id, 0, body, 1+rng.IntN(40))...)
			if rng.IntN(6) == 0 {
				evs = append(evs, protocol.AssistantMessageDiscarded{MessageID: id})
				continue
			}
			reason := reasons[rng.IntN(len(reasons))]
			want := trim(body)
			switch reason {
			case "":
				partials = append(partials, want) // never ended: an abort
				continue
			case "tool_use":
				interstitials = append(interstitials, want)
			default:
				finals = append(finals, want)
			}
			evs = append(evs, ended(id, reason))
		}
		limit := []int{split.WeChatLimit, split.TelegramLimit, 300}[rng.IntN(3)]
		got := run(New(limit), evs, "")
		var order []Kind
		texts := map[Kind]string{}
		for _, s := range got {
			if len(order) == 0 || order[len(order)-1] != s.kind {
				order = append(order, s.kind)
			}
			texts[s.kind] += s.text
		}
		squash := func(ss ...string) string { return strings.Join(strings.Fields(strings.Join(ss, "")), "") }
		for _, c := range []struct {
			k    Kind
			want []string
		}{{Interstitial, interstitials}, {Final, finals}, {Partial, partials}} {
			if squash(texts[c.k]) != squash(c.want...) {
				t.Fatalf("case %d: %s text lost or changed", i, c.k)
			}
		}
		// Interstitials come as they happen, then the final answer, then the
		// turns that never ended.
		rank := map[Kind]int{Interstitial: 0, Final: 1, Partial: 2}
		for k := 1; k < len(order); k++ {
			if rank[order[k]] < rank[order[k-1]] {
				t.Fatalf("case %d: order %v", i, order)
			}
		}
	}
}

// TestPendingPermissions: the router's list holds the run's open approval
// requests, oldest first, until each is resolved.
func TestPendingPermissions(t *testing.T) {
	t.Parallel()
	r := New(split.TelegramLimit)
	ids := func() []string {
		var out []string
		for _, p := range r.PendingPermissions() {
			out = append(out, p.RequestID)
		}
		return out
	}
	r.Apply(added("m1"))
	r.Apply(protocol.PermissionRequest{RequestID: "p1", Name: "Bash"})
	r.Apply(protocol.PermissionRequest{RequestID: "p2", Name: "Edit"})
	if got := ids(); strings.Join(got, ",") != "p1,p2" {
		t.Fatalf("pending %v", got)
	}
	r.Apply(protocol.PermissionResolved{RequestID: "p1", Decision: protocol.DecisionAllow})
	if got := ids(); strings.Join(got, ",") != "p2" {
		t.Errorf("after resolving p1: %v", got)
	}
}

// TestLead: a remark the relay held back leads the final answer, packed
// with it — seed 004's 39-character intro joins an 11.5K answer and the
// three messages it fills, instead of going alone as a fourth — or goes
// alone when the run has no final answer.
func TestLead(t *testing.T) {
	t.Parallel()
	const intro = "Let me look at the code structure first." // 40 units
	tests := []struct {
		name  string
		final string
		limit int
		want  []Kind
		first string // the first message's start
	}{
		{"with a short answer", "All good.", split.WeChatLimit, []Kind{Final}, intro + "\n\nAll good."},
		{"with an 11.5K answer", answer(11500), split.WeChatLimit, []Kind{Final, Final, Final}, intro + "\n\n最终答案"},
		{"without a final answer", "", split.WeChatLimit, []Kind{Interstitial}, intro},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := New(tt.limit)
			evs := seq(added("m1"), text("m1", 0, intro, 7), tool("m1", 1), ended("m1", "tool_use"))
			if tt.final != "" {
				evs = append(evs, seq(added("m2"), text("m2", 0, tt.final, 500), ended("m2", "end_turn"))...)
			}
			var applied []Message
			for _, ev := range evs {
				applied = append(applied, r.Apply(ev)...)
			}
			if len(applied) != 1 || applied[0].Kind != Interstitial || applied[0].Text != intro {
				t.Fatalf("Apply returned %+v, want the remark", applied)
			}
			r.Lead(applied[0].Text) // held back by the relay
			got := r.Finish("")
			var kinds []Kind
			for _, m := range got {
				kinds = append(kinds, m.Kind)
				if split.Units(m.Text) > tt.limit {
					t.Errorf("a message of %d units", split.Units(m.Text))
				}
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tt.want) || !strings.HasPrefix(got[0].Text, tt.first) {
				t.Errorf("Finish sent %v starting %.60q, want %v starting %q", kinds, got[0].Text, tt.want, tt.first)
			}
		})
	}
}
