#!/usr/bin/env bash
# Serves the app at http://127.0.0.1:8080 with live reload (installs what is missing first).
set -euo pipefail
MEMFIT_NEED_BROWSER=0 bash "$(dirname "$0")/setup.sh"
source "$(dirname "$0")/env.sh"
exec trunk serve "$@"
