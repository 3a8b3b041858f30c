// Serves a dist/ directory with gzip (as a real static host would), for Lighthouse.
// usage: node tests/e2e/serve-gzip.mjs [dist] [port]
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { extname, join, normalize } from 'node:path';
const dist = process.argv[2] ?? 'dist';
const port = Number(process.argv[3] ?? 8090);
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
  const file = join(dist, path === '/' ? 'index.html' : path);
  try {
    const body = await readFile(file);
    const gz = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
    res.writeHead(200, {
      'content-type': types[extname(file)] ?? 'application/octet-stream',
      // Hashed file names never change: cache them for a year; the page itself revalidates.
      'cache-control': extname(file) === '.html' ? 'no-cache' : 'public, max-age=31536000, immutable',
      ...(gz ? { 'content-encoding': 'gzip' } : {}),
    });
    res.end(gz ? gzipSync(body, { level: 9 }) : body);
  } catch { res.writeHead(404); res.end('not found'); }
}).listen(port, '127.0.0.1', () => console.log(`serving ${dist} gzip on http://127.0.0.1:${port}/`));
