import json,re,sys,os
# normalise.py CLASS SCENARIO OUTDIR : merges rec/SCEN.{stream-json,json,text}.json into one fixture
cls, scen, out = sys.argv[1:4]
fx = {"class": cls, "claude_code": "2.1.328", "fake_model": json.load(open('scenarios.json')).get(scen)}
def norm(s):
    s = re.sub(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', '00000000-0000-0000-0000-000000000000', s)
    s = re.sub(r'127\.0\.0\.1:\d+', '127.0.0.1:PORT', s)
    s = re.sub(r'/tmp/rec-[A-Za-z0-9]+', '/home/user', s)
    s = re.sub(r'"timestamp":"[^"]*"', '"timestamp":"2026-01-01T00:00:00.000Z"', s)
    for k in ['duration_ms','duration_api_ms','ttft_ms','ttft_stream_ms','time_to_request_ms','first_content_frame_ms','retry_delay_ms']:
        s = re.sub(r'"%s":\d+' % k, '"%s":0' % k, s)
    return s
for f in ['stream-json','json','text']:
    p = f'rec/{scen}.{f}.json'
    if not os.path.exists(p): continue
    d = json.load(open(p))
    fx.setdefault('claude_args', [a for a in d.get('args', ['--input-format','stream-json','then on stdin: a user message, an interrupt control_request once the answer streams, a second user message']) if a not in ('--output-format', f, '--verbose')])
    o = norm(d['stdout'])
    key = f.replace('-','_')
    if f == 'text':
        fx['text'] = {"exit_code": d['code'], "stdout": o, "stderr": d['stderr']}
    else:
        ls = [json.loads(l) for l in o.splitlines() if l.strip()]
        ls = [l for l in ls if not (l.get('type')=='system' and l.get('subtype') in ('init','status'))]
        fx[key] = {"exit_code": d['code'], "lines": ls}
json.dump(fx, open(os.path.join(out, cls+'.json'),'w'), indent=1, ensure_ascii=False)
