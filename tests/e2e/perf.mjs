// Page performance, measured the same way for memfit and (when given) gpu_poor.
// Builds nothing: serves dist/ at / and a gpu_poor build at /gpu_poor/.
//
// usage: node tests/e2e/perf.mjs [dist] [gpu_poor build dir] [--rounds R] [--loads L] [--changes C]
//                                [--before <older memfit dist>] [--scrolled] [--query <link>]
//
// For each page, R interleaved rounds × L cold loads (a fresh browser context each) × C input
// changes; prints the median of each figure:
//   nav → first result    navigationStart → the first result in the DOM (memfit: the per-GPU
//                         verdict; gpu_poor computes on a button click, so its "first result" is
//                         when the page is ready to compute: the form rendered and its model list loaded)
//   CPU to first + 500 ms main-thread task time (CDP Performance.getMetrics TaskDuration) from
//                         navigation to the first result + 500 ms
//   input → result        in-page time from changing an input (memfit: the sequence length;
//                         gpu_poor: the batch size, then its "Find Memory requirement" click) to
//                         the result's text changing (MutationObserver)
//   CPU per change        main-thread task time from the change until 400 ms after it (everything
//                         the change causes: memfit's chart and whatever else is mounted; the step
//                         time, the timeline and the layout sweep only with --scrolled, since they
//                         are in the second module)
//   shipped gzip -9       the .wasm/.js/.css files the page loads at start, gzip -9 (memfit's second
//                         module, the panels below the chart, loads when the reader nears
//                         them: printed apart, "later"; the fewest-GPU search's module, which its
//                         worker fetches after the first result is painted, printed apart too; the
//                         op-level allocator's module and its templates, fetched when a run reads
//                         them, printed apart; the importer's module, fetched on the first import
//                         of a config.json, is counted in none)
// Absolute times drift between runs on these machines; compare pages within one run.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile, readdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { extname, join, normalize } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = Number(args[i + 1]); args.splice(i, 2); return v; };
const ROUNDS = opt('--rounds', 3), LOADS = opt('--loads', 5), CHANGES = opt('--changes', 20);
// --before <dist>: an older memfit build, measured in the same run (served under /before/).
const before = (() => { const i = args.indexOf('--before'); if (i < 0) return null; const v = args[i + 1]; args.splice(i, 2); return v; })();
// --scrolled: before the changes, scroll memfit's first lazy sentinel into view, wait for the
// second module's panels (the fit map), and scroll back to the top, so each change also
// pays for the panels below the chart (a reader who has scrolled once).
// --query <q>: memfit's link instead of the default (a single-GPU framework=pytorch run makes
// every sequence change rebuild and replay its op-level allocation stream).
const query = (() => { const i = args.indexOf('--query'); if (i < 0) return 'model=llama-2-7b&zero=3&gpus_per_node=8'; const v = args[i + 1]; args.splice(i, 2); return v; })();
const scrolled = (() => { const i = args.indexOf('--scrolled'); if (i < 0) return false; args.splice(i, 1); return true; })();
const dist = args[0] ?? 'dist';
const gpuPoor = args[1];

const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon' };
const server = createServer(async (req, res) => {
  let path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
  let root = dist;
  if (gpuPoor && (path === '/gpu_poor' || path.startsWith('/gpu_poor/'))) { root = gpuPoor; path = path.slice('/gpu_poor'.length) || '/'; }
  if (before && path.startsWith('/before/')) { root = before; path = path.slice('/before'.length); }
  const file = join(root, path === '/' ? 'index.html' : path);
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch { res.writeHead(404); res.end('not found'); }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-extensions'],
});

async function gzipOf(dir, match) {
  let total = 0;
  const walk = async (d) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      // The gzip CLI, as scripts/test.sh counts (node's zlib compresses a few % less).
      else if (match(e.name)) total += execFileSync('gzip', ['-9c', p], { maxBuffer: 1 << 30 }).length;
    }
  };
  await walk(dir);
  return total;
}

// Records, in the page, when `sel` first has text and every later change of its text.
const observer = (sel) => `
  window.__perf = { first: null, changes: [] };
  const arm = () => {
    const el = document.querySelector(${JSON.stringify(sel)});
    if (!el || !el.textContent.trim()) return false;
    window.__perf.first = performance.now();
    window.__perf.el = el;
    new MutationObserver(() => window.__perf.changes.push([performance.now(), el.textContent.trim()]))
      .observe(el, { childList: true, characterData: true, subtree: true });
    return true;
  };
  const boot = new MutationObserver(() => { if (arm()) boot.disconnect(); });
  document.addEventListener('DOMContentLoaded', () => { if (!arm()) boot.observe(document.body, { childList: true, subtree: true }); });
`;

const memfit = (name, root, prefix) => ({
  name,
  observe: true,
  url: `${origin}${prefix}/?${query}`,
  result: '[data-testid=per-gpu]',
  async ready(page) { await page.waitForFunction(() => window.__perf.first !== null); },
  // Sequence length 1037, 1074, … (never the 4,096 it starts at: every value changes the figure).
  async change(page, i) {
    return page.evaluate(async (v) => {
      const el = document.getElementById('f-seq');
      const n = window.__perf.changes.length;
      const t0 = performance.now();
      el.value = String(v);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      while (window.__perf.changes.length === n) {
        if (performance.now() - t0 > 5000) return `no change: ${document.querySelector('[data-testid=per-gpu]')?.textContent} seq=${el.value} connected=${document.querySelector('[data-testid=per-gpu]') === window.__perf.el}`;
        await new Promise((r) => setTimeout(r, 0));
      }
      return window.__perf.changes[n][0] - t0;
    }, 1000 + 37 * (i + 1));
  },
  async reveal(page) {
    await page.locator('.lazy-sentinel').first().scrollIntoViewIfNeeded();
    // The fit map: in the second module before and after the step time and the timeline
    // joined it (issue 39), so a build of either kind waits until that module is mounted.
    await page.getByTestId('explorer').waitFor({ state: 'attached' });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(1000);
  },
  // memfit-import (the config.json importer's parser) loads on the first import only.
  // memfit-search (the fewest-GPU search) loads in its worker after the first result is painted.
  // memfit-replay (the op-level allocator) and op_templates.txt load when a run reads the templates.
  // memfit-modes (the ledgers of inference, serving and the other tools' conventions) loads when a scenario reads one.
  files: () => gzipOf(root, (n) => /\.(wasm|js|css)$/.test(n) && !/^memfit-(below|import|search|replay|modes)/.test(n)),
  serve: () => gzipOf(root, (n) => n.startsWith('memfit-modes') && /\.(wasm|js)$/.test(n)),
  templates: () => gzipOf(root, (n) => (n.startsWith('memfit-replay') && /\.(wasm|js)$/.test(n)) || n === 'op_templates.txt'),
  later: () => gzipOf(root, (n) => n.startsWith('memfit-below') && /\.(wasm|js)$/.test(n)),
  search: () => gzipOf(root, (n) => n.startsWith('memfit-search') && /\.(wasm|js)$/.test(n)),
});
const pages = [memfit('memfit', dist, '')];
if (before) pages.unshift(memfit('memfit before', before, '/before'));
if (gpuPoor) pages.push({
  name: 'gpu_poor',
  url: `${origin}/gpu_poor/`,
  result: 'table tr.bg-blue-100 td:nth-child(2) span',
  async ready(page) {
    // Ready to compute: the form is there and the model list has loaded (its suggestions work).
    const model = page.getByPlaceholder('e.g. meta-llama/Llama-2-7b-hf');
    await model.waitFor();
    await model.fill('meta-llama/Llama-2-7b-hf');
    const first = await page.evaluate(() => performance.now());
    const q = page.getByPlaceholder('?');
    await q.nth(0).fill('512');
    await q.nth(1).fill('512');
    await page.getByText('Find Memory requirement').click();
    await page.waitForFunction(() => document.querySelector('table tr.bg-blue-100 td:nth-child(2) span')?.textContent.trim());
    await page.evaluate(({ sel, t }) => {
      const el = document.querySelector(sel);
      window.__perf = { first: t, changes: [] };
      new MutationObserver(() => window.__perf.changes.push([performance.now(), el.textContent.trim()]))
        .observe(el, { childList: true, characterData: true, subtree: true });
    }, { sel: 'table tr.bg-blue-100 td:nth-child(2) span', t: first });
  },
  // Batch size 2, 3, … then the button (gpu_poor computes on the click).
  async change(page, i) {
    return page.evaluate(async (v) => {
      const input = [...document.querySelectorAll('input')].find((x) => x.placeholder === '1');
      const button = [...document.querySelectorAll('button')].find((b) => b.textContent.includes('Find Memory requirement'));
      const n = window.__perf.changes.length;
      const t0 = performance.now();
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(input, String(v));
      input.dispatchEvent(new Event('input', { bubbles: true }));
      button.click();
      while (window.__perf.changes.length === n) await new Promise((r) => setTimeout(r, 0));
      return window.__perf.changes[n][0] - t0;
    }, i + 2);
  },
  files: () => gzipOf(join(gpuPoor, 'static'), (n) => /\.(js|css)$/.test(n)),
});

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN; };
const results = Object.fromEntries(pages.map((p) => [p.name, { first: [], cpuFirst: [], input: [], cpuChange: [] }]));

async function taskMs(cdp) {
  const { metrics } = await cdp.send('Performance.getMetrics');
  return 1000 * metrics.find((m) => m.name === 'TaskDuration').value;
}

for (let round = 0; round < ROUNDS; round++) {
  for (const p of pages) {
    for (let load = 0; load < LOADS; load++) {
      const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send('Performance.enable', { timeDomain: 'timeTicks' });
      if (p.observe) await page.addInitScript(observer(p.result));
      await page.goto(p.url);
      await p.ready(page);
      const first = await page.evaluate(() => window.__perf.first);
      const r = results[p.name];
      r.first.push(first);
      const wait = Math.max(0, first + 500 - (await page.evaluate(() => performance.now())));
      await page.waitForTimeout(wait);
      r.cpuFirst.push(await taskMs(cdp));
      if (scrolled && p.reveal) await p.reveal(page);
      await page.waitForTimeout(300);
      for (let i = 0; i < CHANGES; i++) {
        const before = await taskMs(cdp);
        const dt = await p.change(page, i + load * CHANGES);
        if (typeof dt !== 'number') throw new Error(`${p.name}: ${dt}`);
        r.input.push(dt);
        await page.waitForTimeout(400);
        r.cpuChange.push((await taskMs(cdp)) - before);
      }
      await context.close();
    }
  }
}

const rows = [
  ['input change → result updated (ms)', 'input'],
  ['main-thread CPU per input change (ms)', 'cpuChange'],
  ['main-thread CPU, navigation → first result + 500 ms (ms)', 'cpuFirst'],
  ['navigation → first result (ms)', 'first'],
];
const sizes = Object.fromEntries(await Promise.all(pages.map(async (p) => [p.name, await p.files()])));
console.log(`perf: ${ROUNDS} rounds × ${LOADS} cold loads × ${CHANGES} changes${scrolled ? ', the second module mounted first (--scrolled)' : ''}, medians (${new Date().toISOString().slice(0, 10)})`);
console.log(`| metric | ${pages.map((p) => p.name).join(' | ')} |`);
console.log(`|---|${pages.map(() => '---').join('|')}|`);
for (const [label, key] of rows) {
  console.log(`| ${label} | ${pages.map((p) => median(results[p.name][key]).toFixed(1)).join(' | ')} |`);
}
console.log(`| shipped code at start, gzip -9 (bytes) | ${pages.map((p) => sizes[p.name]).join(' | ')} |`);
const later = Object.fromEntries(await Promise.all(pages.map(async (p) => [p.name, p.later ? await p.later() : 0])));
console.log(`| later, on approach (the panels below the chart), gzip -9 (bytes) | ${pages.map((p) => later[p.name] || '—').join(' | ')} |`);
const search = Object.fromEntries(await Promise.all(pages.map(async (p) => [p.name, p.search ? await p.search() : 0])));
console.log(`| after the first result, the fewest-GPU search's module, gzip -9 (bytes) | ${pages.map((p) => search[p.name] || '—').join(' | ')} |`);
const templates = Object.fromEntries(await Promise.all(pages.map(async (p) => [p.name, p.templates ? await p.templates() : 0])));
console.log(`| when a run reads the op templates: the allocator's module and the templates, gzip -9 (bytes) | ${pages.map((p) => templates[p.name] || '—').join(' | ')} |`);
const serve = Object.fromEntries(await Promise.all(pages.map(async (p) => [p.name, p.serve ? await p.serve() : 0])));
console.log(`| in inference, serving or another tool's convention: their module, gzip -9 (bytes) | ${pages.map((p) => serve[p.name] || '—').join(' | ')} |`);
await browser.close();
server.close();
