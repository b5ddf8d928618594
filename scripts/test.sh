#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole default test suite.
# Extra arguments go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -d build ] || meson setup build
meson compile -C build
meson test -C build --print-errorlogs "$@"
