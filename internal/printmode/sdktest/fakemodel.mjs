// A fake Anthropic Messages server for the SDK tests: each POST /v1/messages
// gets the next scripted answer, streamed as Anthropic streams it, and every
// request body is kept so that a test can check what the model was sent.
import http from 'node:http';

// Answers:
//   {text: 'Hello'}                       a text answer (end_turn)
//   {tool: 'Bash', input: {command: 'ls'}} a tool call (tool_use)
//   {hang: 'partial'}                     text, then the stream stays open
//   {status: 529}                         an HTTP error (retry-after-ms: 5)
//   {status: 400, error: {type, message}} an HTTP error with that error body
//   {text: 'Hal', fail: {type, message}}  text, then an error event ends the stream
//   {text: 'Hal', drop: true}             text, then the connection breaks
//   (request) => answer                   decided from the request body
export async function startFakeModel(answers) {
  const requests = [];
  const headers = []; // each request's headers, beside requests
  const open = new Set();
  let n = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const url = new URL(req.url, 'http://x');
      if (req.method !== 'POST' || url.pathname !== '/v1/messages') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `fake model: no ${req.method} ${url.pathname}` } }));
        return;
      }
      const parsed = JSON.parse(body);
      requests.push(parsed);
      headers.push(req.headers);
      let a = answers[n++];
      if (typeof a === 'function') a = a(parsed);
      if (!a) {
        res.writeHead(418, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: `fake model: no answer scripted for request ${n}` } }));
        return;
      }
      if (a.status) {
        res.writeHead(a.status, { 'content-type': 'application/json', 'retry-after-ms': '5' });
        res.end(JSON.stringify({ type: 'error', error: a.error ?? { type: a.status === 529 ? 'overloaded_error' : 'api_error', message: 'fake model: busy' } }));
        return;
      }
      const id = `msg_fake_${String(n).padStart(4, '0')}`;
      if (!parsed.stream) {
        // A non-streaming request (a client's fallback after a broken
        // stream) gets the answer whole, or its failure as an HTTP error.
        if (a.fail || a.drop) {
          const error = a.fail ?? { type: 'api_error', message: 'fake model: connection lost' };
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ type: 'error', error }));
          return;
        }
        const content = a.tool
          ? [{ type: 'tool_use', id: `toolu_${id.slice(4)}`, name: a.tool, input: a.input ?? {} }]
          : [{ type: 'text', text: a.text ?? a.hang }];
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model: parsed.model, content, stop_reason: a.tool ? 'tool_use' : 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 5 } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      open.add(res);
      res.on('close', () => open.delete(res));
      const send = (ev) => res.write(`event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`);
      send({ type: 'message_start', message: { id, type: 'message', role: 'assistant', model: parsed.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } });
      let stop = 'end_turn';
      if (a.tool) {
        stop = 'tool_use';
        send({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: `toolu_${id.slice(4)}`, name: a.tool, input: {} } });
        const input = JSON.stringify(a.input ?? {});
        for (let i = 0; i < input.length; i += 8) {
          send({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: input.slice(i, i + 8) } });
        }
      } else {
        const text = a.text ?? a.hang;
        send({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
        for (let i = 0; i < text.length; i += 8) {
          send({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: text.slice(i, i + 8) } });
        }
        if (a.hang !== undefined) return; // the stream stays open
        if (a.fail) {
          send({ type: 'error', error: a.fail });
          res.end();
          return;
        }
        if (a.drop) {
          // An SSE comment whose write, once flushed, breaks the connection.
          res.write(':\n\n', () => res.socket.destroy());
          return;
        }
      }
      send({ type: 'content_block_stop', index: 0 });
      send({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
      send({ type: 'message_stop' });
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    headers,
    close: () => new Promise((resolve) => {
      for (const r of open) r.destroy();
      server.close(resolve);
    }),
  };
}
