package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/relay/backend"
	"github.com/sluicehq/sluice/protocol"
)

const helpText = `Commands:
/new — start a new conversation
/stop — stop the agent (what it wrote so far is sent) and drop waiting messages
/status — backend, session, model, what is running and waiting
/model [name] — show or change the model
/compact — fold the conversation into a summary
/allow, /always, /deny [n] — answer the agent's approval request
/btw question — a side question, answered without entering the conversation (also while the agent works)
/help — this list
Anything else goes to the agent.`

// commandName is text's command name, lower case and without a bot's
// @name (/stop@SomeBot in a group), and its argument.
func commandName(text string) (name, arg string) {
	name, arg, _ = strings.Cut(text, " ")
	name, _, _ = strings.Cut(strings.ToLower(name), "@")
	return name, strings.TrimSpace(arg)
}

// commands are the chat commands the relay answers itself.
var commands = map[string]bool{
	"/help": true, "/start": true, "/stop": true, "/new": true, "/status": true,
	"/model": true, "/compact": true, "/allow": true, "/always": true, "/deny": true,
	"/btw": true,
}

// isCommand reports whether text is one of the relay's chat commands; any
// other slash command goes to the agent (Claude Code has its own).
func isCommand(text string) bool {
	name, _ := commandName(text)
	return strings.HasPrefix(text, "/") && commands[name]
}

// command handles one of the relay's chat commands (isCommand).
func (r *Relay) command(ctx context.Context, c *chat, text string) {
	name, arg := commandName(text)
	reply := func(s string) { r.say(ctx, c.id, KindCommand, s) }
	switch name {
	case "/help", "/start":
		reply(helpText)
	case "/stop":
		c.mu.Lock()
		jobs := c.jobs
		c.jobs = nil
		unsent := c.unsent() // the abort drops them from the agent (settle, from the inbox)
		c.mu.Unlock()
		r.drop(ctx, jobs)
		dropped := len(jobs) + unsent
		msg := "Nothing is running."
		if c.abort("stopped from the chat") {
			msg = "Stopping; what the agent wrote so far follows."
		}
		if dropped > 0 {
			msg += fmt.Sprintf(" %d waiting message(s) dropped.", dropped)
		}
		reply(msg)
	case "/new":
		c.mu.Lock()
		jobs := c.jobs
		c.jobs = nil
		c.mu.Unlock()
		r.drop(ctx, jobs)
		conv, err := r.conversation(ctx, c)
		if err == nil {
			err = conv.Reset(ctx)
		}
		if err != nil {
			reply("⚠️ " + err.Error())
			return
		}
		reply("New conversation started.")
	case "/status":
		conv, err := r.conversation(ctx, c)
		if err != nil {
			reply("⚠️ " + err.Error())
			return
		}
		c.mu.Lock()
		running, waiting, perms := c.running, len(c.jobs), len(c.perms)
		c.mu.Unlock()
		state := "idle"
		if running {
			state = "working"
		}
		model := conv.Model()
		if model == "" {
			model = "default"
		}
		reply(fmt.Sprintf("Backend: %s\nSession: %s\nModel: %s\nAgent: %s\nWaiting messages: %d\nApprovals asked: %d\nUndelivered replies: %d",
			r.opts.Backend.Name(), conv.Session(), model, state, waiting, perms, r.queue.Pending(c.id)))
	case "/model":
		conv, err := r.conversation(ctx, c)
		if err != nil {
			reply("⚠️ " + err.Error())
			return
		}
		if arg == "" {
			m := conv.Model()
			if m == "" {
				m = "the backend's default"
			}
			reply("Model: " + m)
			return
		}
		if err := conv.SetModel(arg); err != nil {
			reply("⚠️ " + err.Error())
			return
		}
		reply("Model set to " + arg + ".")
	case "/compact":
		c.mu.Lock()
		busy := c.running
		if !busy {
			c.jobs = append(c.jobs, job{compact: true})
		}
		c.mu.Unlock()
		if busy {
			reply("The agent is working; /compact when it is done, or /stop first.")
			return
		}
		c.poke()
	case "/allow", "/always", "/deny":
		r.answer(ctx, c, name, arg)
	case "/btw":
		r.btw(ctx, c, arg)
	}
}

// btw answers a side question beside the run in progress, if any: the
// answer is a reply of its own, and the conversation does not keep it.
func (r *Relay) btw(ctx context.Context, c *chat, question string) {
	if question == "" {
		r.say(ctx, c.id, KindCommand, "Usage: /btw question")
		return
	}
	conv, err := r.conversation(ctx, c)
	if err != nil {
		r.say(ctx, c.id, KindCommand, "⚠️ "+err.Error())
		return
	}
	// The answer may take a while: it is asked beside the handler (whose
	// ctx may be the channel's request's), for as long as the relay runs.
	r.mu.Lock()
	ctx = r.ctx
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		answer, err := conv.Ask(ctx, question)
		switch {
		case errors.Is(err, backend.ErrUnsupported):
			r.say(ctx, c.id, KindCommand, "This backend cannot answer side questions; send it as a message.")
		case err != nil:
			r.say(ctx, c.id, KindCommand, "⚠️ "+err.Error())
		default:
			r.say(ctx, c.id, KindCommand, answer)
		}
	}()
}

// answer answers the oldest approval request, or the n-th with an
// argument.
func (r *Relay) answer(ctx context.Context, c *chat, name, arg string) {
	decision := map[string]protocol.Decision{"/allow": protocol.DecisionAllow, "/always": protocol.DecisionAllowAlways, "/deny": protocol.DecisionDeny}[name]
	c.mu.Lock()
	perms, conv := c.perms, c.conv
	c.mu.Unlock()
	i := 0
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			r.say(ctx, c.id, KindCommand, "Usage: "+name+" [n], n counting the open requests from 1.")
			return
		}
		i = n - 1
	}
	if i >= len(perms) || conv == nil {
		r.say(ctx, c.id, KindCommand, "No approval is waiting.")
		return
	}
	p := perms[i]
	err := conv.AnswerPermission(p.RequestID, decision)
	switch {
	case errors.Is(err, backend.ErrUnsupported):
		r.say(ctx, c.id, KindCommand, "This backend cannot ask for approvals in the chat; its --permission-mode decides.")
		return
	case err != nil:
		r.say(ctx, c.id, KindCommand, "⚠️ "+err.Error())
		return
	}
	// The request leaves c.perms when the agent's permissionResolved
	// reaches the run's list.
	r.say(ctx, c.id, KindCommand, map[protocol.Decision]string{
		protocol.DecisionAllow: "Allowed.", protocol.DecisionAllowAlways: "Allowed for the rest of the session.", protocol.DecisionDeny: "Denied.",
	}[decision])
}
