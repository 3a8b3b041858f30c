// CPU profile of 10 input changes on memfit (CDP Profiler): inclusive time by function
// (lines "I <ms> <function>", each function counted once per sample), then self time by
// function, and the size of every chart SVG. usage: node tests/e2e/profile.mjs [dist]
// (dist-prof from scripts/profile-build.sh names the wasm functions; a -Oz -g build shares
// bodies between identical functions, so a name can stand for several)
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const server = createServer(async (req, res) => { const p = new URL(req.url, 'http://x').pathname; const f = join(process.argv[2] ?? 'dist', p === '/' ? 'index.html' : p); try { const b = await readFile(f); res.writeHead(200, { 'content-type': types[extname(f)] ?? 'x' }); res.end(b); } catch { res.writeHead(404); res.end(); } });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
const cdp = await page.context().newCDPSession(page);
await page.goto(`http://127.0.0.1:${server.address().port}/?model=llama-2-7b&zero=3&gpus_per_node=8`);
await page.waitForSelector('[data-testid=per-gpu]');
await page.waitForTimeout(1500);
console.log(await page.evaluate(() => [...document.querySelectorAll('svg')].map((x) => `${x.closest('section')?.dataset.testid ?? x.closest('section')?.className}: ${x.outerHTML.length} chars, ${x.querySelectorAll('*').length} elements`).join('\n')));
await cdp.send('Profiler.enable');
await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
await cdp.send('Profiler.start');
for (let i = 0; i < 10; i++) {
  await page.evaluate((v) => { const el = document.getElementById('f-seq'); el.value = String(v); el.dispatchEvent(new Event('input', { bubbles: true })); }, 1000 + 37 * (i + 1));
  await page.waitForTimeout(400);
}
const { profile } = await cdp.send('Profiler.stop');
const dt = {}; const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const total = {};
profile.samples.forEach((id, k) => { const n = byId.get(id); const name = n.callFrame.functionName || `(${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber})`; total[name] = (total[name] ?? 0) + (profile.timeDeltas[k + 1] ?? 0) / 1000; });
const parent = new Map(); for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id); const incl = {}; profile.samples.forEach((id, k) => { const dtm = (profile.timeDeltas[k + 1] ?? 0) / 1000; const seen = new Set(); let cur = id; while (cur !== undefined) { const n = byId.get(cur); const nm = n.callFrame.functionName.replace(/::h[0-9a-f]{16}$/, "").replace(/\[[0-9a-f]+\]/g, "").slice(0, 140); if (!seen.has(nm)) { seen.add(nm); incl[nm] = (incl[nm] ?? 0) + dtm; } cur = parent.get(cur); } }); for (const [k, v] of Object.entries(incl).filter(([k]) => k && !/^\(/.test(k)).sort((a, b) => b[1] - a[1]).slice(0, 90)) console.log("I", v.toFixed(1).padStart(8), k);
const rows = Object.entries(total).filter(([k]) => k !== '(idle)' && k !== '(program)').sort((a, b) => b[1] - a[1]).slice(0, 25);
for (const [k, v] of rows) console.log(v.toFixed(1).padStart(8), 'ms', k);
console.log('idle', (total['(idle)'] ?? 0).toFixed(0), 'program', (total['(program)'] ?? 0).toFixed(0));
await browser.close(); server.close();
