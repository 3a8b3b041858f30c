# Shared environment for scripts/*.sh (sourced, not run).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
export CARGO_TERM_COLOR=never TRUNK_SKIP_VERSION_CHECK=true
# One target dir outside the clone, so a fresh clone on the same machine reuses builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memfit-target}"
step() { local s=$SECONDS; echo "[memfit] >>> $*"; "$@"; local rc=$?; echo "[memfit] <<< $* ($((SECONDS - s))s, exit $rc)"; return $rc; }
