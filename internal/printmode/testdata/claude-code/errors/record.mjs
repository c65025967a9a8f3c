// record.mjs SCENARIO FORMAT [claude args...]: runs Claude Code (BIN, or the reference install) against the fake model answering as scenarios.json's SCENARIO says; prints its stdout, stderr and exit code as JSON (normalise.py turns three formats' runs into one fixture).
import { spawn } from 'node:child_process';
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { startFakeModel } from '../../../sdktest/fakemodel.mjs';
const bin = process.env.BIN || '/work/ref/cc/node_modules/.bin/claude';
const [scen, format, ...extra] = process.argv.slice(2);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rec-'));
const cwd = path.join(root, 'work'); fs.mkdirSync(cwd);
// $CWD in a scenario is the working directory (tools want absolute paths).
const scenarios = JSON.parse(fs.readFileSync(new URL('scenarios.json', import.meta.url),'utf8').replaceAll('$CWD', cwd));
const answers = scenarios[scen];
const model = await startFakeModel(answers);
fs.writeFileSync(path.join(cwd,'hello.txt'),'hello\nworld\n');
// PROJECT_MCP: a .mcp.json for the working directory (project MCP servers).
if (process.env.PROJECT_MCP) fs.writeFileSync(path.join(cwd, '.mcp.json'), process.env.PROJECT_MCP);
const env = { PATH: process.env.PATH, HOME: root, SLUICE_HOME: path.join(root,'sluice'), SLUICE_CONFIG: path.join(root,'none.json'),
  ANTHROPIC_API_KEY: 'x', ANTHROPIC_BASE_URL: model.url, DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', IS_SANDBOX: '1',
  CLAUDE_CODE_MAX_RETRIES: process.env.RETRIES ?? '2', SLUICE_STREAM_MAX_RETRIES: '2', API_TIMEOUT_MS: '20000' };
const args = ['-p', process.env.PROMPT || 'say hi', '--output-format', format, ...(format==='stream-json'?['--verbose']:[]), '--model', 'claude-sonnet-4-5', ...extra];
const p = spawn(bin, args, { cwd, env, stdio: ['ignore','pipe','pipe'] });
let out='', err='';
p.stdout.on('data', d=>out+=d); p.stderr.on('data', d=>err+=d);
const code = await new Promise(r=>p.on('close', r));
await model.close();
console.log(JSON.stringify({args: args.slice(2), stdout: out, stderr: err, code, requests: model.requests.length, reqs: model.requests.map(r=>({model:r.model,stream:r.stream,max_tokens:r.max_tokens,nmsg:r.messages.length,ntools:(r.tools||[]).length,thinking:r.thinking, last: JSON.stringify(r.messages.at(-1)).slice(0,200)})), hdrs: model.headers.map(h=>h['x-stainless-retry-count'])}));
fs.rmSync(root,{recursive:true,force:true});
