import { spawn } from 'node:child_process';
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { startFakeModel } from '../../../sdktest/fakemodel.mjs';
const bin = process.env.BIN || '/work/ref/cc/node_modules/.bin/claude';
const model = await startFakeModel([{hang:'Thinking about it'},{text:'Back again.'}]);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rec-'));
const cwd = path.join(root, 'work'); fs.mkdirSync(cwd);
const env = { PATH: process.env.PATH, HOME: root, SLUICE_HOME: path.join(root,'sluice'), SLUICE_CONFIG: path.join(root,'none.json'),
  ANTHROPIC_API_KEY: 'x', ANTHROPIC_BASE_URL: model.url, DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', IS_SANDBOX: '1', CLAUDE_CODE_MAX_RETRIES: '2' };
const args = ['-p', '--input-format','stream-json','--output-format','stream-json','--verbose','--model','claude-sonnet-4-5'];
const p = spawn(bin, args, { cwd, env });
let out='', err='';
p.stderr.on('data', d=>err+=d);
let sent=false;
p.stdout.on('data', d=>{ out+=d;
  if (!sent && out.includes('"type":"stream_event"') || (!sent && model.requests.length>0 && out.includes('init'))) {} });
p.stdin.write(JSON.stringify({type:'user',message:{role:'user',content:'think'},parent_tool_use_id:null,session_id:''})+'\n');
const iv = setInterval(()=>{ if (!sent && model.requests.length>0) { sent=true; setTimeout(()=>{
  p.stdin.write(JSON.stringify({type:'control_request',request_id:'r1',request:{subtype:'interrupt'}})+'\n');
  setTimeout(()=>{p.stdin.write(JSON.stringify({type:'user',message:{role:'user',content:'again'},parent_tool_use_id:null,session_id:''})+'\n'); setTimeout(()=>p.stdin.end(), 3000);}, 2000);
 }, 1500);} }, 50);
const code = await new Promise(r=>p.on('close', r));
clearInterval(iv);
await model.close();
console.log(JSON.stringify({stdout: out, stderr: err, code, requests: model.requests.length}));
