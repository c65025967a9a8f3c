package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// runBang runs "!command": a user message holding the command, and a Bash
// tool block (block 1 of that message) with the command's live output. The
// model sees the command and its output in its context, as Claude Code's
// bash mode does.
func (s *Session) runBang(j *job) Result {
	ctx := j.ctx
	res := Result{MessageID: j.id}
	msg := protocol.Message{
		ID: j.id, Role: protocol.RoleUser, CreatedAt: s.now(),
		Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "!" + j.text}},
	}
	s.mu.Lock()
	mark := ctxMark{Epoch: s.epoch, Len: len(s.ctxMsgs)}
	s.marks[msg.ID] = mark
	s.mu.Unlock()
	s.publish(protocol.UserMessageAdded{Message: msg})
	// Recorded before the command starts, so that a crash while it runs
	// leaves the command, and what of its output streamed, in the session.
	s.persistMessage(msg.ID, &mark)

	bash := s.tool("Bash")
	if bash == nil {
		bash = tools.NewBash()
	}
	params, _ := json.Marshal(map[string]string{"command": j.text})
	call := toolCall{id: "bang_" + j.id, name: "Bash", input: params, display: 1}
	ev := protocol.ToolBlockUpdated{MessageID: j.id, BlockIndex: 1, ToolID: call.id, Name: "Bash",
		Parameters: string(params), CompactParams: bash.Compact(params)}
	start := ev
	start.Stage, start.Parameters, start.CompactParams = protocol.StageStart, "", ""
	s.publish(start)
	running := ev
	running.Stage = protocol.StageRunning
	s.publish(running)
	out := &toolOutput{s: s, ev: running}
	r, err := bash.Run(ctx, &s.toolEnv, params, out)
	out.flush()

	end := ev
	end.Stage = protocol.StageEnd
	success := err == nil && !r.IsError
	content := strings.ToValidUTF8(r.Content, "\uFFFD")
	switch {
	case abortCause(ctx) != nil:
		success, end.Error = false, ErrAborted.Error()
		res.Err = abortCause(ctx)
	case err != nil:
		end.Error = err.Error()
		res.Err = err
	case r.IsError:
		end.Error = firstLine(content, 200)
	}
	end.Result, end.Success = &content, &success
	end.ShortResult = tools.ShortResult(content, shortResultLines, shortResultBytes)
	s.publish(end)

	ctxMsg := model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText,
		Text: bangContext(j.text, content, end.Error)}}}
	s.mu.Lock()
	s.ctxMsgs = append(s.ctxMsgs, ctxMsg)
	title := !s.titled
	s.titled = true
	s.mu.Unlock()
	recs := []record{{Type: recContext, Time: s.now(), Context: []model.Message{ctxMsg}}}
	if title {
		recs = append(recs, record{Type: recTitle, Time: s.now(), Title: s.titleOf(msg)})
	}
	s.persistMessage(j.id, &mark, recs...)
	res.Text = content
	return res
}

// bangContext is how a shell command the user ran reaches the model.
func bangContext(command, output, errText string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "<bash-input>%s</bash-input>\n<bash-stdout>%s</bash-stdout>", command, output)
	if errText != "" {
		fmt.Fprintf(&sb, "\n<bash-stderr>%s</bash-stderr>", errText)
	}
	return sb.String()
}
