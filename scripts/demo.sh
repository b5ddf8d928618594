#!/usr/bin/env bash
# Installs dependencies, builds, starts demo workloads and watches them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -d build ] || meson setup build
meson compile -C build
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
MSTAT_NAME=steady ./build/demo/mstat-demo-workload steady & pids+=($!)
MSTAT_NAME=leaky ./build/demo/mstat-demo-workload leaking & pids+=($!)
sleep 0.5
./build/demo/mstat-peek "${pids[@]}"
