// Browser tests: the release build in dist/ served locally, driven in Debian's
// headless Chromium through playwright-core. Prints "N passed, N failed".
//
// usage: node tests/e2e/browser.mjs <dist dir> <memfit CLI binary>
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile, mkdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { extname, join, normalize } from 'node:path';

const dist = process.argv[2] ?? 'dist';
const cli = process.argv[3] ?? 'target/debug/memfit';
const outDir = 'tests/e2e/out';
await mkdir(outDir, { recursive: true });

const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };
const server = createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
  const file = join(dist, path === '/' ? 'index.html' : path);
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
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  // The browser logs failed resource loads itself; the mocked Hub's 401 is expected there.
  page.on('console', (m) => {
    const expected = /favicon/.test(m.text()) || (opts.allow && /Failed to load resource: .* 401/.test(m.text()));
    if (m.type() === 'error' && !expected) errors.push(`console: ${m.text()}`);
  });
  page.on('request', (r) => requests.push(r.url()));
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  try {
    await fn(page, { errors, requests, dialogs });
    check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
    const foreign = requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !(opts.allow ?? []).some((a) => u.startsWith(a)));
    check(foreign.length === 0, `requests outside the page's origin: ${foreign.join(', ')}`);
  } finally {
    await context.close();
  }
}

async function test(name, width, fn, opts) {
  try {
    await withPage(width, fn, opts);
    passed++; console.log(`ok   - ${name}`);
  } catch (e) {
    failed++; console.log(`FAIL - ${name}: ${e.message}`);
  }
}

async function open(page, query) {
  const t0 = Date.now();
  await page.goto(`${origin}/?${query}`);
  await page.waitForSelector('[data-testid=per-gpu]');
  timings.push(['load to verdict', Date.now() - t0]);
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

await test('changing an input updates the URL, the total and the chart', 1440, async (page) => {
  await open(page, 'model=llama-2-7b&zero=3&gpus_per_node=8');
  const svg0 = await page.getByTestId('chart').innerHTML();
  const total0 = await page.getByTestId('per-gpu').getAttribute('data-bytes');
  const historyBefore = await page.evaluate(() => history.length);
  const t0 = Date.now();
  await page.locator('#f-tp').fill('2');
  await page.waitForFunction(() => location.search.includes('tp=2'));
  timings.push(['input to URL update', Date.now() - t0]);
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
    await new Promise((r) => setTimeout(r, 100));
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

await test('model panel: import a config.json file, then paste one', 1440, async (page) => {
  await open(page, '');
  await page.locator('[data-testid=import] summary').click();
  await page.getByTestId('import-file').setInputFiles('tests/configs/llama-3-8b.json');
  await page.getByTestId('import-status').waitFor();
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
  check(await page.getByTestId('seq-curve').locator('svg').count() === 1, 'no sequence curve');
  check((await page.getByTestId('max-seq').textContent()).includes('tokens'), 'no max sequence');
});

await test('explain mode: chart segment click, keyboard on a ledger row, all formulas', 1440, async (page) => {
  await open(page, 'zero=3&gpus_per_node=8');
  await page.locator('[data-testid=chart] rect[data-component=activations]').first().click();
  await page.getByTestId('explain-item').waitFor();
  check((await page.getByTestId('explain-formula').textContent()).includes('A·L_i·m_i'), 'activation formula not shown');
  await page.locator('[data-testid=ledger] tbody tr').first().focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('[data-testid=explain-formula]').textContent.includes('Ψ'));
  await page.locator('[data-testid=all-formulas] summary').click();
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
  await page.waitForFunction(() => !document.querySelector('[data-testid=min-gpus]').textContent.includes('searching'));
  const line = await page.getByTestId('min-gpus').textContent();
  check(line.includes(`fits on ${min.value} ×`), `min GPUs: page "${line}", CLI ${min.value}`);
  // Best layouts: the first row loads the CLI's best layout.
  const rows = page.getByTestId('best-layouts').locator('tbody tr');
  check(await rows.count() === 10, `${await rows.count()} rows before "show all"`);
  await page.getByTestId('show-all-layouts').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=best-layouts] tbody tr').length === 50);
  await page.getByTestId('load-layout').first().click();
  await page.waitForFunction((qq) => location.search === '?' + qq, cli.layouts[0].query);
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
  timings.push(['4096-GPU re-sweep: main-thread time in slices (ms)', sweep.busy]);
  const svg0 = await page.getByTestId('fit-map').innerHTML();
  await page.locator('#f-model').selectOption('mistral-7b');
  await page.waitForFunction(() => location.search.includes('model=mistral-7b'));
  await page.waitForFunction((old) => document.querySelector('[data-testid=fit-map]').innerHTML !== old, svg0);
  await sweepDone(page);
  check(await page.getByTestId('best-layouts').locator('tbody tr').count() === 10, 'no layouts after the model change');
});

await test('explorer at 360 px: fit map visible, no sideways scroll (screenshot)', 360, async (page) => {
  await open(page, 'model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8');
  await sweepDone(page);
  check(await page.getByTestId('fit-map').isVisible(), 'fit map not visible');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `page scrolls sideways by ${overflow}px`);
  await page.getByTestId('explorer').screenshot({ path: `${outDir}/fitmap-360.png` });
});

await browser.close();
server.close();
for (const [what, v] of timings) console.log(`timing: ${what}: ${v}${/\(/.test(what) ? '' : ' ms'}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
