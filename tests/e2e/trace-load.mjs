// Main-thread long tasks while the page loads (CDP Tracing), optionally with CPU throttling
// as Lighthouse's mobile preset does (4×). usage: node tests/e2e/trace-load.mjs [dist] [query] [throttle]
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
const dist = process.argv[2] ?? 'dist';
const query = process.argv[3] ?? 'model=llama-2-7b';
const rate = Number(process.argv[4] ?? 4);
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const server = createServer(async (req, res) => { const p = new URL(req.url, 'http://x').pathname; const f = join(dist, p === '/' ? 'index.html' : p); try { const b = await readFile(f); res.writeHead(200, { 'content-type': types[extname(f)] ?? 'x' }); res.end(b); } catch { res.writeHead(404); res.end(); } });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 412, height: 823 } });
const cdp = await page.context().newCDPSession(page);
await cdp.send('Emulation.setCPUThrottlingRate', { rate });
await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink.user_timing'] });
await page.goto(`http://127.0.0.1:${server.address().port}/?${query}`);
await page.waitForSelector('[data-testid=per-gpu]');
await page.waitForTimeout(3000);
const events = JSON.parse((await browser.stopTracing()).toString()).traceEvents;
const main = events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`);
const onMain = events.filter((e) => main.includes(`${e.pid}:${e.tid}`) && e.ph === 'X' && e.dur);
const tasks = onMain.filter((e) => e.name === 'RunTask').sort((a, b) => a.ts - b.ts);
const t0 = tasks[0]?.ts ?? 0;
let tbt = 0;
for (const t of tasks) {
  if (t.dur < (process.env.MIN_TASK_MS ?? 50) * 1000) continue;
  tbt += t.dur / 1000 - 50;
  const inner = {};
  for (const e of onMain) if (e !== t && e.ts >= t.ts && e.ts + e.dur <= t.ts + t.dur) inner[e.name] = (inner[e.name] ?? 0) + e.dur;
  const top = Object.entries(inner).sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k} ${(v / 1000).toFixed(0)}`).join(', ');
  console.log(`task at ${((t.ts - t0) / 1000).toFixed(0)} ms: ${(t.dur / 1000).toFixed(0)} ms (${top})`);
}
console.log(`sum over long tasks of (duration − 50 ms): ${tbt.toFixed(0)} ms at ${rate}× CPU throttling`);
await browser.close(); server.close();
