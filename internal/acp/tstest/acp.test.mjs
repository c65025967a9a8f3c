// The official ACP TypeScript SDK as the client of `sluice acp`: each test
// starts the built binary (SLUICE_BIN) against the fake Anthropic server the
// Go test runs (ANTHROPIC_BASE_URL), in the work directory ACP_WORK.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const bin = process.env.SLUICE_BIN;
const work = process.env.ACP_WORK;

function start(args = []) {
  const child = spawn(bin, ["acp", "--provider", "anthropic", "--model", "claude-sonnet-4-5", ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream, stderr: () => stderr };
}

function stop(child) {
  child.stdin.end();
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on("exit", (code) => resolve(code));
  });
}

// run connects a client app with the given handlers, initializes, and runs op.
async function run({ caps = {}, permission, fs, terminal, args } = {}, op) {
  const { child, stream, stderr } = start(args);
  const updates = [];
  const asked = [];
  const app = client({ name: "sluice-acp-test" });
  app.onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  });
  app.onRequest(methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    const optionId = permission ? permission(params) : "reject_once";
    return { outcome: { outcome: "selected", optionId } };
  });
  if (fs) {
    app.onRequest(methods.client.fs.readTextFile, ({ params }) => fs.read(params));
    app.onRequest(methods.client.fs.writeTextFile, ({ params }) => fs.write(params));
  }
  if (terminal) {
    app.onRequest(methods.client.terminal.create, ({ params }) => terminal.create(params));
    app.onRequest(methods.client.terminal.output, ({ params }) => terminal.output(params));
    app.onRequest(methods.client.terminal.waitForExit, ({ params }) => terminal.waitForExit(params));
    app.onRequest(methods.client.terminal.kill, ({ params }) => terminal.kill(params));
    app.onRequest(methods.client.terminal.release, ({ params }) => terminal.release(params));
  }
  try {
    return await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: caps,
      });
      return await op(ctx, { init, updates, asked });
    });
  } catch (e) {
    throw new Error(`${e?.message ?? e}\nsluice stderr:\n${stderr()}`);
  } finally {
    await stop(child);
  }
}

const text = (updates, kind) =>
  updates
    .filter((u) => u.update.sessionUpdate === kind && u.update.content.type === "text")
    .map((u) => u.update.content.text)
    .join("");

const toolUpdates = (updates, id) =>
  updates.filter(
    (u) =>
      (u.update.sessionUpdate === "tool_call" || u.update.sessionUpdate === "tool_call_update") &&
      u.update.toolCallId === id,
  );

const finalStatus = (updates, id) =>
  toolUpdates(updates, id)
    .map((u) => u.update.status)
    .filter(Boolean)
    .at(-1);

async function newSession(ctx) {
  return ctx.request(methods.agent.session.new, { cwd: work, mcpServers: [] });
}

async function prompt(ctx, sessionId, words) {
  return ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: words }] });
}

test("initialize declares the capabilities and an auth method", async () => {
  await run({}, async (ctx, { init }) => {
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.equal(init.agentCapabilities.promptCapabilities.image, true);
    assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
    assert.ok(init.authMethods.length >= 1);
    await ctx.request(methods.agent.authenticate, { methodId: init.authMethods[0].id });
  });
});

test("a plain prompt: the chunks concatenate to the exact answer", async () => {
  await run({}, async (ctx, { updates }) => {
    const { sessionId, modes } = await newSession(ctx);
    assert.equal(modes.currentModeId, "default");
    const resp = await prompt(ctx, sessionId, "plain");
    assert.equal(resp.stopReason, "end_turn");
    assert.equal(text(updates, "agent_message_chunk"), 'The exact answer: ünïcödé, a 🎉 and "quotes".\nSecond line.');
    assert.ok(updates.some((u) => u.update.sessionUpdate === "usage_update" && u.update.size > 0));
    assert.ok(updates.some((u) => u.update.sessionUpdate === "session_info_update" && u.update.title === "plain"));
    assert.ok(updates.some((u) => u.update.sessionUpdate === "available_commands_update"));
  });
});

test("an image in a prompt reaches the model beside the text", async () => {
  // A 1×1 PNG and a GIF header: the model gets each as sent, in order.
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
  const gif = Buffer.from("GIF89a\x01\x00\x01\x00", "latin1").toString("base64");
  await run({}, async (ctx, { updates }) => {
    const { sessionId } = await newSession(ctx);
    const resp = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: "text", text: "what is this?" },
        { type: "image", data: png, mimeType: "image/png" },
        { type: "image", data: gif, mimeType: "image/gif" },
      ],
    });
    assert.equal(resp.stopReason, "end_turn");
    assert.equal(text(updates, "agent_message_chunk"), `text "what is this?" images image/png ${png};image/gif ${gif};`);
    // An image type no model takes is invalid params.
    await assert.rejects(
      ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "image", data: png, mimeType: "image/tiff" }] }),
      (e) => e.code === -32602,
    );
  });
});

test("/clear is told to the client: an agent message with _meta, and the context is empty", async () => {
  await run({}, async (ctx, { updates }) => {
    const { sessionId } = await newSession(ctx);
    await prompt(ctx, sessionId, "plain");
    const from = updates.length;
    assert.equal((await prompt(ctx, sessionId, "/clear")).stopReason, "end_turn");
    const after = updates.slice(from);
    const told = after.find((u) => u.update.sessionUpdate === "agent_message_chunk");
    assert.match(told.update.content.text, /^Conversation cleared/);
    assert.deepEqual(told.update._meta, { sluice: { messagesCleared: {} } });
    assert.equal(after.findLast((u) => u.update.sessionUpdate === "usage_update").update.used, 0);
  });
});

test("reasoning streams as agent_thought_chunk", async () => {
  await run({}, async (ctx, { updates }) => {
    const { sessionId } = await newSession(ctx);
    assert.equal((await prompt(ctx, sessionId, "reason")).stopReason, "end_turn");
    assert.equal(text(updates, "agent_thought_chunk"), "Thinking it over");
    assert.equal(text(updates, "agent_message_chunk"), "Reasoned answer");
  });
});

for (const [optionId, status] of [
  ["allow_once", "completed"],
  ["reject_once", "failed"],
]) {
  test(`a Bash tool with approval: ${optionId}`, async () => {
    await run({ permission: () => optionId }, async (ctx, { updates, asked }) => {
      const { sessionId } = await newSession(ctx);
      assert.equal((await prompt(ctx, sessionId, "bash")).stopReason, "end_turn");
      assert.equal(asked.length, 1);
      assert.equal(asked[0].toolCall.toolCallId, "toolu_bash");
      assert.deepEqual(
        asked[0].options.map((o) => o.kind),
        ["allow_once", "allow_always", "reject_once", "reject_always"],
      );
      assert.equal(asked[0].toolCall.content[0].content.text, "echo tool-ran");
      const first = toolUpdates(updates, "toolu_bash")[0].update;
      assert.equal(first.sessionUpdate, "tool_call");
      assert.equal(first.kind, "execute");
      assert.equal(finalStatus(updates, "toolu_bash"), status);
      const answer = text(updates, "agent_message_chunk");
      if (status === "completed") assert.match(answer, /tool result: tool-ran/);
      else assert.match(answer, /denied/);
    });
  });
}

test("an edit carries its diff, in the permission request and the tool call", async () => {
  await run({ permission: () => "allow_once" }, async (ctx, { updates, asked }) => {
    const { sessionId } = await newSession(ctx);
    assert.equal((await prompt(ctx, sessionId, "edit")).stopReason, "end_turn");
    const file = path.join(work, "edit.txt");
    assert.equal(readFileSync(file, "utf8"), "alpha gamma\n");
    const diff = { type: "diff", path: file, oldText: "beta", newText: "gamma" };
    assert.deepEqual(asked[0].toolCall.content[0], diff);
    const last = toolUpdates(updates, "toolu_edit").at(-1).update;
    assert.equal(last.status, "completed");
    assert.deepEqual(last.content[0], diff);
    assert.equal(last.locations[0].path, file);
    assert.equal(toolUpdates(updates, "toolu_edit")[0].update.kind, "edit");
  });
});

test("a Write over an existing file is a diff from its old text", async () => {
  await run({ permission: () => "allow_once" }, async (ctx, { updates, asked }) => {
    const { sessionId } = await newSession(ctx);
    assert.equal((await prompt(ctx, sessionId, "write")).stopReason, "end_turn");
    const file = path.join(work, "write.txt");
    assert.equal(readFileSync(file, "utf8"), "after write\n");
    const diff = { type: "diff", path: file, oldText: "before write\n", newText: "after write\n" };
    assert.deepEqual(asked[0].toolCall.content[0], diff);
    const last = toolUpdates(updates, "toolu_write").at(-1).update;
    assert.equal(last.status, "completed");
    assert.deepEqual(last.content[0], diff);
  });
});

test("cancel mid-stream answers cancelled and keeps what streamed", async () => {
  await run({}, async (ctx, { updates }) => {
    const { sessionId } = await newSession(ctx);
    const pending = prompt(ctx, sessionId, "hang");
    while (text(updates, "agent_message_chunk") !== "partial answer ") {
      await new Promise((r) => setImmediate(r));
    }
    await ctx.notify(methods.agent.session.cancel, { sessionId });
    const resp = await pending;
    assert.equal(resp.stopReason, "cancelled");
    assert.equal(text(updates, "agent_message_chunk"), "partial answer ");
  });
});

test("session/load in a new process replays the conversation before answering", async () => {
  const sessionId = await run({}, async (ctx) => {
    const { sessionId } = await newSession(ctx);
    await prompt(ctx, sessionId, "reason");
    return sessionId;
  });
  await run({}, async (ctx, { updates }) => {
    const list = await ctx.request(methods.agent.session.list, { cwd: work });
    assert.ok(list.sessions.some((s) => s.sessionId === sessionId && s.title === "reason"));
    const resp = await ctx.request(methods.agent.session.load, { sessionId, cwd: work, mcpServers: [] });
    assert.equal(resp.modes.currentModeId, "default");
    // Every replayed update arrived before the answer.
    assert.equal(text(updates, "user_message_chunk"), "reason");
    assert.equal(text(updates, "agent_thought_chunk"), "Thinking it over");
    assert.equal(text(updates, "agent_message_chunk"), "Reasoned answer");
    assert.equal((await prompt(ctx, sessionId, "plain")).stopReason, "end_turn");
    assert.match(text(updates, "agent_message_chunk"), /^Reasoned answerThe exact answer/);
  });
});

test("set_mode changes the mode and reports it", async () => {
  await run({}, async (ctx, { updates }) => {
    const { sessionId } = await newSession(ctx);
    await ctx.request(methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" });
    await prompt(ctx, sessionId, "plain"); // its answer comes after the mode update
    assert.ok(updates.some((u) => u.update.sessionUpdate === "current_mode_update" && u.update.currentModeId === "acceptEdits"));
  });
});

test("a client offering fs and terminal: Read sees its buffer, Bash runs in its terminal", async () => {
  const reads = [];
  const terminals = new Map();
  let released = 0;
  const fs = {
    read: ({ path: p }) => {
      reads.push(p);
      return { content: "unsaved editor buffer\n" };
    },
    write: () => ({}),
  };
  const terminal = {
    create: ({ command, args, cwd }) => {
      const id = `term-${terminals.size + 1}`;
      const proc = spawn(command, args ?? [], { cwd });
      const t = { output: "", exit: null };
      proc.stdout.on("data", (d) => (t.output += d));
      proc.stderr.on("data", (d) => (t.output += d));
      t.done = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ exitCode: code, signal })));
      t.proc = proc;
      terminals.set(id, t);
      return { terminalId: id };
    },
    output: async ({ terminalId }) => {
      const t = terminals.get(terminalId);
      const exitStatus = await Promise.race([t.done, Promise.resolve(null)]);
      return { output: t.output, truncated: false, ...(exitStatus ? { exitStatus } : {}) };
    },
    waitForExit: ({ terminalId }) => terminals.get(terminalId).done,
    kill: ({ terminalId }) => {
      terminals.get(terminalId).proc.kill();
      return {};
    },
    release: () => {
      released++;
      return {};
    },
  };
  const caps = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
  await run({ caps, fs, terminal, permission: () => "allow_once" }, async (ctx, { updates }) => {
    const { sessionId } = await newSession(ctx);
    assert.equal((await prompt(ctx, sessionId, "read")).stopReason, "end_turn");
    assert.deepEqual(reads, [path.join(work, "buffer.txt")]);
    assert.match(text(updates, "agent_message_chunk"), /unsaved editor buffer/);
    assert.equal((await prompt(ctx, sessionId, "term")).stopReason, "end_turn");
    const embeds = toolUpdates(updates, "toolu_bash").filter((u) =>
      (u.update.content ?? []).some((c) => c.type === "terminal" && c.terminalId === "term-1"),
    );
    assert.ok(embeds.length > 0, "the Bash call embeds its terminal");
    assert.equal(finalStatus(updates, "toolu_bash"), "completed");
    assert.match(text(updates, "agent_message_chunk"), /tool result: tool-ran/);
    assert.equal(released, 1);
  });
});

test("bad input gets JSON-RPC errors and the agent keeps serving", async () => {
  const child = spawn(bin, ["acp", "--provider", "anthropic", "--model", "claude-sonnet-4-5"], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  const answers = new Map();
  const errors = [];
  let waiters = [];
  child.stdout.on("data", (d) => {
    out += d;
    let i;
    while ((i = out.indexOf("\n")) >= 0) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      const msg = JSON.parse(line); // stdout carries JSON-RPC only
      if (msg.id === null) errors.push(msg.error.code);
      else if (msg.id !== undefined) answers.set(msg.id, msg);
      waiters.forEach((w) => w());
    }
  });
  const until = async (ok) => {
    while (!ok()) await new Promise((r) => waiters.push(r));
    waiters = [];
  };
  const send = (s) => child.stdin.write(s + "\n");
  send("this is not json");
  send("[1,2]");
  send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "no/such/method", params: {} }));
  send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: "one" } }));
  send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: "nope", prompt: [{ type: "text", text: "x" }] } }));
  send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "session/new", params: { cwd: "relative/dir", mcpServers: [] } }));
  send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "initialize", params: { protocolVersion: 1 } }));
  await until(() => answers.size === 5 && errors.length === 2);
  assert.deepEqual(errors.sort(), [-32700, -32600].sort());
  assert.equal(answers.get(1).error.code, -32601);
  assert.equal(answers.get(2).error.code, -32602);
  assert.equal(answers.get(3).error.code, -32002);
  assert.equal(answers.get(4).error.code, -32602);
  assert.equal(answers.get(5).result.protocolVersion, 1);
  assert.equal(await stop(child), 0);
});
