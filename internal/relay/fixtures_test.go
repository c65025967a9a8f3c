package relay

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/relay/split"
)

var update = flag.Bool("update", false, "rewrite the generated trace fixtures in testdata")

// The seed's two traces (004 §1), rebuilt in Claude Code's stream-json
// shape (the shape of testdata/tool_use_bash.ndjson, a real recording):
//
//   - trace_a.ndjson: a pure Q&A, one end_turn turn of 1,485 characters
//     streamed in small deltas ("explain closures in three paragraphs");
//   - trace_d.ndjson: an agent run with several tool turns — two with a
//     remark, one without — and a 9,121-character final answer in
//     markdown, with a code block ("analyse the structure of src/main.ts").
//
// Every character is in the BMP, so characters = runes = UTF-16 units.
var traces = []struct {
	file  string
	build func() []genTurn
}{
	{"trace_a.ndjson", traceA},
	{"trace_d.ndjson", traceD},
}

const (
	traceAChars = 1485
	traceDChars = 9121
)

type genTurn struct {
	text  string
	tools []genTool
	stop  string
}

type genTool struct {
	name, input, result string
}

var closureSentences = []string{
	"闭包是一个函数和它被创建时所处的词法环境的组合。",
	"当内部函数引用了外部函数的局部变量，并且在外部函数返回之后仍然被调用时，这些变量不会被回收，而是被内部函数一直持有。",
	"换句话说，函数记住了它出生的地方，而不仅仅是它被调用的地方。",
	"在 JavaScript 中，每次调用外部函数都会创建一个新的作用域，因此每个闭包都拥有自己独立的一份变量。",
	"这使得我们可以用闭包来实现私有状态，例如一个计数器函数，外部代码只能通过它暴露的方法来读取或修改计数。",
	"闭包也常见于回调、事件处理和函数柯里化，它让函数可以携带上下文信息在程序中传递。",
	"需要注意的是，闭包会延长变量的生命周期，如果无意中持有了大对象，就可能造成内存占用过高。",
	"在循环中创建闭包时，要留意变量是按引用捕获的，使用 let 声明循环变量可以让每次迭代都得到新的绑定。",
}

func traceA() []genTurn {
	var paras []string
	for p := 0; p < 3; p++ {
		var b strings.Builder
		for i := 0; split.Units(b.String()) < 440; i++ {
			b.WriteString(closureSentences[(p*3+i)%len(closureSentences)])
		}
		paras = append(paras, b.String())
	}
	return []genTurn{{text: padTo(strings.Join(paras, "\n\n"), traceAChars), stop: "end_turn"}}
}

var structureSentences = []string{
	"这个模块负责把微信消息转发给 Claude CLI，并把回答按顺序推送回去。",
	"入口函数先读取配置，再初始化日志、会话存储和消息发送器。",
	"sendToClaude 是整个流程的核心，它启动子进程并逐行解析 NDJSON 输出。",
	"每个 text_delta 都会被追加到缓冲区，回合结束时根据 stop_reason 决定如何发送。",
	"限流逻辑集中在 api.ts 中，两条消息之间至少间隔 2.5 秒，遇到 ret -2 会冷却 60 秒。",
	"错误处理分为三类：网络错误重试，会话过期重新登录，其他错误直接报告给用户。",
	"typing 指示器在 Claude 工作期间每隔几秒刷新一次，超过五分钟没有输出会发送提示。",
	"会话 ID 按聊天保存在本地文件中，下一条消息会用 --resume 继续之前的上下文。",
	"splitMessage 会按照段落边界把超过 4000 字的文本切成多条消息。",
	"测试覆盖了切分、路由和限流，但缺少对进程异常退出的集成测试。",
}

func traceD() []genTurn {
	var sections []string
	titles := []string{"入口与初始化", "消息接收循环", "会话管理", "调用 Claude CLI", "流式输出解析", "消息切分", "限流与重试", "typing 指示器", "错误处理", "配置项", "测试现状", "改进建议"}
	for i, title := range titles {
		var b strings.Builder
		fmt.Fprintf(&b, "## %d. %s\n\n", i+1, title)
		for p := 0; p < 2; p++ {
			if p > 0 {
				b.WriteString("\n\n")
			}
			var para strings.Builder
			for k := 0; split.Units(para.String()) < 300; k++ {
				para.WriteString(structureSentences[(i*5+p*3+k)%len(structureSentences)])
			}
			b.WriteString(para.String())
		}
		if i == 3 {
			b.WriteString("\n\n```ts\nconst child = spawn('claude', [\n  '-p', '-',\n  '--output-format', 'stream-json',\n  '--verbose',\n  '--include-partial-messages',\n]);\nchild.stdout.on('data', onChunk);\n```")
		}
		if i == 10 {
			b.WriteString("\n\n- 切分：已覆盖\n- 路由：已覆盖\n- 限流：已覆盖\n- 进程异常：缺失")
		}
		sections = append(sections, b.String())
	}
	final := padTo(strings.Join(sections, "\n\n"), traceDChars)
	return []genTurn{
		{text: "我先看一下 src/main.ts 的整体结构。", tools: []genTool{{"Read", `{"file_path":"src/main.ts"}`, "(file contents)"}}, stop: "tool_use"},
		{text: "文件比较长，我再搜索一下关键函数的定义和调用位置。", tools: []genTool{{"Grep", `{"pattern":"function sendToClaude"}`, "src/main.ts:540"}, {"Grep", `{"pattern":"splitMessage"}`, "src/main.ts:88"}}, stop: "tool_use"},
		{tools: []genTool{{"Bash", `{"command":"wc -l src/main.ts src/api.ts"}`, "  812 src/main.ts\n  240 src/api.ts"}}, stop: "tool_use"},
		{text: final, stop: "end_turn"},
	}
}

// padTo lengthens text to n units with a closing sentence cut to fit.
func padTo(text string, n int) string {
	tail := "以上就是完整的说明，如果还有问题可以继续提问。"
	text += "\n\n"
	for split.Units(text) < n {
		for _, r := range tail {
			if split.Units(text) == n {
				break
			}
			text += string(r)
		}
	}
	if split.Units(text) != n {
		panic(fmt.Sprintf("padTo: %d units, want %d", split.Units(text), n))
	}
	return text
}

// genRun writes turns as Claude Code's stream-json.
func genRun(sessionID string, turns []genTurn) []byte {
	rng := rand.New(rand.NewPCG(4, 1485))
	var buf bytes.Buffer
	uuid := 0
	emit := func(v map[string]any) {
		uuid++
		v["session_id"] = sessionID
		v["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", uuid)
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	stream := func(msgID string, ev map[string]any) {
		emit(map[string]any{"type": "stream_event", "event": ev, "parent_tool_use_id": nil, "api_message_id": msgID})
	}
	emit(map[string]any{"type": "system", "subtype": "init", "cwd": "/home/user/project", "model": "claude-opus-5-5", "permissionMode": "default", "tools": []string{"Bash", "Edit", "Grep", "Read", "Write"}})
	last := ""
	for ti, t := range turns {
		msgID := fmt.Sprintf("msg_trace_%04d", ti+1)
		emit(map[string]any{"type": "system", "subtype": "status", "status": "requesting"})
		stream(msgID, map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": "claude-opus-5-5", "content": []any{}, "stop_reason": nil, "usage": map[string]int{"input_tokens": 2500 + 100*ti, "output_tokens": 1}}})
		idx := 0
		if t.text != "" {
			stream(msgID, map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
			rest := []rune(t.text)
			for len(rest) > 0 {
				k := min(len(rest), 3+rng.IntN(30))
				stream(msgID, map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": string(rest[:k])}})
				rest = rest[k:]
			}
			emit(map[string]any{"type": "assistant", "message": map[string]any{"id": msgID, "type": "message", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": t.text}}, "stop_reason": nil}, "parent_tool_use_id": nil})
			stream(msgID, map[string]any{"type": "content_block_stop", "index": idx})
			idx++
			last = t.text
		}
		for k, tl := range t.tools {
			id := fmt.Sprintf("toolu_trace_%d_%d", ti+1, k+1)
			stream(msgID, map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "tool_use", "id": id, "name": tl.name, "input": map[string]any{}}})
			stream(msgID, map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": tl.input}})
			emit(map[string]any{"type": "assistant", "message": map[string]any{"id": msgID, "type": "message", "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": tl.name, "input": json.RawMessage(tl.input)}}, "stop_reason": nil}, "parent_tool_use_id": nil})
			stream(msgID, map[string]any{"type": "content_block_stop", "index": idx})
			idx++
		}
		stream(msgID, map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": t.stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 40 + split.Units(t.text)/2}})
		stream(msgID, map[string]any{"type": "message_stop"})
		for k, tl := range t.tools {
			id := fmt.Sprintf("toolu_trace_%d_%d", ti+1, k+1)
			emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{map[string]any{"tool_use_id": id, "type": "tool_result", "content": tl.result, "is_error": false}}}, "parent_tool_use_id": nil})
		}
	}
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 61000, "num_turns": len(turns), "result": last, "stop_reason": "end_turn", "total_cost_usd": 0.42, "usage": map[string]int{"input_tokens": 11000, "output_tokens": 5200}})
	return buf.Bytes()
}

// TestTraceFixtures keeps the generated traces in testdata equal to what
// the generator makes (go test -run TestTraceFixtures -update rewrites
// them) and checks their sizes.
func TestTraceFixtures(t *testing.T) {
	t.Parallel()
	for i, tr := range traces {
		turns := tr.build()
		final := turns[len(turns)-1].text
		want := map[string]int{"trace_a.ndjson": traceAChars, "trace_d.ndjson": traceDChars}[tr.file]
		if got := split.Units(final); got != want || len([]rune(final)) != want {
			t.Errorf("%s: final answer is %d units, want %d", tr.file, got, want)
		}
		data := genRun(fmt.Sprintf("5e55100%d-0000-4000-8000-000000000000", i), turns)
		path := "testdata/" + tr.file
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(old, data) {
			t.Errorf("%s differs from the generator's output; run go test -run TestTraceFixtures -update", path)
		}
	}
}
