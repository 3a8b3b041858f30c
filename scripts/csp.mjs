// Trunk post-build hook: adds the Content-Security-Policy <meta> to index.html.
//
// The page's only inline script is Trunk's wasm loader; it is allowed by its SHA-256
// hash (computed here, after Trunk wrote it), so a release policy needs no 'unsafe-inline'.
// Allowed: the page's own files ('self'), WebAssembly compilation ('wasm-unsafe-eval'),
// workers from blob: URLs (the explorer's, whose script is a string in the wasm), data: images (the inlined favicon), and one outside origin, the Hugging Face Hub, for
// the config.json fetch a user asks for. Debug builds (what `trunk serve` makes) allow
// inline scripts instead of hashing them, because the dev server injects its autoreload
// script after this hook has run, and its websocket; release builds stay strict.
import { readFile, writeFile, access, readdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { minify } from 'terser';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) throw new Error('csp.mjs runs as a Trunk post_build hook (TRUNK_STAGING_DIR is unset)');
const file = join(dir, 'index.html');
let html = await readFile(file, 'utf8');
const debug = process.env.TRUNK_PROFILE === 'debug';

// Release builds ship wasm-bindgen's JS glue minified (terser, ES module: exports and the
// wasm imports' property names kept): the first module's glue is 52.7 kB raw, 8.9 kB gzip -9,
// and 23.4 kB, 6.6 kB minified (2026-11-28). Done before the integrity values below.
if (!debug) {
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.js'))) {
    const path = join(dir, name);
    const out = await minify(await readFile(path, 'utf8'), { module: true, compress: true, mangle: true });
    if (!out.code) throw new Error(`csp.mjs: terser returned nothing for ${name}`);
    await writeFile(path, out.code);
  }
}

// Subresource integrity, checked against the files as they ended up. Trunk builds the page's
// wasm binaries in parallel and each runs wasm-bindgen into one shared output folder, so a
// snippet (src/ui/split.rs's inline `import()`) can be hashed while another run has just
// truncated it: the page then carries the SHA-384 of an empty file and the browser blocks the
// snippet (seen 2026-11-27 with six binaries). Every integrity value is recomputed here.
const exists = (p) => access(p).then(() => true, () => false);
async function localPath(url) {
  const parts = url.split(/[?#]/)[0].replace(/^\.\//, '').split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const p = join(dir, ...parts.slice(i));
    if (await exists(p)) return p;
  }
  return null;
}
let fixed = 0;
for (const m of [...html.matchAll(/<(?:link|script)\b[^>]*?(?:href|src)="([^"]+)"[^>]*?integrity="(sha(?:256|384|512))-([^"]+)"[^>]*>/g)]) {
  const path = await localPath(m[1]);
  if (!path) continue;
  const bytes = await readFile(path);
  if (bytes.length === 0) throw new Error(`csp.mjs: ${m[1]} is empty (a wasm-bindgen run truncated it); build again`);
  const want = createHash(m[2]).update(bytes).digest('base64');
  if (want !== m[3]) {
    html = html.replace(`${m[2]}-${m[3]}`, `${m[2]}-${want}`);
    fixed += 1;
  }
}
if (fixed) console.log(`csp.mjs: ${fixed} integrity value(s) recomputed from the files`);
const inline = [...html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/g)].filter((m) => !/\ssrc=/.test(m[1] ?? ''));
const hashes = inline.map((m) => `'sha256-${createHash('sha256').update(m[2], 'utf8').digest('base64')}'`);
const policy = [
  "default-src 'none'",
  `script-src 'self' 'wasm-unsafe-eval' ${debug ? "'unsafe-inline'" : hashes.join(' ')}`.trim(),
  // The layout explorer's Web Worker is made from a blob: of its script (src/ui/worker.rs).
  "worker-src blob:",
  "style-src 'self'",
  "img-src 'self' data:",
  `connect-src 'self' https://huggingface.co${debug ? ' ws://127.0.0.1:* ws://localhost:*' : ''}`,
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "object-src 'none'",
].join('; ');
const meta = `<meta http-equiv="Content-Security-Policy" content="${policy}" />`;
if (html.includes('http-equiv="Content-Security-Policy"')) throw new Error('index.html already has a CSP');
// The policy must precede every script it governs: right after <meta charset>.
html = html.replace(/(<meta charset="utf-8" \/>)/, `$1\n  ${meta}`);
if (!html.includes(meta)) throw new Error('no <meta charset="utf-8" /> to put the CSP after');
await writeFile(file, html);
console.log(`csp.mjs: ${inline.length} inline script(s) hashed into the policy`);
