#!/usr/bin/env bash
# A copy of dist/ whose wasm keeps its function names (for CPU profiles: tests/e2e/profile.mjs
# dist-prof). Run after `trunk build --release`; same code, wasm-opt -Oz -g instead of -Oz.
set -euo pipefail
source "$(dirname "$0")/env.sh"
out=${1:-dist-prof}
rm -rf "$out" && mkdir -p "$out"
wasm-bindgen --target web --keep-debug --out-dir "$out/wb" "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/memfit-web.wasm"
wasm-opt -Oz -g --enable-bulk-memory --enable-nontrapping-float-to-int --enable-reference-types \
  "$out/wb/memfit-web_bg.wasm" -o "$out/memfit-web_bg.wasm"
cp "$out/wb/memfit-web.js" "$out/memfit-web.js" && rm -rf "$out/wb"
cp dist/*.css "$out/"
# The first module's inline snippet (src/ui/split.rs) and the modules it loads later (the search's
# worker, the panels below, the importer, the op-level allocator and its templates), as built: without the snippet the page does not start.
cp -r dist/snippets "$out/"
cp dist/memfit-search* dist/memfit-below* dist/memfit-import* dist/memfit-replay* dist/memfit-modes* dist/op_templates.txt "$out/"
# dist's index.html, pointed at the un-hashed files, without integrity attributes and CSP.
sed -E -e 's/memfit-web-[0-9a-f]+/memfit-web/g' -e 's/ integrity="[^"]*"//g' \
  -e 's/<meta http-equiv="Content-Security-Policy"[^>]*>//' dist/index.html > "$out/index.html"
echo "profiling build in $out/"
