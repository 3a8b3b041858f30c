// Main-thread trace of input changes on memfit (CDP Tracing): time by trace event name
// (style, layout, paint, script, parse...), per change; then the tasks of one change in
// order, each with its largest nested events (G = which group of tasks, default 4; K = how
// many nested events, default 7). usage: [G=4] [K=7] node tests/e2e/trace.mjs [dist] [query] [input id]
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
const dist = process.argv[2] ?? 'dist';
const query = process.argv[3] ?? 'model=llama-2-7b&zero=3&gpus_per_node=8';
const inputId = process.argv[4] ?? 'f-seq';
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const server = createServer(async (req, res) => { const p = new URL(req.url, 'http://x').pathname; const f = join(dist, p === '/' ? 'index.html' : p); try { const b = await readFile(f); res.writeHead(200, { 'content-type': types[extname(f)] ?? 'x' }); res.end(b); } catch { res.writeHead(404); res.end(); } });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
await page.goto(`http://127.0.0.1:${server.address().port}/?${query}`);
await page.waitForSelector('[data-testid=per-gpu]');
await page.waitForTimeout(1500);
const N = 10;
await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink.user_timing', 'v8', 'disabled-by-default-v8.gc', 'blink', 'loading', 'navigation'] });
for (let i = 0; i < N; i++) {
  await page.evaluate(([id, v]) => { const el = document.getElementById(id); el.value = String(v); el.dispatchEvent(new Event('input', { bubbles: true })); }, [inputId, 1000 + 37 * (i + 1)]);
  await page.waitForTimeout(400);
}
const buf = await browser.stopTracing();
const events = JSON.parse(buf.toString()).traceEvents;
// The renderer main thread: the thread named CrRendererMain.
const main = events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`);
const onMain = events.filter((e) => main.includes(`${e.pid}:${e.tid}`) && e.ph === 'X' && e.dur);
const tasks = onMain.filter((e) => e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask');
const taskMs = tasks.reduce((a, e) => a + e.dur, 0) / 1000;
// Self time per event name, nested events subtracted.
const by = {};
const sorted = onMain.slice().sort((a, b) => a.ts - b.ts || b.dur - a.dur);
const stack = [];
for (const e of sorted) {
  while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
  if (stack.length) by[stack[stack.length - 1].name] = (by[stack[stack.length - 1].name] ?? 0) - e.dur;
  by[e.name] = (by[e.name] ?? 0) + e.dur;
  stack.push(e);
}
console.log(`main-thread tasks: ${(taskMs / N).toFixed(1)} ms per change (${N} changes of #${inputId})`);
for (const [k, v] of Object.entries(by).sort((a, b) => b[1] - a[1]).slice(0, 18)) console.log((v / 1000 / N).toFixed(2).padStart(8), 'ms/change', k);
const top = onMain.filter((e) => e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask' || e.name === 'FunctionCall' || e.name === 'v8.run' || e.name === 'EventDispatch').sort((a, b) => a.ts - b.ts);
const outer = []; for (const e of top) { const l = outer[outer.length - 1]; if (l && e.ts < l.ts + l.dur) continue; outer.push(e); }
const groups = []; for (const e of outer) { const g = groups[groups.length - 1]; if (g && e.ts - g.end < 150000) { g.items.push(e); g.end = Math.max(g.end, e.ts + e.dur); } else groups.push({ items: [e], end: e.ts + e.dur }); }
console.log('groups', groups.length, groups.map((g) => (g.items.reduce((a, e) => a + e.dur, 0) / 1000).toFixed(1)).join(' '));
const g = groups[Number(process.env.G ?? 4)]; const c0 = g.items[0].ts;
for (const t of g.items.filter((e) => e.dur > 200)) { const kids = {}; for (const c of onMain) if (c !== t && c.ts >= t.ts && c.ts + c.dur <= t.ts + t.dur && c.name !== 'RunTask') kids[c.name] = (kids[c.name] ?? 0) + c.dur; console.log(((t.ts - c0) / 1000).toFixed(1).padStart(7), 'ms', t.name, (t.dur / 1000).toFixed(2), Object.entries(kids).sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.K ?? 7)).map(([k, v]) => k + ' ' + (v / 1000).toFixed(2)).join(', ')); }
await browser.close(); server.close();
