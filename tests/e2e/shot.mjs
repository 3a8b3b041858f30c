// A viewport screenshot of the page (for looking at a change): serves <dist>, opens the query at the width, optionally scrolls.
// usage: node tests/e2e/shot.mjs <dist> <query> <width> <out.png> [scrollY]
// SHOT_CLICK=<selector> clicks first (e.g. a panel's summary); SHOT_TO=<selector> scrolls it to the top;
// SHOT_REVEAL=1 first builds the lazy panels below the chart (as browser.mjs's reveal), e.g. for SHOT_TO='[data-testid=serve-panel]'.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
const [dist, query, width, out, scroll] = process.argv.slice(2);
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const server = createServer(async (req, res) => { const p = new URL(req.url, 'http://x').pathname; const f = join(dist, p === '/' ? 'index.html' : p); try { const b = await readFile(f); res.writeHead(200, { 'content-type': types[extname(f)] ?? 'x' }); res.end(b); } catch { res.writeHead(404); res.end(); } });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: Number(width), height: 900 } });
page.on('pageerror', (e) => console.log('pageerror', e.message));
await page.goto(`http://127.0.0.1:${server.address().port}/?${query}`);
await page.waitForSelector('[data-testid=per-gpu]');
await page.waitForTimeout(800);
if (process.env.SHOT_REVEAL) {
  const near = async (s, t) => { for (let i = 0; i < 10; i++) { await page.locator('.lazy-sentinel')[s]().scrollIntoViewIfNeeded(); try { await page.getByTestId(t).waitFor({ state: 'attached', timeout: 3000 }); return; } catch { /* moved: again */ } } };
  await near('first', 'ledger'); await near('last', 'learn'); await page.evaluate(() => window.scrollTo(0, 0));
}
if (scroll) { await page.evaluate((y) => window.scrollTo(0, y), Number(scroll)); await page.waitForTimeout(800); }
if (process.env.SHOT_CLICK) { await page.locator(process.env.SHOT_CLICK).first().click(); await page.waitForTimeout(1500); }
if (process.env.SHOT_TO) { await page.locator(process.env.SHOT_TO).first().waitFor(); await page.locator(process.env.SHOT_TO).first().evaluate((e) => e.scrollIntoView({ block: 'start' })); await page.waitForTimeout(800); }
await page.screenshot({ path: out });
await browser.close(); server.close();
