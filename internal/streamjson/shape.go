package streamjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// A line's kind is its type, then its subtype or its stream event's type:
// "system/init", "stream_event/content_block_delta", "assistant".
func kindOf(line map[string]any) string {
	k, _ := line["type"].(string)
	if st, ok := line["subtype"].(string); ok {
		return k + "/" + st
	}
	if ev, ok := line["event"].(map[string]any); ok {
		t, _ := ev["type"].(string)
		return k + "/" + t
	}
	return k
}

// LineKinds checks that every line of data is a JSON object whose first
// field is "type" (sluice writes its lines so, for readers that look at
// the start of a line) and returns each line's kind.
func LineKinds(data []byte) ([]string, error) {
	lines, err := parseLines(data)
	if err != nil {
		return nil, err
	}
	var kinds []string
	n := 0
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if !bytes.HasPrefix(l, []byte(`{"type":`)) {
			return nil, fmt.Errorf("line %d does not start with its type: %.80s", n+1, l)
		}
		kinds = append(kinds, kindOf(lines[n]))
		n++
	}
	return kinds, nil
}

func parseLines(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil || m == nil {
			return nil, fmt.Errorf("line %d is not a JSON object: %.80s", n, sc.Bytes())
		}
		if d.More() {
			return nil, fmt.Errorf("line %d holds more than one JSON value", n)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// CompareOptions tune CompareWithClaudeCode.
type CompareOptions struct {
	// OpenAI says that sluice got the answers from an OpenAI-compatible
	// server, which has no thinking signatures: the recording's
	// signature_delta events and signature values are left out.
	OpenAI bool
}

// Kinds of Claude Code lines that sluice does not write: status lines
// ("requesting" before each model call: the agent publishes nothing when a
// request starts) and estimated thinking token counts (an estimate of
// Claude Code's own).
var ccOnlyKinds = []string{"system/status", "system/thinking_tokens"}

// Fields of Claude Code's lines that sluice does not write, by line kind
// ("" for every kind): each names a field and everything under it.
var ccOnlyFields = map[string][]string{
	// Claude Code's own configuration, features and version; sluice has
	// sluice_version.
	"system/init": {
		"slash_commands", "terminal_slash_commands", "claude_code_version", "output_style", "agents",
		"skills", "plugins", "capabilities", "analytics_disabled", "product_feedback_disabled",
		"memory_paths", "original_cwd", "messaging_socket_path", "fast_mode_state",
		"fast_mode_disabled_reason", "per_turn_effort_active", "ultrathink_available",
		"ultrathink_typed_raises", "view_mode",
	},
	// Timings and display hints of Claude Code's renderer.
	"stream_event": {"ttft_ms", "thinking_display"},
	// The HTTP request id is not among the model parts sluice's providers
	// yield; thinking timings are in the session's events instead.
	"assistant": {"request_id", "thinking_duration_ms", "thinking_display"},
	// Claude Code's per-tool structured results and permission records;
	// the tool_result block carries the output.
	"user": {"tool_use_result", "tool_result_meta"},
	// Claude Code's own counters, features and timings, and usage fields
	// that sluice's providers do not report.
	"result": {
		"terminal_reason", "fast_mode_state", "fast_mode_disabled_reason", "subagent_stats",
		"safety_stops", "ttft_ms", "ttft_stream_ms", "time_to_request_ms", "first_content_frame_ms",
		"queued_turn_count", "result_index", "model_usage_since_last_result",
		"usage.output_tokens_details", "usage.server_tool_use", "usage.service_tier",
		"usage.cache_creation", "usage.inference_geo", "usage.iterations", "usage.speed",
		"usage.fallback_credit", "modelUsage.*.webSearchRequests", "modelUsage.*.contextWindow",
		"modelUsage.*.maxOutputTokens", "modelUsage.*.thinkingTokens",
		"modelUsage.*.cacheCreationEphemeral5mInputTokens", "modelUsage.*.cacheCreationEphemeral1hInputTokens",
		"modelUsage.*.canonicalModel", "modelUsage.*.provider", "modelUsage.*.costBasis",
	},
	// The retry's whole error message (Claude Code's error is a category).
	"system/api_retry": {},
}

// Fields sluice writes that Claude Code's recordings do not have.
var sluiceOnlyFields = map[string][]string{
	"system/init": {"sluice_version"},
	// The server that recorded Claude Code's runs sent only output_tokens
	// in message_delta, which Claude Code passed on; Anthropic's API sends
	// the response's whole usage there, and sluice reports it so.
	"stream_event":     {"event.usage.input_tokens", "event.usage.cache_creation_input_tokens", "event.usage.cache_read_input_tokens"},
	"system/api_retry": {"error_message"},
	// A failed run's causes (Claude Code's error results have them too; the
	// recordings are all successes).
	"result": {"errors", "continued_after"},
}

// CompareWithClaudeCode compares sluice's stream-json output (got) with
// Claude Code's recording (want) of a run on the same model answers, and
// returns the differences, none when sluice's lines have Claude Code's
// shape:
//
//   - the same sequence of line kinds, leaving out those sluice does not
//     write (ccOnlyKinds);
//   - line by line, the same field paths ("message.content[].type"),
//     leaving out the fields listed in ccOnlyFields and sluiceOnlyFields;
//   - the same values where the model answers decide them: the stream
//     events and the assistant messages (usage apart: sluice reports the
//     response's totals so far), the tool results, and the result's
//     subtype, is_error, result, stop_reason and permission_denials.
func CompareWithClaudeCode(got, want []byte, opts CompareOptions) []string {
	g, err := parseLines(got)
	if err != nil {
		return []string{"sluice's output: " + err.Error()}
	}
	w, err := parseLines(want)
	if err != nil {
		return []string{"Claude Code's recording: " + err.Error()}
	}
	w = slices.DeleteFunc(w, func(l map[string]any) bool {
		return slices.Contains(ccOnlyKinds, kindOf(l)) || (opts.OpenAI && isSignatureDelta(l))
	})
	gk, wk := kinds(g), kinds(w)
	if !slices.Equal(gk, wk) {
		return []string{"line kinds differ:\n" + sideBySide(gk, wk)}
	}
	var diffs []string
	for i := range g {
		// Fields are listed by kind, or by family for the kinds whose
		// second part says nothing about their fields.
		k := gk[i]
		if family, _, _ := strings.Cut(k, "/"); family == "stream_event" || family == "result" {
			k = family
		}
		gp, wp := paths(g[i]), paths(w[i])
		for _, p := range wp {
			if !slices.Contains(gp, p) && !listed(ccOnlyFields[k], p) {
				diffs = append(diffs, fmt.Sprintf("line %d (%s): sluice lacks %s", i+1, gk[i], p))
			}
		}
		for _, p := range gp {
			if !slices.Contains(wp, p) && !listed(sluiceOnlyFields[k], p) {
				diffs = append(diffs, fmt.Sprintf("line %d (%s): Claude Code has no %s", i+1, gk[i], p))
			}
		}
		for _, f := range decidedByModel(k) {
			gv, wv := strip(g[i][f], opts), strip(w[i][f], opts)
			if !reflect.DeepEqual(gv, wv) {
				diffs = append(diffs, fmt.Sprintf("line %d (%s): %s is %s, Claude Code's %s", i+1, gk[i], f, compact(gv), compact(wv)))
			}
		}
	}
	return diffs
}

func isSignatureDelta(l map[string]any) bool {
	ev, _ := l["event"].(map[string]any)
	d, _ := ev["delta"].(map[string]any)
	return d["type"] == "signature_delta"
}

// decidedByModel lists the fields of a kind of line whose values are the
// same whoever ran the same model answers.
func decidedByModel(kind string) []string {
	switch kind {
	case "stream_event":
		return []string{"event", "parent_tool_use_id"}
	case "assistant", "user":
		return []string{"message", "parent_tool_use_id"}
	case "result":
		// Not num_turns: Claude Code counts the prompt and each tool
		// result (3 for a response with two tool calls and the answer
		// after them), sluice the model responses, which --max-turns
		// bounds.
		return []string{"subtype", "is_error", "result", "stop_reason", "permission_denials"}
	case "system/api_retry":
		return []string{"attempt", "error_status", "error"}
	}
	return nil
}

// strip removes what a run does not decide from a value: usage (sluice
// reports a response's totals so far where the recording has what the
// fake server sent), and with OpenAI the thinking signatures.
func strip(v any, opts CompareOptions) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if k == "usage" || (opts.OpenAI && k == "signature") {
				continue
			}
			out[k] = strip(x, opts)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = strip(x, opts)
		}
		return out
	}
	return v
}

func kinds(lines []map[string]any) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = kindOf(l)
	}
	return out
}

// paths lists the field paths of v: "a", "a.b", "a[]" for an array and
// "a[].c" for its elements' fields (all elements together), sorted. Some
// keys are data, not shape: a tool's input is a leaf, and the keys of a
// per-model usage map (model names) are "*".
func paths(v map[string]any) []string {
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				set[p] = true
				switch k {
				case "input":
				case "modelUsage", "model_usage_since_last_result":
					if m, ok := x.(map[string]any); ok {
						for _, y := range m {
							set[p+".*"] = true
							walk(p+".*", y)
						}
					}
				default:
					walk(p, x)
				}
			}
		case []any:
			for _, x := range v {
				walk(prefix+"[]", x)
			}
		}
	}
	walk("", v)
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// listed reports whether path p is one of list or under one; a "*"
// segment stands for any key (modelUsage.*.costUSD).
func listed(list []string, p string) bool {
	ps := strings.Split(p, ".")
	for _, l := range list {
		ls := strings.Split(l, ".")
		if len(ls) > len(ps) {
			continue
		}
		match := true
		for i, seg := range ls {
			if seg != "*" && seg != strings.TrimSuffix(ps[i], "[]") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func sideBySide(got, want []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "     %-40s %s\n", "sluice", "Claude Code")
	for i := range max(len(got), len(want)) {
		g, w := "", ""
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		mark := " "
		if g != w {
			mark = "!"
		}
		fmt.Fprintf(&sb, "%s%3d %-40s %s\n", mark, i+1, g, w)
	}
	return sb.String()
}

func compact(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const limit = 300
	if len(data) > limit {
		return string(data[:limit]) + "…"
	}
	return string(data)
}

// ShapeRecording is the shape of a Claude Code run, without its values:
// each line's kind, whether a subagent wrote it (parent_tool_use_id set)
// and its field paths (as paths names them). Shapes stand in for runs
// whose text may not be copied.
type ShapeRecording struct {
	Recorded string      `json:"recorded"`
	Lines    []ShapeLine `json:"lines"`
}

// ShapeLine is one line of a ShapeRecording.
type ShapeLine struct {
	Kind  string   `json:"kind"`
	Child bool     `json:"child"`
	Paths []string `json:"paths"`
}

// Kinds of Claude Code's subagent lines that sluice does not write: a
// running subagent's progress and status patches (the nested events carry
// them to every face).
var ccOnlySubagentKinds = []string{"system/task_progress", "system/task_updated"}

// Fields of Claude Code's subagent lines that sluice does not write, by
// line kind, beside ccOnlyFields.
var ccOnlySubagentFields = map[string][]string{
	// Claude Code's run ids and output files of its task registry.
	"system/task_started":      {"run_id"},
	"system/task_notification": {"run_id", "output_file"},
	// The Agent call's result: sluice's is a string, and its
	// tool_use_result has the report, prompt, type, status, duration,
	// tokens, tool uses and usage, not Claude Code's harness and resume
	// bookkeeping.
	"user": {
		"message.content.content", "tool_use_result.agentId", "tool_use_result.canContinueAgent",
		"tool_use_result.harnessNoteCount", "tool_use_result.harnessSectionHash", "tool_use_result.harnessTailCount",
		"tool_use_result.resolvedModel", "tool_use_result.toolStats", "tool_use_result.toolsUsed",
		"tool_use_result.usage.output_tokens_details", "tool_use_result.usage.inference_geo",
		"tool_use_result.usage.iterations", "tool_use_result.usage.speed", "tool_use_result.usage.fallback_credit",
	},
}

// CompareShape compares sluice's stream-json output (got) with the shape
// of Claude Code's run on the same model answers, and returns the
// differences: the sequence of line kinds (a subagent's lines marked),
// leaving out those only one of them writes, and, line by line, the field
// paths Claude Code has that sluice's line lacks (leaving out those of
// ccOnlyFields and ccOnlySubagentFields). Fields only sluice writes are
// allowed.
func CompareShape(got []byte, shape []byte) []string {
	var rec ShapeRecording
	if err := json.Unmarshal(shape, &rec); err != nil {
		return []string{fmt.Sprintf("the shape recording: %v", err)}
	}
	lines, err := parseLines(got)
	if err != nil {
		return []string{err.Error()}
	}
	var want []ShapeLine
	for _, l := range rec.Lines {
		if !slices.Contains(ccOnlyKinds, l.Kind) && !slices.Contains(ccOnlySubagentKinds, l.Kind) {
			want = append(want, l)
		}
	}
	mark := func(kind string, child bool) string {
		if child {
			return kind + " (subagent)"
		}
		return kind
	}
	var gotKinds, wantKinds []string
	for _, l := range lines {
		p, _ := l["parent_tool_use_id"].(string)
		gotKinds = append(gotKinds, mark(kindOf(l), p != ""))
	}
	for _, l := range want {
		wantKinds = append(wantKinds, mark(l.Kind, l.Child))
	}
	if !slices.Equal(gotKinds, wantKinds) {
		return []string{"the line kinds differ:\n" + sideBySide(gotKinds, wantKinds)}
	}
	var diffs []string
	for i, l := range lines {
		have := paths(l)
		// The user lines' tool_use_result is compared here: an Agent
		// call's has Claude Code's keys.
		kind, base := want[i].Kind, strings.SplitN(want[i].Kind, "/", 2)[0]
		skip := append(slices.Clone(ccOnlySubagentFields[kind]), ccOnlyFields[""]...)
		if kind != "user" {
			skip = append(append(skip, ccOnlyFields[kind]...), ccOnlyFields[base]...)
		} else {
			skip = append(skip, "tool_result_meta")
		}
		for _, p := range want[i].Paths {
			if !slices.Contains(have, p) && !listed(skip, p) {
				diffs = append(diffs, fmt.Sprintf("line %d (%s): no %s", i+1, wantKinds[i], p))
			}
		}
	}
	return diffs
}
