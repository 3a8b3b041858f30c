#!/usr/bin/env bash
# Runs every test: native unit and doc tests, reference vectors, codec properties,
# the CLI, then a release build of the page tested in headless Chromium.
# Installs what is missing first. Prints the gzip size of what ships.
set -euo pipefail
bash "$(dirname "$0")/setup.sh"
source "$(dirname "$0")/env.sh"

# CI pins the property tests' seed, so a run is reproducible and cannot fail by the luck of
# the draw; local runs draw a new seed each time and keep exploring. Every failure found is
# kept in tests/*.proptest-regressions and replayed first on every run.
if [ "${CI:-}" = true ]; then export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261123}; fi
step cargo test --locked
# The op templates installed at run time (as the page does) on an estimator built without them.
step cargo test --locked -p memfit-core --no-default-features --test opstream_install
# Habits: clippy on every target (the native crates and the page's wasm), and no function over
# 80 lines outside the named data tables (tools/long_functions.py).
step cargo clippy --locked --workspace --all-targets -- -D warnings
step cargo clippy --locked --target wasm32-unknown-unknown --bin memfit-web --bin memfit-below --bin memfit-import --bin memfit-search --bin memfit-replay --bin memfit-modes -- -D warnings
step python3 tools/long_functions.py --check crates src
step trunk build --release
# The same page with the test-only panic trigger, for the panic-message browser test.
step trunk build --release --features panic-test --dist dist-panic-test

# At start: the first module, its glue and snippets, the CSS. After the first result is painted:
# the fewest-GPU search's module (src/search.rs), which its worker fetches. Later: the second
# module (the panels below the timeline), fetched when the reader nears them, and the third (the
# config.json importer's parser), fetched on the first import (src/ui/split.rs). When a run reads
# the op templates: the fifth (the op-level allocator, src/replay.rs) and the templates' text.
# When a scenario is not memfit's training (inference, serving, DeepSpeed's or Megatron's formula):
# the sixth (their ledgers, src/modes.rs).
total=0; search=0; later=0; import=0; templates=0; serve=0
for f in dist/*.wasm dist/*.js dist/*.css dist/snippets/*/*.js dist/op_templates.txt; do
  [ -f "$f" ] || continue
  raw=$(stat -c%s "$f"); gz=$(gzip -9c "$f" | wc -c)
  case "$(basename "$f")" in
    memfit-search*) search=$((search + gz));;
    memfit-below*) later=$((later + gz));;
    memfit-import*) import=$((import + gz));;
    memfit-replay*|op_templates.txt) templates=$((templates + gz));;
    memfit-modes*) serve=$((serve + gz));;
    *) total=$((total + gz));;
  esac
  echo "[memfit] size: $(basename "$f") ${raw} B raw, ${gz} B gzip -9"
done
echo "[memfit] size: shipped at start (wasm+js+css) ${total} B gzip -9; after the first result, the fewest-GPU search's worker: ${search} B; later, on approach: ${later} B; on the first import: ${import} B; when a run reads the op templates: ${templates} B; in inference, serving or another tool's convention: ${serve} B"

step node tests/e2e/browser.mjs dist "$CARGO_TARGET_DIR/debug/memfit" dist-panic-test

# Page speed, printed, never failing (machines are noisy): the issue-9 figures. Pass a gpu_poor
# build as MEMFIT_GPU_POOR=<dir> to measure it in the same run (see README, Performance).
step node tests/e2e/perf.mjs dist ${MEMFIT_GPU_POOR:-} --rounds 1 --loads 3 --changes 10 || echo "[memfit] perf harness failed (not a test failure)"
