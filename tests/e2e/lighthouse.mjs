// Lighthouse (mobile preset: Moto G Power emulation, 4× CPU slowdown, slow 4G) on a built
// page served with gzip, N runs in a row; prints every run, then the medians. Builds
// nothing and is not part of the test command (Lighthouse is a 100 MB install):
//
//   npm install --no-save --prefix /tmp/lh lighthouse@13.5.0      (once)
//   LIGHTHOUSE_DIR=/tmp/lh node tests/e2e/lighthouse.mjs dist [--runs 5] [--query 'model=…']
//
// LIGHTHOUSE_DIR is where `node_modules/lighthouse` is (default: this repository).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const RUNS = Number(opt('--runs', 5));
const QUERY = opt('--query', '');
const dist = args[0] ?? 'dist';
const lhDir = process.env.LIGHTHOUSE_DIR ?? process.cwd();
const mod = (name, file) => import(pathToFileURL(join(lhDir, 'node_modules', name, file)).href);

let lighthouse, launch;
try {
  lighthouse = (await mod('lighthouse', 'core/index.js')).default;
  ({ launch } = await mod('chrome-launcher', 'dist/index.js'));
} catch (e) {
  console.error(`lighthouse is not installed under ${lhDir}/node_modules (${e.message}).\n` +
    'Install it once: npm install --no-save --prefix /tmp/lh lighthouse@13.5.0, then set LIGHTHOUSE_DIR=/tmp/lh');
  process.exit(2);
}

const port = 8090 + Math.floor(Math.random() * 500);
const server = spawn(process.execPath, [join(import.meta.dirname, 'serve-gzip.mjs'), dist, String(port)], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 500));
const url = `http://127.0.0.1:${port}/${QUERY ? `?${QUERY}` : ''}`;

const rows = [];
try {
  for (let i = 0; i < RUNS; i++) {
    // A fresh browser per run: no warm cache, no compiled-wasm cache between runs.
    const chrome = await launch({ chromePath: process.env.CHROMIUM ?? '/usr/bin/chromium', chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    try {
      const { lhr } = await lighthouse(url, { port: chrome.port, output: 'json', logLevel: 'error',
        onlyCategories: ['performance', 'accessibility', 'best-practices', 'seo'] });
      const score = (k) => Math.round((lhr.categories[k]?.score ?? 0) * 100);
      const ms = (k) => Math.round(lhr.audits[k]?.numericValue ?? NaN);
      const failedAudits = Object.values(lhr.audits).filter((a) => a.score !== null && a.score < 1 && a.scoreDisplayMode === 'binary');
      const failed = failedAudits.map((a) => a.id);
      // What a failed audit points at (the first three elements), so a regression can be found.
      for (const a of failedAudits) for (const it of (a.details?.items ?? []).slice(0, 3)) if (it.node?.snippet) console.log(`  ${a.id}: ${it.node.snippet.slice(0, 160)}${it.node.explanation ? ` — ${it.node.explanation.split('\n')[0].slice(0, 160)}` : ''}`);
      rows.push({ perf: score('performance'), a11y: score('accessibility'), bp: score('best-practices'), seo: score('seo'),
        fcp: ms('first-contentful-paint'), lcp: ms('largest-contentful-paint'), tbt: ms('total-blocking-time'),
        si: ms('speed-index'), tti: ms('interactive'), cls: lhr.audits['cumulative-layout-shift']?.numericValue ?? NaN, failed });
      const r = rows[rows.length - 1];
      console.log(`run ${i + 1}: performance ${r.perf}, accessibility ${r.a11y}, best practices ${r.bp}, SEO ${r.seo}; ` +
        `FCP ${r.fcp} ms, LCP ${r.lcp} ms, TBT ${r.tbt} ms, SI ${r.si} ms, TTI ${r.tti} ms, CLS ${r.cls.toFixed(3)}` +
        (r.failed.length ? `; failed: ${r.failed.join(', ')}` : ''));
    } finally {
      await chrome.kill();
    }
  }
} finally {
  server.kill();
}
const median = (k) => { const v = rows.map((r) => r[k]).sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
console.log(`\n| run | performance | accessibility | best practices | SEO | TBT (ms) | TTI (ms) | LCP (ms) |\n|---|---|---|---|---|---|---|---|`);
rows.forEach((r, i) => console.log(`| ${i + 1} | ${r.perf} | ${r.a11y} | ${r.bp} | ${r.seo} | ${r.tbt} | ${r.tti} | ${r.lcp} |`));
console.log(`| median | ${median('perf')} | ${median('a11y')} | ${median('bp')} | ${median('seo')} | ${median('tbt')} | ${median('tti')} | ${median('lcp')} |`);
