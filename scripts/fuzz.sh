#!/usr/bin/env bash
# Fuzzes the query decoder and the config.json importer for a bounded time each.
# Not run by CI (it needs nightly Rust and minutes of CPU). Installs what is missing:
# the nightly toolchain and cargo-fuzz. The corpus lives in fuzz/corpus/<target>/;
# crashes land in fuzz/artifacts/<target>/.
#   bash scripts/fuzz.sh [seconds per target, default 60]
set -euo pipefail
source "$(dirname "$0")/env.sh"
secs=${1:-60}
rustup toolchain list | grep -q '^nightly' || step rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || step cargo install cargo-fuzz
cd fuzz
for target in decode hf_config; do
  # -max_len 4096: queries and configs are small; longer inputs only slow the search.
  CARGO_TARGET_DIR="$PWD/target" step cargo +nightly fuzz run "$target" "corpus/$target" -- \
    -max_total_time="$secs" -max_len=4096 -print_final_stats=1 2>&1 | grep -E "stat::|Done|ERROR|SUMMARY|panicked|Crash" || true
done
