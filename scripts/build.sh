#!/usr/bin/env bash
# Builds the page for a static host into dist/ (installs what is missing first).
#   bash scripts/build.sh            # relative paths: serve dist/ at / or any sub-path
#   bash scripts/build.sh /memfit/   # or pin an absolute base path
set -euo pipefail
MEMFIT_NEED_BROWSER=0 bash "$(dirname "$0")/setup.sh"
source "$(dirname "$0")/env.sh"
if [ $# -gt 0 ]; then
  step trunk build --release --public-url "$1"
else
  step trunk build --release
fi
echo "[memfit] dist/ is ready: copy it to any static host (see README, Deploy)."
