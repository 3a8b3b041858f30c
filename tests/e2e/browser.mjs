// Browser tests: the release build in dist/ served locally, driven in Debian's
// headless Chromium through playwright-core. Prints "N passed, N failed".
//
// usage: node tests/e2e/browser.mjs <dist dir> <memfit CLI binary> [<panic-test dist dir>]
// The server serves <dist> at / and at /memfit/ (a sub-path, as a static host would),
// and the panic-test build at /panic/.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile, mkdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { extname, join, normalize } from 'node:path';

const dist = process.argv[2] ?? 'dist';
const cli = process.argv[3] ?? 'target/debug/memfit';
const panicDist = process.argv[4];
const outDir = 'tests/e2e/out';
await mkdir(outDir, { recursive: true });

const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };
const server = createServer({ maxHeaderSize: 4 << 20 }, async (req, res) => {
  let path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
  let root = dist;
  for (const [prefix, dir] of [['/memfit/', dist], ['/panic/', panicDist]]) {
    if (dir && path.startsWith(prefix)) { root = dir; path = '/' + path.slice(prefix.length); }
  }
  const file = join(root, path === '/' ? 'index.html' : path);
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404); res.end('not found');
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run', '--disable-extensions'],
});

let passed = 0, failed = 0;
const timings = [];
function check(cond, msg) { if (!cond) throw new Error(msg); }
function cliJson(query) { return JSON.parse(execFileSync(cli, [query], { encoding: 'utf8' })); }
function cliExplore(query, limit = 50) { return JSON.parse(execFileSync(cli, ['--explore', '--limit', String(limit), query], { encoding: 'utf8' })); }
function gib(bytes) { return `${(bytes / 2 ** 30).toFixed(2)} GiB`; }

async function withPage(width, fn, opts = {}) {
  const context = await browser.newContext({ viewport: { width, height: 1000 }, colorScheme: opts.colorScheme ?? 'light' });
  if (opts.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  const dialogs = [];
  page.on('pageerror', (e) => { if (!(opts.allowPageError ?? /^$/).test(e.message)) errors.push(`pageerror: ${e.message}`); });
  // The browser logs failed resource loads itself; the mocked Hub's 401 is expected there.
  page.on('console', (m) => {
    const expected = /favicon/.test(m.text()) || (opts.allow && /Failed to load resource: .* 401/.test(m.text())) || (opts.allowConsole ?? /^$/).test(m.text());
    if (m.type() === 'error' && !expected) errors.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => requests.push(r.url()));
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  try {
    await fn(page, { errors, requests, dialogs });
    check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
    const foreign = requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith(`blob:${origin}`) && !(opts.allow ?? []).some((a) => u.startsWith(a)));
    check(foreign.length === 0, `requests outside the page's origin: ${foreign.join(', ')}`);
  } finally {
    await context.close();
  }
}

async function test(name, width, fn, opts) {
  // MEMFIT_ONLY=<text>: run only the tests whose name contains it (while iterating).
  if (process.env.MEMFIT_ONLY && !name.includes(process.env.MEMFIT_ONLY)) return;
  try {
    await withPage(width, fn, opts);
    passed++; console.log(`ok   - ${name}`);
  } catch (e) {
    failed++; console.log(`FAIL - ${name}: ${e.message.length > 600 ? e.message.slice(0, 600) + ' …' : e.message}`); if (process.env.MEMFIT_STACK) console.log(e.stack);
  }
}

async function open(page, query) {
  const t0 = Date.now();
  await page.goto(`${origin}/?${query}`);
  // A run that reads the op templates holds its verdict (aria-busy) until they have loaded.
  await page.waitForSelector('[data-testid=verdict]:not([aria-busy])');
  await page.waitForSelector('[data-testid=per-gpu]');
  timings.push(['load to verdict', Date.now() - t0]);
  await reveal(page);
}

// The fewest-GPU line answers the current scenario: not busy (while the worker searches,
// the line keeps the previous answer and is aria-busy) and not "searching…".
async function minGpusAnswered(page) {
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid=min-gpus]');
    return el && !el.hasAttribute('aria-busy') && !el.textContent.includes('searching');
  });
}

// The panels below the chart are built when the reader scrolls near them, in two groups
// (the step time, timeline, explorer and explanation, then the comparison, tour, accuracy
// and exports): scroll there once, as a reader would, then back to the top.
// Panels painted a frame after others (the step time, the timeline) can push a sentinel
// back below the screen after the scroll: scroll again until the panels are there.
async function reveal(page) {
  const near = async (sentinel, testid) => {
    for (let i = 0; i < 10; i++) {
      await page.locator('.lazy-sentinel')[sentinel]().scrollIntoViewIfNeeded();
      try { await page.getByTestId(testid).waitFor({ state: 'attached', timeout: 3000 }); return; } catch { /* moved: again */ }
    }
    await page.getByTestId(testid).waitFor({ state: 'attached' });
  };
  await near('first', 'ledger');
  await near('last', 'learn');
  await page.evaluate(() => window.scrollTo(0, 0));
}

await test('shared URL: page total equals the CLI total for the same query', 1440, async (page) => {
  const q = 'model=llama-2-7b&mode=train&zero=3&gpus_per_node=8';
  await open(page, q);
  const want = cliJson(q);
  const el = page.getByTestId('per-gpu');
  check(await el.getAttribute('data-bytes') === String(want.per_gpu_bytes), `data-bytes ${await el.getAttribute('data-bytes')} != CLI ${want.per_gpu_bytes}`);
  check((await el.textContent()).trim() === gib(want.per_gpu_bytes), `shown ${await el.textContent()} != ${gib(want.per_gpu_bytes)}`);
  check(new URL(page.url()).search === `?${want.query}`, `URL ${page.url()} is not the canonical ${want.query}`);
  check(await page.locator('#f-zero').inputValue() === '3', 'ZeRO select does not show 3');
  check(await page.locator('#f-gpus_per_node').inputValue() === '8', 'GPUs/node does not show 8');
  await page.screenshot({ path: `${outDir}/page-1440.png`, fullPage: true });
});

await test('step-time panel: the CLI\'s time=1 step, its parts adding up to it; a change of recomputation moves it; gone in inference', 1440, async (page) => {
  const q = 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8&tp=8&zero=1&recompute=full';
  await open(page, q);
  const head = page.getByTestId('step-headline');
  await head.waitFor();
  const want = cliJson(`${q}&time=1`).time;
  const shown = Number(await head.getAttribute('data-step-s'));
  check(Math.abs(shown / want.step_s - 1) < 1e-9, `panel step ${shown} s != CLI ${want.step_s} s`);
  const text = await head.textContent();
  check(text.includes(`${Math.round(want.tokens_per_s_per_gpu).toLocaleString('en-US')} tokens/s per GPU`), `headline "${text}" lacks the CLI's tokens/s per GPU ${want.tokens_per_s_per_gpu}`);
  check(text.includes(`MFU ${Math.round(want.mfu * 100)} %`), `headline "${text}" lacks MFU ${want.mfu}`);
  const band = await page.getByTestId('step-band').textContent();
  const ratios = [...band.matchAll(/([\d.]+)–([\d.]+)× its step/g)][0];
  check(ratios && band.includes(`about ${(want.step_s * Number(ratios[1])).toFixed(2)} s to ${(want.step_s * Number(ratios[2])).toFixed(2)} s`), `band "${band}" is not the held-out ratios × the CLI's step`);
  // What the figure rests on, as the CLI says it: the default H100 takes the measured GEMM table.
  const basis = await page.getByTestId('step-basis').textContent();
  check(want.gemm_rates === 'measured' && basis.startsWith('GEMMs at the rates measured on an H200'), `basis "${basis}" for gemm_rates ${want.gemm_rates}`);
  const parts = await page.getByTestId('step-part').count();
  check(parts >= 3, `${parts} parts`);
  const b = want.breakdown;
  const sum = b.compute_s + b.recompute_s + b.exposed_comm_s + b.contention_s + b.bubble_s + b.optimizer_s + b.offload_s;
  check(Math.abs(sum / want.step_s - 1) < 1e-9, `the CLI's parts add up to ${sum}, not ${want.step_s}`);
  await page.getByTestId('steptime').screenshot({ path: `${outDir}/steptime.png` });
  await page.locator('#f-recompute').selectOption('none');
  await page.waitForFunction((s) => Number(document.querySelector('[data-testid=step-headline]').dataset.stepS) !== s, shown);
  const after = Number(await head.getAttribute('data-step-s'));
  const wantAfter = cliJson(`${q.replace('recompute=full', 'recompute=none')}&time=1`).time.step_s;
  check(Math.abs(after / wantAfter - 1) < 1e-9 && after < shown, `without recomputation ${after} s (CLI ${wantAfter} s, before ${shown} s)`);
  await page.locator('#f-mode').selectOption('infer');
  await page.getByTestId('steptime').waitFor({ state: 'detached' });
});

await test('changing an input updates the URL, the total and the chart', 1440, async (page) => {
  await open(page, 'model=llama-2-7b&zero=3&gpus_per_node=8');
  const svg0 = await page.getByTestId('chart').innerHTML();
  const total0 = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  const historyBefore = await page.evaluate(() => history.length);
  const t0 = Date.now();
  await page.locator('#f-tp').fill('2');
  await page.waitForFunction(() => location.search.includes('tp=2'));
  timings.push(['input to URL update (after the 500 ms settle)', Date.now() - t0]);
  const svg1 = await page.getByTestId('chart').innerHTML();
  const total1 = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  check(svg1 !== svg0, 'chart did not change');
  check(total1 !== total0, 'total did not change');
  const want = cliJson(new URL(page.url()).search.slice(1));
  check(total1 === String(want.per_gpu_bytes), `after edit: page ${total1} != CLI ${want.per_gpu_bytes}`);
  // Type without the driver scrolling: the URL write itself must not move the page.
  const scrolled = await page.evaluate(async () => {
    window.scrollTo(0, 300);
    const before = window.scrollY;
    const el = document.querySelector('#f-seq');
    el.value = '2048';
    el.dispatchEvent(new Event('input', { bubbles: true }));
    // The address bar follows once input has rested for 500 ms (src/ui/url.rs, SETTLE).
    await new Promise((r) => setTimeout(r, 800));
    return [before, window.scrollY, location.search];
  });
  check(scrolled[2].includes('seq=2048'), `seq edit not in URL: ${scrolled[2]}`);
  check(scrolled[0] === scrolled[1], `the URL update scrolled the page from ${scrolled[0]} to ${scrolled[1]}`);
  check(await page.evaluate(() => history.length) === historyBefore, 'typing pushed history entries');
  // A rejected value stays in the box with an error, and the state keeps the last good value.
  await page.locator('#f-batch').fill('abc');
  await page.getByText('`abc` is not a whole number').waitFor();
  check(await page.locator('#f-batch').inputValue() === 'abc', 'draft text was lost');
  check(!new URL(page.url()).search.includes('batch='), 'bad batch reached the URL');
  await page.locator('#f-model').selectOption('gpt2');
  await page.waitForFunction(() => location.search.includes('model=gpt2'));
});

await test('charts moved in place per input equal a fresh drawing of the same link (one stage, four stages)', 1440, async (page) => {
  // Tall enough for both figures to be on screen (the timeline redraws only while in view).
  await page.setViewportSize({ width: 1440, height: 2600 });
  for (const link of ['model=llama-2-7b&zero=3&gpus_per_node=8', 'model=llama-2-7b&gpus_per_node=8&pp=4&microbatches=8&zero=1']) {
    await open(page, link);
    const figs = ['[data-testid=chart]', '[data-testid=timeline-chart]'];
    const read = () => page.evaluate((qs) => qs.map((q) => document.querySelector(q).innerHTML.replace(/\s+/g, ' ')), figs);
    await page.waitForFunction((qs) => qs.every((q) => document.querySelector(q)?.querySelector('svg')), figs);
    // The sequence lengths of the perf harness (most redraws keep the shape: moved), then
    // one that changes the axis (drawn in full).
    for (const v of [1037, 1074, 1111, 8192]) {
      const before = await read();
      await page.locator('#f-seq').fill(String(v));
      await page.waitForFunction(([qs, old]) => qs.every((q, i) => document.querySelector(q).innerHTML.replace(/\s+/g, ' ') !== old[i]), [figs, before]);
    }
    await page.waitForFunction(() => location.search.includes('seq=8192'));
    const moved = await read();
    await page.goto(page.url());
    await page.waitForSelector('[data-testid=per-gpu]');
    await page.waitForFunction((qs) => qs.every((q) => document.querySelector(q)?.querySelector('svg')), figs);
    const fresh = await read();
    figs.forEach((q, i) => check(moved[i] === fresh[i], `${link}: ${q}: moved drawing differs from a fresh one (${moved[i].length} vs ${fresh[i].length} chars)`));
  }
});

await test('the link follows input once it settles, and a reload or a hidden page keeps an edit', 1440, async (page) => {
  await open(page, 'model=llama-2-7b&zero=3&gpus_per_node=8');
  // The address bar waits for input to settle; hiding the page writes it at once, and a
  // reload within the pause takes the edit back from session storage (Chromium reloads the
  // URL it had before pagehide ran).
  await page.locator('#f-seq').fill('3000');
  await page.waitForFunction(() => document.querySelector('[data-testid=per-gpu]').textContent.length > 0);
  const early = new URL(page.url()).search;
  await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
  check(new URL(page.url()).search.includes('seq=3000'), `visibilitychange did not write the edit (before: ${early}, after: ${page.url()})`);
  await page.locator('#f-seq').fill('3100');
  await page.reload();
  await page.waitForSelector('[data-testid=per-gpu]');
  check(await page.locator('#f-seq').inputValue() === '3100', `the reload lost the edit: seq ${await page.locator('#f-seq').inputValue()}, URL ${page.url()}`);
  // Left alone, the address bar follows by itself.
  await page.locator('#f-seq').fill('3200');
  await page.waitForFunction(() => location.search.includes('seq=3200'), null, { timeout: 5000 });
});

await test('malformed URL shows warnings, runs no script and still works', 1440, async (page, seen) => {
  await page.goto(`${origin}/?batch=-3&zero=9&tp=abc&model=%3Cscript%3Ealert(1)%3C/script%3E`);
  await page.getByTestId('warnings').waitFor();
  const text = await page.getByTestId('warnings').textContent();
  for (const key of ['batch', 'zero', 'tp', 'model']) check(text.includes(key), `no warning for ${key}: ${text}`);
  check(text.includes('<script>alert(1)</script>'), 'the bad value is not echoed as text');
  check(await page.locator('main script').count() === 0, 'a <script> element was injected');
  check(seen.dialogs.length === 0, `a dialog opened: ${seen.dialogs}`);
  const want = cliJson('');
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(want.per_gpu_bytes), 'defaults not used');
  await page.screenshot({ path: `${outDir}/bad-url.png`, fullPage: true });
  await page.locator('#f-batch').fill('2');
  await page.waitForFunction(() => location.search.includes('batch=2'));
  const after = await page.getByTestId('warnings').textContent();
  check(!after.includes('batch'), 'the batch warning stayed after the user fixed batch');
  await page.goto(`${origin}/?params=-1&zero=9&name=%3Cscript%3Ealert(2)%3C/script%3E`);
  await page.getByTestId('warnings').waitFor();
  const second = await page.getByTestId('warnings').textContent();
  for (const needle of ['params', '`-1` is negative', 'unknown key `name`']) check(second.includes(needle), `second bad URL lacks ${needle}: ${second}`);
  check(seen.dialogs.length === 0, 'a dialog opened on the second bad URL');
});

await test('narrow screen (360 px) renders every panel', 360, async (page) => {
  await open(page, 'model=llama-3-8b&mode=infer&seq=8192&gen=1024&batch=8');
  for (const id of ['model-panel', 'workload-panel', 'cluster-panel', 'zero-panel', 'verdict', 'chart', 'ledger']) {
    check(await page.getByTestId(id).isVisible(), `${id} not visible`);
  }
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `page scrolls sideways by ${overflow}px`);
  await page.screenshot({ path: `${outDir}/page-360.png`, fullPage: true });
});

await test('model panel: import a config.json file, then paste one', 1440, async (page, seen) => {
  await open(page, '');
  await page.locator('[data-testid=import] summary').click();
  // The importer's parser is a module of its own, fetched on the first import only.
  check(seen.requests.every((u) => !u.includes('memfit-import')), 'the importer module loaded before an import');
  await page.getByTestId('import-file').setInputFiles('tests/configs/llama-3-8b.json');
  await page.getByTestId('import-status').waitFor();
  check(seen.requests.some((u) => u.includes('memfit-import_bg.wasm')), 'the import did not fetch the importer module');
  check((await page.getByTestId('import-status').textContent()).includes('Imported a `llama` config'), 'no import message');
  await page.waitForFunction(() => location.search.includes('kv_heads=8'));
  check((await page.getByTestId('param-count').textContent()).includes('8,030,261,248'), 'imported count is not 8,030,261,248');
  await page.getByTestId('import-text').fill('{"model_type":"llama","hidden_size":4096}');
  await page.getByTestId('import-apply').click();
  await page.getByText('config.json lacks `num_attention_heads`').waitFor();
  await page.getByTestId('preset-search').fill('GPT-2 XL (1.5B)');
  await page.getByTestId('preset-search').press('Enter');
  await page.waitForFunction(() => location.search.includes('model=gpt2-xl'));
});

await test('model panel: the import form comes from the second module, whether or not the panels below loaded it first', 1440, async (page) => {
  await open(page, '');
  // The panels below first (the reader scrolled): the form then mounts from the same module.
  await page.locator('.lazy-sentinel').first().scrollIntoViewIfNeeded();
  await page.getByTestId('explorer').waitFor({ state: 'attached' });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.locator('[data-testid=import] summary').click();
  await page.getByTestId('import-text').fill(await readFile('tests/configs/llama-3-8b.json', 'utf8'));
  await page.getByTestId('import-apply').click();
  await page.getByTestId('import-status').waitFor();
  await page.waitForFunction(() => location.search.includes('kv_heads=8'));
  check((await page.getByTestId('param-count').textContent()).includes('8,030,261,248'), 'imported count is not 8,030,261,248');
});

await test('model panel: the import form\'s module fails to load: the group says so, the first screen keeps working', 1440, async (page) => {
  await page.route(/memfit-below/, (route) => route.abort());
  await page.goto(`${origin}/?model=llama-2-7b`);
  await page.waitForSelector('[data-testid=per-gpu]');
  await page.locator('[data-testid=import] summary').click();
  await page.waitForFunction(() => /import form could not load.*Reload the page/s.test(document.querySelector('[data-testid=import]')?.textContent ?? ''));
  check(await page.locator('[data-testid=import] [role=alert]').count() === 1, 'the failure is not announced');
  const was = await page.getByTestId('per-gpu').textContent();
  await page.locator('#f-seq').fill('1024');
  await page.waitForFunction((w) => document.querySelector('[data-testid=per-gpu]').textContent !== w, was);
}, { allowConsole: /Failed to load resource: net::ERR_FAILED/ });

await test('model panel: Hub fetch on request (mocked Hub: a config, then a gated model)', 1440, async (page, seen) => {
  await page.route('https://huggingface.co/**', (route) => {
    if (route.request().url().includes('gated')) return route.fulfill({ status: 401, body: 'unauthorized' });
    return route.fulfill({ status: 200, contentType: 'application/json', path: 'tests/configs/qwen2.5-7b.json' });
  });
  await open(page, '');
  check(seen.requests.every((u) => !u.includes('huggingface.co')), 'the page contacted the Hub at load');
  await page.locator('[data-testid=import] summary').click();
  await page.locator('#import-hub').fill('Qwen/Qwen2.5-7B');
  await page.getByTestId('import-fetch').click();
  await page.waitForFunction(() => location.search.includes('model=qwen2.5-7b'));
  check((await page.getByTestId('param-count').textContent()).includes('7,615,616,512'), 'Qwen count wrong');
  await page.locator('#import-hub').fill('meta-llama/gated-model');
  await page.getByTestId('import-fetch').click();
  await page.getByText('is gated or private').waitFor();
}, { allow: ['https://huggingface.co/'] });

await test('cluster panel: switch GPU, layout constraint explained', 1440, async (page) => {
  await open(page, 'zero=3&gpus_per_node=8');
  const before = await page.getByTestId('usable').textContent();
  await page.locator('#f-gpu').selectOption('a100-40');
  await page.waitForFunction(() => location.search.includes('gpu=a100-40'));
  const after = await page.getByTestId('usable').textContent();
  check(before !== after && after.includes('40.00 GiB'), `usable did not change to A100 40: ${after}`);
  await page.locator('#f-dp').fill('16');
  await page.getByTestId('layout-problems').getByText('16 GPUs, but the cluster has').waitFor();
});

await test('ZeRO panel and comparison: stage change, DP slider, fitting bars marked', 1440, async (page) => {
  await open(page, 'gpus_per_node=8');
  const z0 = Number(await page.getByTestId('per-gpu').getAttribute('data-bytes'));
  await page.locator('#f-zero').selectOption('3');
  await page.waitForFunction(() => location.search.includes('zero=3'));
  const z3 = Number(await page.getByTestId('per-gpu').getAttribute('data-bytes'));
  check(z3 < z0, `ZeRO-3 (${z3}) is not below ZeRO-0 (${z0})`);
  const rows = await page.getByTestId('comm-table').locator('tbody tr').count();
  check(rows === 8, `${rows} comparison rows`);
  check((await page.getByTestId('comm-table').textContent()).includes('3Ψ'), 'no 3Ψ for ZeRO-3');
  await page.getByTestId('dp-slider').fill('6');
  await page.waitForFunction(() => document.querySelector('[data-testid=dp-value]').textContent === '64');
  check((await page.getByTestId('zero-compare').textContent()).includes('✓'), 'no bar marked as fitting');
  check(await page.getByTestId('zero-mode-note').count() === 0, 'a training scenario\'s ZeRO panel says it is not training');
  check(await page.getByTestId('seq-curve').locator('svg').count() === 1, 'no sequence curve');
  // The curve is computed while its panel is on screen (IntersectionObserver): bring it
  // into view and wait for it rather than reading it at once.
  await page.getByTestId('seq-curve').scrollIntoViewIfNeeded();
  const maxSeq = await page.waitForFunction(() => document.querySelector('[data-testid=max-seq]')?.textContent.includes('tokens'), null, { timeout: 10000 }).then(() => true, () => false);
  check(maxSeq, 'no max sequence');
  // Serving: the ZeRO panel's bars are training's, and it says so.
  await open(page, 'mode=serve&model=llama-3-8b&gpu=h100-80');
  await page.getByTestId('zero-mode-note').waitFor({ state: 'attached' });
  check((await page.getByTestId('zero-mode-note').textContent()).startsWith('The scenario is serving; these bars are what training'), 'the serving ZeRO panel does not say its bars are training\'s');
});

await test('below the chart, panels are built when the reader scrolls towards them or selects an item', 1440, async (page) => {
  // They are a second wasm module (src/ui/split.rs): not fetched at load. A 1440 × 1000
  // screen ends above the chart's end (issue 39: the first module draws the first screen).
  const below = [];
  page.on('request', (r) => { if (/memfit-below/.test(r.url())) below.push(new URL(r.url()).pathname); });
  await page.goto(`${origin}/?model=llama-2-7b&zero=3&gpus_per_node=8`);
  await page.waitForSelector('[data-testid=per-gpu]');
  await page.getByTestId('below').waitFor({ state: 'attached' });
  await page.waitForTimeout(500);
  for (const id of ['steptime', 'timeline', 'explorer', 'ledger', 'learn']) check(await page.getByTestId(id).count() === 0, `${id} built at load`);
  check(below.length === 0, `the second module was fetched at load: ${below}`);
  // Selecting a chart segment loads it and builds the explanation (and the ledger beside it),
  // explaining the segment selected in the first module.
  const t0 = Date.now();
  await page.locator('[data-testid=chart] rect[data-component=activations]').first().click();
  await page.getByTestId('explain-item').waitFor({ state: 'attached' });
  timings.push(['second module: chart click → its explanation in the page (ms)', Date.now() - t0]);
  check(below.includes('/memfit-below.js') && below.includes('/memfit-below_bg.wasm'), `second module not fetched on selection: ${below}`);
  check((await page.getByTestId('explain-formula').textContent()).includes('A·L_c·C'), 'the selection made before the module loaded is not the one explained');
  check(await page.getByTestId('learn').count() === 0, 'the tour built before the reader scrolled there');
  await page.getByTestId('timeline').waitFor({ state: 'attached' });
  await page.getByTestId('steptime').waitFor({ state: 'attached' });
  // A selection made in the second module is explained there; a setting changed in the first
  // reaches it.
  await page.locator('[data-testid=ledger] tbody tr').first().click();
  await page.waitForFunction(() => document.querySelector('[data-testid=explain-formula]').textContent.includes('Ψ'));
  const ledger = page.getByTestId('ledger');
  const before = await ledger.textContent();
  await page.locator('#f-seq').fill('1024');
  await page.waitForFunction(() => /seq=1024/.test(location.search));
  // Off screen, the panels below keep their last drawing; in view, they catch up.
  await ledger.scrollIntoViewIfNeeded();
  await page.waitForFunction((b) => document.querySelector('[data-testid=ledger]').textContent !== b, before);
  // Scrolling down builds the rest, group by group.
  await page.locator('.lazy-sentinel').last().scrollIntoViewIfNeeded();
  await page.getByTestId('learn').waitFor({ state: 'attached' });
  check(await page.getByTestId('explorer').count() === 1, 'explorer not built');
});

await test('the second module fails to load: the reader is told, the first screen keeps working', 1440, async (page) => {
  await page.route(/memfit-below/, (route) => route.abort());
  await page.goto(`${origin}/?model=llama-2-7b&zero=3&gpus_per_node=8`);
  await page.waitForSelector('[data-testid=per-gpu]');
  await page.locator('[data-testid=chart] rect[data-component=activations]').first().click();
  const msg = page.getByTestId('below');
  await page.waitForFunction(() => /could not load/.test(document.querySelector('[data-testid=below]')?.textContent ?? ''));
  check(await msg.getAttribute('role') === 'alert', 'the failure is not announced');
  check(/Reload the page/.test(await msg.textContent()), 'the failure does not say what to do');
  const was = await page.getByTestId('per-gpu').textContent();
  await page.locator('#f-seq').fill('1024');
  await page.waitForFunction((w) => document.querySelector('[data-testid=per-gpu]').textContent !== w, was);
}, { allowConsole: /Failed to load resource: net::ERR_FAILED/ });

await test('the fewest-GPU search is a module of its own, fetched after the first result', 1440, async (page) => {
  // Held until released: the first result must not wait for it.
  let release, fetchedBeforeResult = null;
  const held = new Promise((r) => { release = r; });
  await page.route(/memfit-search/, async (route) => {
    if (fetchedBeforeResult === null) fetchedBeforeResult = !(await page.evaluate(() => !!document.querySelector('[data-testid=per-gpu]')));
    await held;
    await route.continue();
  });
  await open(page, 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8');
  await page.waitForFunction(() => document.querySelector('[data-testid=min-gpus]')?.textContent.includes('searching'));
  await page.waitForTimeout(300);
  check(fetchedBeforeResult === false, `the search's module was requested ${fetchedBeforeResult === null ? 'never' : 'before the first result'}`);
  release();
  const min = cliExplore('model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8&solve=min_gpus', 1).solve;
  await minGpusAnswered(page);
  const line = await page.getByTestId('min-gpus').textContent();
  check(line.includes(`fits on ${min.value} ×`), `min GPUs: page "${line}", CLI ${min.value}`);
});

await test('a keystroke keeps the fewest-GPU line (busy) until its answer, and its link element', 1440, async (page) => {
  await open(page, 'model=llama-2-7b&zero=3&gpus_per_node=8');
  await minGpusAnswered(page);
  await page.evaluate(() => {
    window.__link = document.querySelector('[data-testid=load-min-gpus]');
    window.__busy = [];
    const el = document.querySelector('[data-testid=min-gpus]');
    new MutationObserver((ms) => { for (const m of ms) if (m.attributeName === 'aria-busy') window.__busy.push(el.getAttribute('aria-busy')); })
      .observe(el, { attributes: true });
  });
  await page.locator('#f-seq').fill('3072');
  await minGpusAnswered(page);
  const busy = await page.evaluate(() => window.__busy);
  check(busy.length >= 2 && busy[0] === 'true' && busy[busy.length - 1] === null, `aria-busy while searching, then removed: ${JSON.stringify(busy)}`);
  check(await page.evaluate(() => window.__link === document.querySelector('[data-testid=load-min-gpus]') && window.__link.isConnected), 'the link element was rebuilt');
  const q = 'model=llama-2-7b&zero=3&gpus_per_node=8&seq=3072';
  const min = cliExplore(`${q}&solve=min_gpus`, 1).solve;
  const line = await page.getByTestId('min-gpus').textContent();
  check(line.includes(`${min.message}.`), `min GPUs: page "${line}", CLI "${min.message}"`);
  const href = await page.getByTestId('load-min-gpus').getAttribute('href');
  check(href.includes('seq=3072'), `the link loads the new answer: ${href}`);
});

await test('the fewest-GPU search\'s module fails to load: the line says so, the first screen keeps working', 1440, async (page) => {
  await page.route(/memfit-search/, (route) => route.abort());
  await page.goto(`${origin}/?model=llama-2-7b&zero=3&gpus_per_node=8`);
  await page.waitForSelector('[data-testid=per-gpu]');
  await page.waitForFunction(() => /could not load.*Reload the page/.test(document.querySelector('[data-testid=min-gpus]')?.textContent ?? ''));
  const was = await page.getByTestId('per-gpu').textContent();
  await page.locator('#f-seq').fill('1024');
  await page.waitForFunction((w) => document.querySelector('[data-testid=per-gpu]').textContent !== w, was);
}, { allowConsole: /Failed to load resource: net::ERR_FAILED/ });

// The op-level allocator's templates (src/ui/templates.rs): fetched only by a run that reads them.
const PYTORCH = 'model=llama-3.2-3b&framework=pytorch&gpus_per_node=1&batch=4&seq=4096&attn=sdpa&precision=bf16-pure&gpu=h200';
const TEMPLATES = /op_templates\.txt/;
// The op-level allocator's module, fetched with them (src/replay.rs).
const REPLAY = /memfit-replay/;

await test('the op templates: the default links never request them, scrolled and searched', 1440, async (page, seen) => {
  for (const q of ['', 'model=llama-2-7b&zero=3&gpus_per_node=8']) {
    await open(page, q);
    await minGpusAnswered(page);
    await page.waitForTimeout(300);
  }
  const asked = seen.requests.filter((u) => TEMPLATES.test(u) || REPLAY.test(u) || /memfit-modes/.test(u));
  check(seen.requests.length > 0 && asked.length === 0, `requested: ${asked}`);
});

// Records every per-GPU figure the verdict shows, from the first paint on (window.__shown).
const recordShown = (page) => page.addInitScript(() => {
  window.__shown = [];
  new MutationObserver(() => {
    const b = document.querySelector('[data-testid=per-gpu]')?.getAttribute('data-bytes');
    if (b && window.__shown.at(-1) !== b) window.__shown.push(b);
  }).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
});

await test('the op templates: a single-GPU PyTorch link fetches them once, holds its verdict, then shows the CLI\'s figure in every module', 1440, async (page, seen) => {
  await recordShown(page);
  const want = cliJson(PYTORCH);
  await open(page, PYTORCH);
  const el = page.getByTestId('per-gpu');
  check(await el.getAttribute('data-bytes') === String(want.per_gpu_bytes), `page ${await el.getAttribute('data-bytes')} != CLI ${want.per_gpu_bytes}`);
  check((await el.textContent()).trim() === gib(want.per_gpu_bytes), `shown ${await el.textContent()}`);
  const shown = await page.evaluate(() => window.__shown);
  check(shown.length === 1, `the verdict showed ${shown.join(', ')} B before the CLI's ${want.per_gpu_bytes}`);
  // the second module's ledger: the replayed gap, as the CLI's
  const frag = want.items.find((i) => i.component === 'fragmentation');
  check(/replayed/.test(frag.source), `CLI fragmentation: ${frag.source}`);
  const rows = await page.getByTestId('ledger').locator('tbody tr').allTextContents();
  check(rows.some((r) => r.includes(frag.bytes.toLocaleString('en-US')) && r.includes(frag.formula)), `no ledger row of ${frag.bytes} B (${frag.formula}): ${rows.join(' | ').slice(0, 300)}`);
  // the search's worker: the CLI's fewest GPUs
  const min = cliExplore(`${PYTORCH}&solve=min_gpus`, 1).solve;
  await minGpusAnswered(page);
  const line = await page.getByTestId('min-gpus').textContent();
  check(line.includes(`fits on ${min.value} ×`), `min GPUs: page "${line}", CLI ${min.value}`);
  // an edit follows without another request
  const want2 = cliJson(PYTORCH.replace('seq=4096', 'seq=2048'));
  await page.locator('#f-seq').fill('2048');
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]').getAttribute('data-bytes') === b, String(want2.per_gpu_bytes));
  const fetched = seen.requests.filter((u) => TEMPLATES.test(u));
  check(fetched.length === 1, `templates requested ${fetched.length} times: ${fetched}`);
  check(new URL(fetched[0]).origin === origin, `templates from ${fetched[0]}`);
  const replay = seen.requests.filter((u) => REPLAY.test(u) && /\.wasm/.test(u));
  check(replay.length === 1, `the allocator's module requested ${replay.length} times`);
  await page.screenshot({ path: `${outDir}/pytorch-1440.png` });
});

await test('the op templates: while they load, the verdict is held and no figure that will change is shown', 1440, async (page) => {
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route(TEMPLATES, async (route) => { await held; await route.continue(); });
  await page.goto(`${origin}/?${PYTORCH}`);
  await page.waitForSelector('[data-testid=verdict][aria-busy=true]');
  await page.waitForTimeout(300);
  check(/Replaying the caching allocator/.test(await page.getByTestId('headline').textContent()), 'the headline does not say it waits');
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === null && (await page.getByTestId('per-gpu').textContent()).trim() === '', 'a per-GPU figure is shown');
  check(/…/.test(await page.getByTestId('headroom').textContent()), 'the headroom is shown');
  check(await page.getByTestId('chart').evaluate((el) => getComputedStyle(el).visibility) === 'hidden', 'the chart is shown');
  check(/searching/.test(await page.getByTestId('min-gpus').textContent()), 'the fewest-GPU line does not wait');
  release();
  await page.waitForSelector('[data-testid=verdict]:not([aria-busy])');
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(cliJson(PYTORCH).per_gpu_bytes), 'not the CLI\'s figure once loaded');
  check(await page.getByTestId('chart').evaluate((el) => getComputedStyle(el).visibility) === 'visible', 'the chart stays hidden');
});

await test('the op templates: reached by an edit after the panels below loaded, every module follows', 1440, async (page, seen) => {
  await open(page, 'model=llama-3.2-3b&gpus_per_node=1&batch=4&seq=4096&attn=sdpa&precision=bf16-pure&gpu=h200');
  check(!seen.requests.some((u) => TEMPLATES.test(u)), 'requested before a run read them');
  await page.locator('#f-framework').selectOption('pytorch');
  const want = cliJson(PYTORCH);
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]').getAttribute('data-bytes') === b, String(want.per_gpu_bytes));
  const frag = want.items.find((i) => i.component === 'fragmentation');
  // the ledger catches up when it is on screen (off screen it waits)
  await page.getByTestId('ledger').scrollIntoViewIfNeeded();
  await page.waitForFunction((f) => [...document.querySelectorAll('[data-testid=ledger] tbody tr')].some((r) => r.textContent.includes(f)), frag.bytes.toLocaleString('en-US'));
  check(await page.getByTestId('below-held').count() === 0, 'the panels below still say they wait');
});

for (const [what, blocked] of [['the op templates', TEMPLATES], ['the allocator\'s module', REPLAY]]) {
await test(`the op templates: ${what} fail(s) to load: the verdict says so, with the flat share's figure; the page keeps working`, 1440, async (page) => {
  await page.route(blocked, (route) => route.abort());
  await open(page, PYTORCH);
  const msg = await page.getByTestId('templates-failed').textContent();
  check(/could not load/.test(msg) && /flat 5 % share/.test(msg) && /Reload the page/.test(msg), `message: ${msg}`);
  const shown = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  check(shown && shown !== String(cliJson(PYTORCH).per_gpu_bytes), `figure ${shown}`);
  await minGpusAnswered(page);
  await page.locator('#f-seq').fill('2048');
  await page.waitForFunction((w) => document.querySelector('[data-testid=per-gpu]').getAttribute('data-bytes') !== w, shown);
  check(await page.getByTestId('templates-failed').count() === 1, 'the failure is no longer said');
}, { allowConsole: /Failed to load resource: net::ERR_FAILED/ });
}

// The ledgers of inference, serving and the other tools' conventions (src/ui/engines.rs): the
// first module asks their module (src/modes.rs) for them, loaded the first time the scenario
// reads one.
const SERVE = 'mode=serve&engine=vllm&model=llama-3-8b&gpu=h100-80';
const ENGINES = /memfit-modes/;

await test('whole ledgers: a mode=serve link loads the ledgers\' module once, holds its verdict, then shows the CLI\'s figure; an edit follows', 1440, async (page, seen) => {
  await recordShown(page);
  const want = cliJson(SERVE);
  await open(page, SERVE);
  const el = page.getByTestId('per-gpu');
  check(await el.getAttribute('data-bytes') === String(want.per_gpu_bytes), `page ${await el.getAttribute('data-bytes')} != CLI ${want.per_gpu_bytes}`);
  check((await el.textContent()).trim() === gib(want.per_gpu_bytes), `shown ${await el.textContent()}`);
  const shown = await page.evaluate(() => window.__shown);
  check(shown.length === 1, `the verdict showed ${shown.join(', ')} B before the CLI's ${want.per_gpu_bytes}`);
  check(!/Loading/.test(await page.getByTestId('headline').textContent()), 'the headline still says it waits');
  check(await page.getByTestId('verdict').evaluate((v) => v.classList.contains('fits')) === want.fits, `fits is not the CLI's ${want.fits}`);
  const q2 = SERVE.replace('gpu=h100-80', 'gpu=a100-40');
  const want2 = cliJson(q2);
  await page.locator('#f-gpu').selectOption('a100-40');
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]').getAttribute('data-bytes') === b, String(want2.per_gpu_bytes));
  const module = seen.requests.filter((u) => ENGINES.test(u) && /\.wasm/.test(u));
  check(module.length === 1, `the engines' module requested ${module.length} times`);
  check(!seen.requests.some((u) => TEMPLATES.test(u) || REPLAY.test(u)), 'the op templates or their module requested by a serving link');
});

await test('whole ledgers: while the ledgers\' module loads, the verdict is held and shows no figure', 1440, async (page) => {
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route(ENGINES, async (route) => { await held; await route.continue(); });
  await page.goto(`${origin}/?${SERVE}`);
  await page.waitForSelector('[data-testid=verdict][aria-busy=true]');
  await page.waitForTimeout(300);
  check(/Loading the estimator of inference, serving and the other tools' conventions/.test(await page.getByTestId('headline').textContent()), 'the headline does not say it waits');
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === null && (await page.getByTestId('per-gpu').textContent()).trim() === '', 'a per-GPU figure is shown');
  check(/…/.test(await page.getByTestId('headroom').textContent()), 'the headroom is shown');
  check(await page.getByTestId('chart').evaluate((el) => getComputedStyle(el).visibility) === 'hidden', 'the chart is shown');
  release();
  await page.waitForSelector('[data-testid=verdict]:not([aria-busy])');
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(cliJson(SERVE).per_gpu_bytes), 'not the CLI\'s figure once loaded');
});

await test('whole ledgers: reached by selecting the mode, the ledgers\' module loads then and the figure is the CLI\'s', 1440, async (page, seen) => {
  await open(page, 'model=llama-3-8b&gpu=h100-80');
  check(!seen.requests.some((u) => ENGINES.test(u)), 'the ledgers\' module requested before the mode was selected');
  await page.locator('#f-mode').selectOption('serve');
  const want = cliJson('model=llama-3-8b&gpu=h100-80&mode=serve');
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]')?.getAttribute('data-bytes') === b, String(want.per_gpu_bytes));
  check(seen.requests.some((u) => ENGINES.test(u)), 'the ledgers\' module was not requested');
});

await test('whole ledgers: the ledgers\' module fails to load: the verdict says so and shows no figure; the page keeps working', 1440, async (page) => {
  await page.route(ENGINES, (route) => route.abort());
  await page.goto(`${origin}/?${SERVE}`);
  await page.getByTestId('templates-failed').waitFor();
  const msg = await page.getByTestId('templates-failed').textContent();
  check(/inference, serving and DeepSpeed's and Megatron's formulas could not load/.test(msg) && /Reload the page/.test(msg), `message: ${msg}`);
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === null, 'a per-GPU figure is shown');
  await page.locator('#f-mode').selectOption('train');
  const want = cliJson('engine=vllm&model=llama-3-8b&gpu=h100-80&mode=train');
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]')?.getAttribute('data-bytes') === b, String(want.per_gpu_bytes));
  check(await page.getByTestId('templates-failed').count() === 0, 'the failure is still said for a training run');
}, { allowConsole: /Failed to load resource: net::ERR_FAILED/ });

await test('whole ledgers: an inference link and a Megatron-convention link load the module once per load and show the CLI\'s figure; an edit follows', 1440, async (page, seen) => {
  for (const q of ['model=llama-2-13b&mode=infer&seq=2048&gen=256&gpus_per_node=8', 'model=llama-2-7b&gpus_per_node=8&tp=2&pp=2&convention=megatron']) {
    await open(page, q);
    const want = cliJson(q);
    check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(want.per_gpu_bytes), `${q}: page ${await page.getByTestId('per-gpu').getAttribute('data-bytes')} != CLI ${want.per_gpu_bytes}`);
  }
  const q2 = 'model=llama-2-7b&gpus_per_node=8&tp=2&pp=2&convention=megatron&seq=2048';
  await page.locator('#f-seq').fill('2048');
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]')?.getAttribute('data-bytes') === b, String(cliJson(q2).per_gpu_bytes));
  // once per page load (two links opened)
  const module = seen.requests.filter((u) => ENGINES.test(u) && /\.wasm/.test(u));
  check(module.length === 2, `the ledgers' module requested ${module.length} times in two loads`);
});

await test('the fewest-GPU line, written by the search\'s worker, is the CLI\'s message; its link loads the CLI\'s layout', 1440, async (page) => {
  let min;
  for (const q of ['model=llama-2-7b&zero=3&gpus_per_node=8', 'model=llama-2-13b&mode=infer&seq=2048&gen=256&gpus_per_node=8', 'model=llama-3-8b&mode=serve&gpus_per_node=8', PYTORCH]) {
    await open(page, q);
    await minGpusAnswered(page);
    min = cliExplore(`${q}&solve=min_gpus`, 1).solve;
    const line = (await page.getByTestId('min-gpus').textContent()).replace(/ load it$/, '');
    check(line === `Fewest GPUs: ${min.message}.`, `${q}: page "${line}", CLI "${min.message}"`);
  }
  await page.getByTestId('load-min-gpus').click();
  await page.waitForFunction((b) => document.querySelector('[data-testid=per-gpu]')?.getAttribute('data-bytes') === b, String(min.layout.per_gpu_bytes));
  check(cliJson(min.layout.query).per_gpu_bytes === min.layout.per_gpu_bytes, 'the layout\'s query is not its estimate');
});

await test('explain mode: chart segment click, keyboard on a ledger row, all formulas', 1440, async (page) => {
  await open(page, 'zero=3&gpus_per_node=8');
  await page.locator('[data-testid=chart] rect[data-component=activations]').first().click();
  await page.getByTestId('explain-item').waitFor();
  check((await page.getByTestId('explain-formula').textContent()).includes('A·L_c·C'), 'activation formula not shown');
  await page.locator('[data-testid=ledger] tbody tr').first().focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('[data-testid=explain-formula]').textContent.includes('Ψ'));
  // The list is built when the reader opens it.
  await page.locator('[data-testid=all-formulas] summary').click();
  await page.locator('[data-testid=all-formulas] li').first().waitFor();
  const n = await page.locator('[data-testid=all-formulas] li').count();
  check(n >= 5, `only ${n} formulas listed`);
  check(await page.locator('[data-testid=chart] title').count() >= 5, 'chart segments have no hover titles');
});

await test('copy link and reopen it: same state; export ds_config', 1440, async (page) => {
  await open(page, 'model=mixtral-8x7b&mode=train&zero=2&gpus_per_node=8&tp=2&ep=4');
  await page.getByTestId('copy-link').click();
  const link = await page.evaluate(() => navigator.clipboard.readText());
  const total = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  await page.goto(link);
  await page.getByTestId('per-gpu').waitFor();
  await reveal(page);
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === total, 'reopened link shows another total');
  check(await page.locator('#f-ep').inputValue() === '4', 'ep not restored');
  await page.locator('#export-kind').selectOption('ds');
  const ds = JSON.parse(await page.getByTestId('export-text').textContent());
  check(ds.zero_optimization.stage === 2, 'ds_config stage is not 2');
  const href = await page.getByTestId('download').getAttribute('href');
  check(href.startsWith('data:application/json'), 'download is not a data URL');
}, { clipboard: true });

await test('dark colour scheme renders (screenshot)', 1440, async (page) => {
  await open(page, 'model=llama-3-70b&zero=3&gpus_per_node=8&nodes=4&pp=4&microbatches=8');
  check(await page.getByTestId('stages').locator('tbody tr').count() === 4, 'no per-stage table for pp=4');
  await page.screenshot({ path: `${outDir}/page-1440-dark.png`, fullPage: false });
}, { colorScheme: 'dark' });

async function sweepDone(page) {
  // The map is drawn only on screen (off-screen panels do not redraw per input).
  await page.getByTestId('explorer').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid=explorer]');
    return el && el.dataset.sweepMs && !el.classList.contains('stale');
  });
  await page.locator('[data-testid=fit-map] rect[data-cell]').first().waitFor();
}

await test('explorer: fit map click and Enter load layouts; fewest GPUs; best-layouts table', 1440, async (page) => {
  const q = 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8';
  await open(page, q);
  await sweepDone(page);
  const cli = cliExplore(q);
  const counts = await page.getByTestId('explore-counts').textContent();
  check(counts.includes(`${cli.evaluated.toLocaleString('en-US')} layouts`) && counts.includes(`${cli.fitting.toLocaleString('en-US')} fit`), `counts ${counts} != CLI ${cli.evaluated}/${cli.fitting}`);
  timings.push(['wasm sweep, 64 GPUs (ms)', Number(await page.getByTestId('explorer').getAttribute('data-sweep-ms'))]);
  check(counts.includes('in a background worker'), `the sweep did not run in the worker: ${counts}`);
  await page.getByTestId('explorer').screenshot({ path: `${outDir}/fitmap-1440.png` });
  // Click: ZeRO-3, TP 8, PP 1 loads that cell's best layout into the calculator and the URL.
  const before = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  await page.locator('[data-testid=fit-map] rect[aria-label^="ZeRO-3, TP 8, PP 1:"]').click();
  await page.waitForFunction(() => location.search.includes('tp=8') && location.search.includes('zero=3'));
  const after = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  check(after !== before, 'the verdict did not change');
  const want = cliJson(new URL(page.url()).search.slice(1));
  check(after === String(want.per_gpu_bytes) && want.fits && want.warnings.length === 0, `loaded layout: page ${after}, CLI ${want.per_gpu_bytes} fits=${want.fits} warnings=${want.warnings.length}`);
  check((await page.getByTestId('headline').textContent()).toLowerCase().includes('fits'), 'headline does not say it fits');
  // The same sweep stays (loading a layout changes no swept-over setting): no re-sweep.
  check(!(await page.getByTestId('explorer').getAttribute('class')).includes('stale'), 'loading a layout re-swept');
  // Keyboard: focus the ZeRO-1, TP 8, PP 2 cell and press Enter.
  await page.locator('[data-testid=fit-map] rect[aria-label^="ZeRO-1, TP 8, PP 2:"]').focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.search.includes('zero=1') && location.search.includes('pp=2'));
  // Fewest GPUs, as the CLI solves it.
  const min = cliExplore(q + '&solve=min_gpus', 1).solve;
  await minGpusAnswered(page);
  const line = await page.getByTestId('min-gpus').textContent();
  check(line.includes(`fits on ${min.value} ×`), `min GPUs: page "${line}", CLI ${min.value}`);
  // Best layouts: the first row loads the CLI's best layout for the settings of the moment
  // (the layout loaded by keyboard above is among them: its micro-batches stay).
  const now = cliExplore(new URL(page.url()).search.slice(1));
  const rows = page.getByTestId('best-layouts').locator('tbody tr');
  check(await rows.count() === 10, `${await rows.count()} rows before "show all"`);
  await page.getByTestId('show-all-layouts').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=best-layouts] tbody tr').length === 50);
  await page.getByTestId('load-layout').first().click();
  await page.waitForFunction((qq) => location.search === '?' + qq, now.layouts[0].query);
  // Sorting by peak puts the smallest peak first.
  await page.getByTestId('best-layouts').getByRole('button', { name: 'peak per GPU' }).click();
  const peaks = cli.layouts.map((l) => l.per_gpu_bytes).sort((a, b) => a - b);
  check((await rows.first().textContent()).includes(gib(peaks[0])), `sorted first row ${await rows.first().textContent()} lacks ${gib(peaks[0])}`);
  // The table equivalent of the map.
  await page.getByTestId('explorer').locator('details summary').click();
  await page.getByTestId('fit-table').locator('tbody tr').first().waitFor();
  const cellsWithLayouts = await page.locator('[data-testid=fit-map] rect[data-cell]').count();
  check(await page.getByTestId('fit-table').locator('tbody tr').count() === cellsWithLayouts, 'fit table and fit map list different cells');
});

await test('best layouts: an edit that moves only the speeds (intra_bw 900 → 880) shows the new speeds, as a fresh load does', 1440, async (page) => {
  const base = 'model=llama-2-7b&zero=3&gpus_per_node=8';
  const rowsText = () => page.evaluate(() => [...document.querySelectorAll('[data-testid=best-layouts] tbody tr')].map((tr) => tr.innerText.replace(/\s+/g, ' ')).join('\n'));
  await open(page, base + '&intra_bw=900');
  await sweepDone(page);
  await page.getByTestId('best-layouts').scrollIntoViewIfNeeded();
  const at900 = await rowsText();
  await page.locator('#f-intra_bw').fill('880');
  await page.waitForFunction(() => location.search.includes('intra_bw=880'));
  await sweepDone(page);
  await page.getByTestId('best-layouts').scrollIntoViewIfNeeded();
  await page.waitForFunction((old) => [...document.querySelectorAll('[data-testid=best-layouts] tbody tr')].map((tr) => tr.innerText.replace(/\s+/g, ' ')).join('\n') !== old, at900);
  const edited = await rowsText();
  await open(page, base + '&intra_bw=880');
  await sweepDone(page);
  await page.getByTestId('best-layouts').scrollIntoViewIfNeeded();
  await page.locator('[data-testid=best-layouts] tbody tr').first().waitFor();
  const fresh = await rowsText();
  check(edited === fresh, `edited rows differ from a fresh load:\n${edited.slice(0, 300)}\nvs\n${fresh.slice(0, 300)}`);
  // The same layouts in the same order at 900: only the speeds moved (the case a keyed row kept stale).
  const layoutsOf = (t) => t.split('\n').map((r) => r.split(' ').slice(0, 12).join(' '));
  check(JSON.stringify(layoutsOf(at900)) !== JSON.stringify(layoutsOf(fresh)) || at900 !== fresh, 'the edit changed nothing');
});

await test('explorer: a change of model re-sweeps; 4096 GPUs sweep timed; 360 px fit map', 1440, async (page) => {
  await open(page, 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=512');
  await sweepDone(page);
  const ms = Number(await page.getByTestId('explorer').getAttribute('data-sweep-ms'));
  const evaluated = Number(await page.getByTestId('explorer').getAttribute('data-evaluated'));
  timings.push(['wasm sweep, 4096 GPUs (ms)', ms]);
  timings.push(['wasm sweep, 4096 GPUs (layouts evaluated)', evaluated]);
  check(evaluated === cliExplore('model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=512', 1).evaluated, 'page and CLI evaluated different counts');
  // The longest gap between animation frames after an input: with a re-sweep of 4096 GPUs
  // (seq is an input the sweep depends on) and without one (batch is swept over, so no
  // re-sweep). A sweep that blocked the main thread would show as a longer frame.
  const frameGaps = (id, val) => page.evaluate(async ([id, val]) => {
    const gaps = [];
    let last = performance.now();
    let running = true;
    const loop = (t) => { gaps.push(t - last); last = t; if (running) requestAnimationFrame(loop); };
    requestAnimationFrame(loop);
    await new Promise((r) => setTimeout(r, 50));
    const input = document.querySelector(id);
    input.value = val;
    input.dispatchEvent(new Event('input', { bubbles: true }));
    const el = document.querySelector('[data-testid=explorer]');
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 30));
    while (el.classList.contains('stale') && performance.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 100));
    running = false;
    return { max: Math.max(...gaps.slice(1)), wall: performance.now() - t0 - 100, busy: Number(el.dataset.sweepMs) };
  }, [id, val]);
  const sweep = await frameGaps('#f-seq', '4096');
  const plain = await frameGaps('#f-batch', '2');
  timings.push(['longest frame after an input that re-sweeps 4096 GPUs (ms)', Math.round(sweep.max * 10) / 10]);
  timings.push(['longest frame after an input that does not re-sweep (ms)', Math.round(plain.max * 10) / 10]);
  timings.push(['4096-GPU re-sweep: wall time to the new map (ms)', Math.round(sweep.wall)]);
  timings.push(['4096-GPU re-sweep: time in the worker (ms)', sweep.busy]);
  const svg0 = await page.getByTestId('fit-map').innerHTML();
  await page.locator('#f-model').selectOption('mistral-7b');
  await page.waitForFunction(() => location.search.includes('model=mistral-7b'));
  await page.waitForFunction((old) => document.querySelector('[data-testid=fit-map]').innerHTML !== old, svg0);
  await sweepDone(page);
  check(await page.getByTestId('best-layouts').locator('tbody tr').count() === 10, 'no layouts after the model change');
});

await test('explorer without Web Workers: the same sweep and fewest GPUs on the main thread', 1440, async (page) => {
  await page.addInitScript(() => { delete window.Worker; });
  const q = 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8';
  await open(page, q);
  await sweepDone(page);
  const cli = cliExplore(q, 1);
  const counts = await page.getByTestId('explore-counts').textContent();
  check(!counts.includes('worker') && counts.includes(`${cli.evaluated.toLocaleString('en-US')} layouts`) && counts.includes(`${cli.fitting.toLocaleString('en-US')} fit`), `main-thread sweep: ${counts} vs CLI ${cli.evaluated}/${cli.fitting}`);
  const min = cliExplore(q + '&solve=min_gpus', 1).solve;
  await minGpusAnswered(page);
  const line = await page.getByTestId('min-gpus').textContent();
  check(line.includes(`fits on ${min.value} ×`), `min GPUs without a worker: page "${line}", CLI ${min.value}`);
});

await test('serving: the engine\'s answer equals the CLI; a map cell loads its layout; the refusal is shown; 360 px', 1440, async (page) => {
  const q = 'mode=serve&model=llama-3-70b&gpus_per_node=2&tp=2&quant=fp8&max_len=8192';
  await open(page, q);
  const want = cliJson(q).serve;
  const panel = page.getByTestId('serve-panel');
  await panel.waitFor();
  const text = await panel.textContent();
  const tokens = want.kv_tokens.toLocaleString('en-US').replace(/,/g, ',');
  check(text.includes(`${want.max_concurrency.toFixed(2)} concurrent requests of 8,192 tokens`), `concurrency ${want.max_concurrency} not shown: ${text.slice(0, 300)}`);
  check(text.replace(/[\u202f\u00a0 ,]/g, '').includes(String(want.kv_tokens)), `KV tokens ${tokens} not shown`);
  check(await page.getByTestId('serving-inputs').isVisible(), 'serving inputs hidden with mode=serve');
  // Training's keys are greyed out and say so (the estimate of a serving engine does not read them).
  const field = (id) => page.locator(`.field:has(#${id})`);
  check(await field('f-recompute').evaluate((e) => e.classList.contains('unused')), 'recompute not marked unused in serving');
  check((await field('f-recompute').locator('label').textContent()).includes('not used in serving'), 'recompute label lacks its note');
  check(!(await field('f-max_seqs').evaluate((e) => e.classList.contains('unused'))), 'max_seqs marked unused in serving');
  // llama.cpp's keys under vLLM, and the paged engines' under llama.cpp: greyed by engine.
  check((await field('f-parallel').locator('label').textContent()).includes('not used by vLLM'), 'parallel not marked under vLLM');
  await page.locator('#f-engine').selectOption('llamacpp');
  await page.waitForFunction(() => location.search.includes('engine=llamacpp'));
  check((await field('f-gpu_util').locator('label').textContent()).includes('not used by llama.cpp'), 'gpu_util not marked under llama.cpp');
  check(!(await field('f-parallel').evaluate((e) => e.classList.contains('unused'))), 'parallel marked unused under llama.cpp');
  await page.locator('#f-engine').selectOption('vllm');
  await page.waitForFunction(() => !location.search.includes('engine='));
  // A map cell: TP 4 × w4a16 loads its layout, and the verdict follows.
  const cell = page.getByTestId('serve-map').locator('tbody tr').nth(2).locator('td').nth(4).getByRole('button');
  await cell.click();
  await page.waitForFunction(() => location.search.includes('tp=4') && location.search.includes('quant=w4a16'));
  const after = cliJson(new URL(page.url()).search.slice(1));
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(after.per_gpu_bytes), 'verdict does not follow the cell');
  // A context that does not fit: the engine's own words.
  await page.locator('#f-max_len').fill('2000000');
  await page.getByTestId('serve-error').filter({ hasText: 'To serve at least one request' }).waitFor();
  await page.setViewportSize({ width: 360, height: 800 });
  await panel.scrollIntoViewIfNeeded();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 1, `sideways scroll at 360 px: ${overflow}px`);
  await page.screenshot({ path: `${outDir}/serve-360.png` });
});

await test('first screen: advanced groups start closed and say so; a link that sets one of their keys opens it', 1440, async (page) => {
  await open(page, 'model=llama-2-7b');
  const groups = page.locator('details.advanced');
  check(await groups.count() >= 4, `advanced groups: ${await groups.count()}`);
  for (let i = 0; i < await groups.count(); i++) {
    const g = groups.nth(i);
    check(!(await g.evaluate((d) => d.open)), `group ${i} open on the default page`);
    check((await g.locator('summary').textContent()).includes('at their defaults'), `group ${i} summary`);
  }
  // A closed group's fields are not built (nothing of them runs per keystroke) until it is opened.
  check(await page.locator('#f-reduce_bucket').count() === 0, 'a closed group built its fields');
  await groups.filter({ hasText: 'Framework internals' }).locator('summary').click();
  await page.locator('#f-reduce_bucket').waitFor({ state: 'visible' });
  await page.locator('#f-reduce_bucket').fill('200000000');
  await page.waitForFunction(() => location.search.includes('reduce_bucket=200000000'));
  check((await groups.filter({ hasText: 'Framework internals' }).locator('summary').textContent()).includes('1 of 17 changed'), 'summary after an edit');
  await open(page, 'model=llama-2-7b&layers=40&frag=10');
  const arch = groups.filter({ hasText: 'Architecture overrides' });
  check(await arch.evaluate((d) => d.open), 'architecture overrides closed although layers is set');
  check((await arch.locator('summary').textContent()).includes('1 of 43 changed'), 'override count');
  const runtime = groups.filter({ hasText: 'Runtime overheads' });
  check(await runtime.evaluate((d) => d.open), 'runtime group closed although frag is set');
  check(await page.locator('#f-frag').isVisible(), 'frag input hidden');
  // A hybrid preset's count line is its exact count (its config.json's), not its transformer shape's.
  await open(page, 'model=nemotron-h-8b');
  check((await page.getByTestId('param-count').textContent()).includes('8,100,852,736'), 'hybrid preset count is not its exact count');
});

await test('phone (360 px): the verdict bar stays in view, jumps to the inputs, and follows an edit there', 360, async (page) => {
  await open(page, 'model=llama-2-7b');
  const bar = page.getByTestId('quickbar');
  const line = async () => (await page.getByTestId('quick-verdict').textContent()).trim();
  const perGpu = (await page.getByTestId('per-gpu').textContent()).trim();
  check((await line()).includes(perGpu), `quick verdict "${await line()}" lacks ${perGpu}`);
  // The results come first on a phone: the form starts below every chart.
  const formTop = await page.locator('#inputs').evaluate((e) => e.getBoundingClientRect().top);
  check(formTop > 2 * 800, `the form starts at ${formTop}px: not below the results`);
  await page.getByTestId('to-inputs').click();
  await page.waitForFunction(() => Math.abs(document.getElementById('inputs').getBoundingClientRect().top) < 120);
  const inView = async (loc) => loc.evaluate((e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; });
  check(await inView(bar), 'the verdict bar left the screen');
  check(await inView(page.locator('#f-model')), 'the model input is not on screen after the jump');
  await page.locator('#f-batch').fill('4');
  await page.waitForFunction((old) => !document.querySelector('[data-testid=quick-verdict]').textContent.includes(old), perGpu);
  check(await inView(bar), 'the verdict bar left the screen while editing');
  const now = (await page.getByTestId('per-gpu').textContent()).trim();
  check((await line()).includes(now), `quick verdict "${await line()}" is not the new ${now}`);
  await page.screenshot({ path: `${outDir}/phone-inputs-360.png` });
});

await test('explorer at 360 px: fit map visible, no sideways scroll (screenshot)', 360, async (page) => {
  await open(page, 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8');
  await sweepDone(page);
  check(await page.getByTestId('fit-map').isVisible(), 'fit map not visible');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `page scrolls sideways by ${overflow}px`);
  await page.getByTestId('explorer').screenshot({ path: `${outDir}/fitmap-360.png` });
});

await test('timeline: peak equals the verdict and the CLI, names its event; ZeRO 0 → 3 moves the peak; hover and focus name events', 1440, async (page) => {
  const seen = [];
  for (const z of [0, 1, 2, 3]) {
    const q = `model=llama-2-7b&seq=4096&gpus_per_node=8&zero=${z}`;
    await open(page, q);
    const want = cliJson(q + '&timeline=1');
    const t = want.timeline;
    check(t.peak_bytes === want.per_gpu_bytes, `CLI timeline peak ${t.peak_bytes} != per_gpu ${want.per_gpu_bytes}`);
    const chart = page.getByTestId('timeline-chart');
    await chart.locator('svg').waitFor();
    const svg = await chart.innerHTML();
    const pe = t.events[t.peak_event];
    // The drawing names the peak by its event; the figure is in the line under it.
    const label = `peak — ${pe.phase}` + (pe.layer !== null ? `, layer ${pe.layer}` : '');
    check(svg.includes(label), `ZeRO-${z}: chart lacks "${label}"`);
    const ev = (await page.getByTestId('timeline-event').textContent()).trim();
    check(ev.startsWith(`Peak: ${pe.phase}`) && ev.includes(pe.what) && ev.endsWith(gib(t.peak_bytes)),
      `ZeRO-${z}: event line "${ev}" does not name ${JSON.stringify(pe)}`);
    check((await page.getByTestId('per-gpu').textContent()).trim() === gib(t.peak_bytes), `ZeRO-${z}: verdict differs from the timeline peak`);
    seen.push(`${z}:${pe.phase}/${pe.layer}/${pe.what}`);
    if (z === 3) {
      check(t.events.filter((e) => e.component === 'gathered_layer' && e.delta_bytes > 0).length === 64, 'ZeRO-3: not 64 all-gathers (32 layers × forward and backward)');
      await page.getByTestId('timeline').screenshot({ path: `${outDir}/timeline-zero3.png` });
      // Hover a point: the line names that point's event with its figures (the CLI's), and
      // the point is described by that line.
      const pts = chart.locator('circle.tl-pt');
      check(await pts.count() > 20, 'too few event points');
      const named = async (pt) => {
        const e = t.events.filter((x) => x.stage === t.peak_stage)[Number(await pt.getAttribute('data-event'))];
        const name = await pt.getAttribute('aria-label');
        const line = (await page.getByTestId('timeline-event').textContent()).trim();
        check(name.endsWith(e.what) && line.startsWith(name + ' (') && line.endsWith(gib(e.total_bytes)),
          `point "${name}": line "${line}" for ${JSON.stringify(e)}`);
        check(await pt.getAttribute('aria-describedby') === 'tl-event', 'point not described by the line');
        return line;
      };
      const first = pts.nth(3);
      await first.hover();
      const hovered = await named(first);
      // Keyboard: focus another point.
      const other = pts.nth(10);
      await other.focus();
      const focused = await named(other);
      check(focused !== hovered, `focus shows "${focused}"`);
    }
  }
  check(seen[0].startsWith('0:forward/31/logits') && seen[1].startsWith('1:backward') && seen[3].startsWith('3:backward/31/all-gather'), `peak path ${seen.join(' | ')}`);
  // Pipelines: one line per other stage, the stages' peaks listed.
  const q = 'model=llama-2-7b&seq=4096&gpus_per_node=8&pp=4&microbatches=8&zero=1';
  await open(page, q);
  const want = cliJson(q + '&timeline=1');
  check(want.timeline.stages.length === 4, 'CLI: not 4 stages');
  const svg = await page.getByTestId('timeline-chart').innerHTML();
  check(['stage 1', 'stage 2', 'stage 3'].every((x) => svg.includes(x)) || want.timeline.peak_stage !== 0, 'stage lines not labelled');
  await page.getByTestId('timeline').screenshot({ path: `${outDir}/timeline-pp4.png` });
});

await test('learn: every step\'s link loads its scenario and the page shows the number the step quotes', 1440, async (page) => {
  await open(page, '');
  const steps = page.getByTestId('learn-step');
  const n = await steps.count();
  check(n >= 6 && n <= 12, `${n} steps`);
  const items = [];
  for (let i = 0; i < n; i++) {
    const st = steps.nth(i);
    items.push({
      quoted: await st.getAttribute('data-quoted'),
      shownIn: await st.getAttribute('data-shown-in'),
      text: await st.locator('p').textContent(),
      href: await st.locator('a').getAttribute('href'),
    });
  }
  await page.getByTestId('learn').screenshot({ path: `${outDir}/learn.png` });
  for (const [i, it] of items.entries()) {
    check(it.text.includes(it.quoted), `step ${i + 1}: text does not quote ${it.quoted}`);
    check(it.href.startsWith('?') && it.href.includes('#'), `step ${i + 1}: href ${it.href}`);
    await page.goto(`${origin}/${it.href}`);
    await page.waitForSelector('[data-testid=per-gpu]');
    const shown = (await page.getByTestId(it.shownIn).textContent()).trim();
    check(shown === it.quoted, `step ${i + 1}: page shows ${shown}, the step quotes ${it.quoted}`);
    const query = it.href.slice(1).split('#')[0];
    const cli = cliJson(query);
    const bytes = it.shownIn === 'per-cpu' ? cli.per_cpu_bytes : cli.per_gpu_bytes;
    check(gib(bytes) === it.quoted, `step ${i + 1}: CLI says ${gib(bytes)}`);
    check(cli.warnings.length === 0, `step ${i + 1}: warnings ${JSON.stringify(cli.warnings)}`);
    const panel = it.href.split('#')[1];
    // The panels below the chart arrive with the second module; the link then lands on its panel.
    await page.locator(`#${panel}`).waitFor({ state: 'attached', timeout: 10000 }).catch(() => {});
    check(await page.locator(`#${panel}`).count() === 1, `step ${i + 1}: no #${panel} on the page`);
    await page.waitForFunction((id) => { const r = document.getElementById(id).getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; }, panel, { timeout: 5000 })
      .catch(() => { throw new Error(`step ${i + 1}: the link does not land on #${panel}`); });
    if (i === 3) await page.locator(`#${panel}`).screenshot({ path: `${outDir}/learn-step4-${panel}.png` });
    if (i === 5) await page.locator(`#${panel}`).screenshot({ path: `${outDir}/learn-step6-${panel}.png` });
  }
});

await test('accuracy panel: fetched on opening; the published runs, the same median as docs/validation.md; real-stack runs, the step-time comparison and the serving logs held out and calibration apart; rows load their scenario', 1440, async (page) => {
  await open(page, '');
  const panel = page.getByTestId('accuracy');
  await panel.locator('summary').click();
  await page.getByTestId('accuracy-row').first().waitFor();
  const rows = await page.getByTestId('accuracy-row').count();
  const doc = await readFile('docs/validation.md', 'utf8');
  const [, n, median, max] = doc.match(/\*\*(\d+) rows: median \|error\| ([\d.]+) %, max \|error\| ([\d.]+) %/);
  check(rows === Number(n), `${rows} rows, docs/validation.md has ${n}`);
  const summary = await page.getByTestId('accuracy-summary').textContent();
  check(summary.includes(`median |error| ${median} %, max ${max} %`), `summary "${summary}" vs ${median} / ${max}`);
  const measured = JSON.parse(await readFile('tests/data/pytorch_measurements.json', 'utf8'));
  const nPytorch = ['train', 'large', 'fsdp', 'infer', 'prompt'].reduce((a, k) => a + measured[k].length, 0);
  check(await page.getByTestId('pytorch-row').count() === nPytorch, `PyTorch rows ${await page.getByTestId('pytorch-row').count()} != ${nPytorch}`);
  check((await page.getByTestId('pytorch-summary').textContent()).startsWith(`${nPytorch} runs`), 'PyTorch summary');
  // The real-stack runs: every one a row, held out and calibration counted apart.
  // (the split as docs/validation.md states it: the committed one less the runs moved to calibration)
  const hf = JSON.parse(await readFile('tests/data/hf_measurements.json', 'utf8')).runs;
  const [, nCal, calMed, calMax, nHeld, heldMed, heldMax] = doc.match(/\*\*Calibration (\d+): ([\d.]+) % \/ ([\d.]+) %; held out (\d+): ([\d.]+) % \/ ([\d.]+) %/);
  check(Number(nCal) + Number(nHeld) === hf.length, `docs split ${nCal} + ${nHeld} != ${hf.length} runs`);
  check(await page.getByTestId('hf-row').count() === hf.length, `transformers rows ${await page.getByTestId('hf-row').count()} != ${hf.length}`);
  const hfSummary = await page.getByTestId('hf-summary').textContent();
  check(hfSummary.includes(`held out (${nHeld} runs): median |error| ${heldMed} %, max ${heldMax} %`)
    && hfSummary.includes(`calibration (${nCal} runs): median |error| ${calMed} %, max ${calMax} %`), `transformers summary: ${hfSummary}`);
  // The real CUDA runs (calibration only): every run that ran a row; a row's link loads the
  // scenario whose allocated peak the row shows (the CLI's allocated_bytes in MiB).
  const cudaRuns = [];
  for (const dir of ['cuda_h200', 'cuda_h200_d']) {
    for (const f of ['train', 'infer']) {
      const text = await readFile(`tests/data/${dir}/${f}.jsonl`, 'utf8');
      cudaRuns.push(...text.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => !r.error));
    }
  }
  check(await page.getByTestId('cuda-row').count() === cudaRuns.length, `CUDA rows ${await page.getByTestId('cuda-row').count()} != ${cudaRuns.length}`);
  const cudaSummary = await page.getByTestId('cuda-summary').textContent();
  check(cudaSummary.includes('Calibration only') && cudaSummary.includes('training (24 runs)')
    && cudaSummary.includes('Set D, measured the same way: held out') && cudaSummary.includes('training 12 runs'), `CUDA summary: ${cudaSummary}`);
  // Set H: the verdicts on the H100, counted from its runs (those with an error ran out of memory).
  const hRuns = (await readFile('tests/data/cuda_h100/train.jsonl', 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  const hOom = hRuns.filter((r) => r.error).length;
  check(cudaSummary.includes(`(${hOom} of ${hRuns.length} ran out of memory there)`) && cudaSummary.includes('held out 20 of 20'), `CUDA summary, set H: ${cudaSummary}`);
  const cudaHref = await page.getByTestId('cuda-row').first().locator('a').getAttribute('href');
  const cudaCell = await page.getByTestId('cuda-row').first().locator('td').nth(3).textContent();
  const cudaCli = cliJson(cudaHref.slice(1));
  check(Math.abs(cudaCli.allocated_bytes / 2 ** 20 - Number(cudaCell.replace(/,/g, ''))) < 1, `CUDA row ${cudaCell} MiB vs CLI ${cudaCli.allocated_bytes}`);
  // The step-time model against published training runs: every compared run a row, the
  // held-out figures docs/steptime.md states.
  const split = JSON.parse(await readFile('tests/data/train_split.json', 'utf8'));
  const nSteps = split.calibration.length + split.held_out.length;
  check(await page.getByTestId('step-row').count() === nSteps, `step-time rows ${await page.getByTestId('step-row').count()} != ${nSteps}`);
  const stepDoc = await readFile('docs/steptime.md', 'utf8');
  const [, sMed, sMax, sOk, sPairs] = stepDoc.match(/is not met\*\* \(held out: ([\d.]+) %, ([\d.]+) %, (\d+) of (\d+)\)/);
  const stepSummary = await page.getByTestId('step-summary').textContent();
  check(stepSummary.includes(`held out (${split.held_out.length} runs): median |error| ${sMed} %, max ${sMax} %, the faster of a pair predicted faster in ${sOk} of ${sPairs}`), `step-time summary: ${stepSummary}`);
  // Serving: every log of the committed split with logged tokens a row, held out and
  // calibration counted apart; a row's link loads the start-up whose tokens the row shows.
  const logs = JSON.parse(await readFile('tests/data/serve_logs.json', 'utf8')).entries;
  const sSplit = JSON.parse(await readFile('tests/data/serve_split.json', 'utf8'));
  const withTokens = (ids) => logs.filter((e) => ids.includes(e.id) && e.logged.kv_cache_tokens).length;
  const [sHeld, sCal] = [withTokens(sSplit.held_out), withTokens(sSplit.calibration)];
  check(await page.getByTestId('serve-acc-row').count() === sHeld + sCal, `serving rows ${await page.getByTestId('serve-acc-row').count()} != ${sHeld} + ${sCal}`);
  const serveSummary = await page.getByTestId('serve-acc-summary').textContent();
  check(serveSummary.includes(`held out (${sHeld} logs)`) && serveSummary.includes(`calibration (${sCal} logs)`), `serving summary: ${serveSummary}`);
  const serveHref = await page.getByTestId('serve-acc-row').first().locator('a').getAttribute('href');
  const serveCell = await page.getByTestId('serve-acc-row').first().locator('td').nth(3).textContent();
  check(Number(serveCell.replace(/,/g, '')) === cliJson(serveHref.slice(1)).serve.kv_tokens, `serving row ${serveCell} vs CLI`);
  // SGLang: the nine logs memfit_evidence::serve::SGLANG reads (three held out), each a row.
  check(await page.getByTestId('sglang-acc-row').count() === 9, `SGLang rows ${await page.getByTestId('sglang-acc-row').count()} != 9`);
  check((await page.getByTestId('sglang-acc-summary').textContent()).includes('held out (3 logs)'), 'SGLang summary');
  const sgHref = await page.getByTestId('sglang-acc-row').first().locator('a').getAttribute('href');
  const sgCell = await page.getByTestId('sglang-acc-row').first().locator('td').nth(3).textContent();
  check(Number(sgCell.replace(/,/g, '')) === cliJson(sgHref.slice(1)).serve.kv_tokens, `SGLang row ${sgCell} vs CLI`);
  // llama.cpp and Ollama: every log of the committed fourth-batch split a row (held out and
  // calibration apart); a row's memfit figure is the CLI's three GPU buffers, MiB.
  const lSplit = JSON.parse(await readFile('tests/data/serve_split_llamacpp.json', 'utf8'));
  const nL = lSplit.held_out.length + lSplit.calibration.length;
  check(await page.getByTestId('llamacpp-acc-row').count() === nL, `llama.cpp rows ${await page.getByTestId('llamacpp-acc-row').count()} != ${nL}`);
  const lSummary = await page.getByTestId('llamacpp-acc-summary').textContent();
  check(lSummary.includes(`held out (${lSplit.held_out.length} logs)`) && lSummary.includes(`calibration (${lSplit.calibration.length} logs)`), `llama.cpp summary: ${lSummary}`);
  const lHref = await page.getByTestId('llamacpp-acc-row').first().locator('a').getAttribute('href');
  const lCell = Number((await page.getByTestId('llamacpp-acc-row').first().locator('td').nth(3).textContent()).replace(/,/g, ''));
  const lServe = cliJson(lHref.slice(1)).serve;
  const lMiB = (lServe.weights_bytes + lServe.kv_cache_bytes + lServe.activation_bytes) / 1048576;
  check(Math.abs(lCell - lMiB) < 0.1, `llama.cpp row ${lCell} vs CLI ${lMiB}`);
  await panel.screenshot({ path: `${outDir}/accuracy.png` });
  const link = page.getByTestId('accuracy-row').first().locator('a');
  const href = await link.getAttribute('href');
  await link.click();
  await page.waitForURL((u) => u.search.length > 1);
  await page.waitForSelector('[data-testid=per-gpu]');
  const want = cliJson(href.slice(1));
  check((await page.getByTestId('per-gpu').getAttribute('data-bytes')) === String(want.per_gpu_bytes), 'row link does not load its scenario');
});

await test('CSP in force: inline script and outside fetch refused; no request while editing (cache off)', 1440, async (page, seen) => {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const violations = [];
  await page.exposeFunction('__cspViolation', (v) => violations.push(v));
  await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => window.__cspViolation(`${e.violatedDirective} ${e.blockedURI}`)));
  await open(page, 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8');
  await sweepDone(page);
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  for (const d of ["default-src 'none'", "script-src 'self' 'wasm-unsafe-eval' 'sha256-", "connect-src 'self' https://huggingface.co", "style-src 'self'"]) check(csp.includes(d), `CSP lacks ${d}: ${csp}`);
  check(violations.length === 0, `the page itself violated its CSP: ${violations.join(', ')}`);
  // The policy is enforced: an injected inline script does not run, an outside fetch is refused.
  const probe = await page.evaluate(async () => {
    const sc = document.createElement('script');
    sc.textContent = 'window.__cspInline = 1';
    document.body.appendChild(sc);
    let fetched = 'no';
    try { await fetch('https://example.com/x'); fetched = 'yes'; } catch { fetched = 'refused'; }
    return { inline: window.__cspInline, fetched };
  });
  check(probe.inline === undefined, 'an inline script ran despite the CSP');
  check(probe.fetched === 'refused', `outside fetch: ${probe.fetched}`);
  await page.waitForFunction(() => true);
  check(violations.some((v) => v.startsWith('script-src')) && violations.some((v) => v.startsWith('connect-src')), `violations not reported: ${violations}`);
  // Editing: not one request, to anywhere.
  const before = seen.requests.length;
  await page.locator('#f-seq').fill('4096');
  await page.locator('#f-batch').fill('2');
  await page.locator('#f-zero').selectOption('3');
  await page.locator('#f-tp').fill('8');
  await sweepDone(page);
  await page.locator('[data-testid=fit-map] rect[data-cell]').first().click();
  await page.waitForTimeout(300);
  const during = seen.requests.slice(before);
  check(during.length === 0, `requests while editing: ${during.join(', ')}`);
}, { allowConsole: /Content Security Policy|example\.com/ });

await test('deployable from a sub-path: /memfit/ loads, computes, keeps its path', 1440, async (page) => {
  const q = 'model=llama-2-7b&zero=3&gpus_per_node=8';
  await page.goto(`${origin}/memfit/?${q}`);
  await page.getByTestId('per-gpu').waitFor();
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(cliJson(q).per_gpu_bytes), 'sub-path page total differs from the CLI');
  const border = await page.getByTestId('verdict').evaluate((el) => getComputedStyle(el).borderLeftWidth);
  check(border === '6px', `stylesheet not applied under the sub-path (border ${border})`);
  await page.locator('#f-batch').fill('2');
  await page.waitForFunction(() => location.pathname === '/memfit/' && location.search.includes('batch=2'));
});

if (panicDist) {
  await test('a panic shows a message with a reset link, not a blank page', 1440, async (page) => {
    await page.goto(`${origin}/panic/?panic_test=1&model=gpt2`);
    await page.getByTestId('panic').waitFor();
    const text = await page.getByTestId('panic').textContent();
    check(text.includes('internal error') && text.includes('panic test'), `panic message: ${text}`);
    check(await page.getByTestId('panic-reset').getAttribute('href') === '/panic/', 'reset link is not the page without its query');
    await page.getByTestId('panic').screenshot({ path: `${outDir}/panic.png` });
    await page.getByTestId('panic-reset').click();
    await page.getByTestId('per-gpu').waitFor();
    // the link is written when the first result settles (src/ui/url.rs), not with it
    await page.waitForFunction(() => location.search === '?v=1', null, { timeout: 5000 }).catch(() => {});
    check(new URL(page.url()).search === '?v=1', `after reset: ${page.url()}`);
  }, { allowPageError: /unreachable|panic test/, allowConsole: /panicked at|panic test/ });
}

// 50 hostile payloads; each sets window.__pwned if it ever runs.
const PAYLOADS = [
  '<script>window.__pwned=1</script>', '"><script>window.__pwned=1</script>', "'><script>window.__pwned=1</script>",
  '<img src=x onerror="window.__pwned=1">', '<img src=x onerror=window.__pwned=1>', '<svg onload="window.__pwned=1">',
  '<svg><script>window.__pwned=1</script></svg>', '<svg><a xlink:href="javascript:window.__pwned=1"><text>x</text></a></svg>',
  '<body onload=window.__pwned=1>', '<iframe src="javascript:window.__pwned=1">', '<iframe srcdoc="<script>parent.__pwned=1</script>">',
  'javascript:window.__pwned=1', 'JaVaScRiPt:window.__pwned=1', 'data:text/html,<script>window.__pwned=1</script>',
  '<a href="javascript:window.__pwned=1">x</a>', '<details open ontoggle=window.__pwned=1>', '<input autofocus onfocus=window.__pwned=1>',
  '<video><source onerror="window.__pwned=1">', '<audio src=x onerror=window.__pwned=1>', '<marquee onstart=window.__pwned=1>',
  '<object data="javascript:window.__pwned=1">', '<embed src="javascript:window.__pwned=1">', '<math><mtext><script>window.__pwned=1</script>',
  '<style>@import "javascript:window.__pwned=1";</style>', '<link rel=stylesheet href="javascript:window.__pwned=1">',
  '<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=1">', '<base href="javascript:window.__pwned=1//">',
  '<form action="javascript:window.__pwned=1"><button>x</button></form>', '<template><script>window.__pwned=1</script></template>',
  '<noscript><p title="</noscript><img src=x onerror=window.__pwned=1>">', '<scr<script>ipt>window.__pwned=1</scr</script>ipt>',
  '&lt;script&gt;window.__pwned=1&lt;/script&gt;', '&#60;script&#62;window.__pwned=1&#60;/script&#62;', '\\u003cscript\\u003ewindow.__pwned=1',
  '%3Cscript%3Ewindow.__pwned%3D1%3C%2Fscript%3E', '<scr\u0000ipt>window.__pwned=1</script>', '\u202e<script>window.__pwned=1</script>',
  '"onmouseover="window.__pwned=1', "' onfocus='window.__pwned=1' autofocus='", '`${window.__pwned=1}`', '{{constructor.constructor("window.__pwned=1")()}}',
  '<svg><animate onbegin=window.__pwned=1 attributeName=x dur=1s>', '<svg><set onbegin=window.__pwned=1 attributeName=x>',
  '<svg><foreignObject><img src=x onerror=window.__pwned=1></foreignObject></svg>', '<xss onpointerenter=window.__pwned=1 style=display:block>x</xss>',
  '1e9<script>window.__pwned=1</script>', '7_000_000_000"><img src=x onerror=window.__pwned=1>', '-1<svg onload=window.__pwned=1>',
  'A'.repeat(4000) + '<script>window.__pwned=1</script>', '\ud83d\ude00<img src=x onerror=window.__pwned=1>\ud800',
];
// Raw (not re-encoded) broken percent-encodings, as a hostile link would carry them.
const RAW = ['%E0%A4%A', '%ZZ%00', '%C0%AE%C0%AE%2F', '%uD800', '%3Cscript%3Ewindow.__pwned=1%3C/script'];
// A lone surrogate cannot be URL-encoded: send the invalid UTF-8 bytes a hostile link would carry.
const enc = (p) => { try { return encodeURIComponent(p); } catch { return encodeURIComponent(p.replace(/[\ud800-\udfff]/g, '')) + '%ED%A0%80'; } };
const KEYS = [...execFileSync(cli, ['--keys-markdown'], { encoding: 'utf8' }).matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);

await test(`injection: ${PAYLOADS.length} payloads × ${KEYS.length} keys in the URL, and in imported config fields`, 1440, async (page, seen) => {
  check(PAYLOADS.length === 50 && KEYS.length >= 60, `${PAYLOADS.length} payloads, ${KEYS.length} keys`);
  const violations = [];
  await page.exposeFunction('__cspViolation2', (v) => violations.push(v));
  await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => window.__cspViolation2(e.violatedDirective)));
  let tried = 0;
  for (const p of PAYLOADS) {
    const q = KEYS.map((k) => `${k}=${enc(p)}`).join('&');
    await page.goto(`${origin}/?${q}`);
    await page.getByTestId('per-gpu').waitFor();
    tried += KEYS.length;
    const state = await page.evaluate(() => ({ pwned: window.__pwned, scripts: document.querySelectorAll('body script').length, warnings: document.querySelector('[data-testid=warnings]')?.textContent ?? '' }));
    check(state.pwned === undefined, `payload ran: ${p.slice(0, 60)}`);
    check(state.scripts === 0, `a <script> element appeared for ${p.slice(0, 60)}`);
    // Shown as text: the model warning quotes the value (long values may be shortened).
    check(state.warnings.includes('unknown model') && state.warnings.includes(p.trim().slice(0, 20).replace(/\u0000/g, '\ufffd')) || /\u0000|\ud800|\u202e/.test(p), `payload not shown as text: ${p.slice(0, 60)} in ${state.warnings.slice(0, 200)}`);
  }
  for (const raw of RAW) {
    await page.goto(`${origin}/?model=${raw}&gpu=${raw}&seq=${raw}`);
    await page.getByTestId('per-gpu').waitFor();
    check(await page.evaluate(() => window.__pwned) === undefined, `raw ${raw} ran`);
  }
  // The page still works after all of it.
  await open(page, 'model=llama-2-7b&zero=3&gpus_per_node=8');
  check(await page.getByTestId('per-gpu').getAttribute('data-bytes') === String(cliJson('model=llama-2-7b&zero=3&gpus_per_node=8').per_gpu_bytes), 'page broken after the payloads');
  // Imported config fields.
  await page.locator('[data-testid=import] summary').click();
  for (const p of PAYLOADS) {
    const cfg = { model_type: p, architectures: [p], _name_or_path: p, torch_dtype: p, hidden_size: p, num_attention_heads: 32, num_hidden_layers: 2, vocab_size: 1000, intermediate_size: 64 };
    await page.getByTestId('import-text').fill(JSON.stringify(cfg));
    await page.getByTestId('import-apply').click();
    const status = await page.getByTestId('import-status').textContent();
    check(await page.evaluate(() => window.__pwned) === undefined, `config payload ran: ${p.slice(0, 60)}`);
    check(status.length > 0, 'no import message');
  }
  check(violations.length === 0, `CSP violations (markup was injected somewhere): ${violations.slice(0, 5).join(', ')}`);
  check(seen.dialogs.length === 0, `dialogs: ${seen.dialogs}`);
  timings.push([`injection: payload × key combinations tried (count)`, tried + PAYLOADS.length]);
});

await browser.close();
server.close();
for (const [what, v] of timings) console.log(`timing: ${what}: ${v}${/\(/.test(what) ? '' : ' ms'}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
