#!/usr/bin/env bash
# Installs what building and testing memfit needs, skipping what is already present
# at the right version: the wasm32 target, trunk 0.21.14, wasm-bindgen-cli at
# Cargo.lock's version, npm's binaryen 132 + playwright-core + terser, Debian's chromium.
set -euo pipefail
source "$(dirname "$0")/env.sh"

TRUNK_VERSION=0.21.14   # 0.22.x needs rustc >= 1.96.1
WB_VERSION=$(sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;q}' Cargo.lock)

rustup target list --installed | grep -qx wasm32-unknown-unknown || step rustup target add wasm32-unknown-unknown
cargo clippy --version >/dev/null 2>&1 || step rustup component add clippy
# The long-function check (tools/long_functions.py) needs python3.
if ! command -v python3 >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  step $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive step $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq python3 >/dev/null
fi

need_browser=${MEMFIT_NEED_BROWSER:-1}
if [ "$need_browser" = 1 ] && { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; }; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  step $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive step $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq chromium chromium-driver >/dev/null
fi

pids=()
if ! trunk --version 2>/dev/null | grep -qx "trunk $TRUNK_VERSION"; then
  # A debug build of trunk is enough (it only orchestrates) and builds in a third of the time.
  ( CARGO_TARGET_DIR="$HOME/.cache/memfit-tools-target" step cargo install --locked --debug trunk --version "$TRUNK_VERSION" ) & pids+=($!)
fi
if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $WB_VERSION"; then
  # --locked fails on this registry (webpki-roots 1.0.11 missing); the unlocked install works.
  ( export CARGO_TARGET_DIR="$HOME/.cache/memfit-tools-target2"
    step cargo install --locked wasm-bindgen-cli --version "=$WB_VERSION" \
      || step cargo install wasm-bindgen-cli --version "=$WB_VERSION" ) & pids+=($!)
fi
if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/terser ]; then
  step npm ci --no-audit --no-fund --loglevel=error
fi
step cargo fetch --locked
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
[ $rc = 0 ] || { echo "[memfit] a tool install failed" >&2; exit 1; }
echo "[memfit] tools: $(trunk --version), $(wasm-bindgen --version), wasm-opt $(wasm-opt --version | head -1), $(chromium --version 2>/dev/null | tail -1)"
