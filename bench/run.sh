#!/usr/bin/env bash
# Runs the benchmarks of docs/performance.md in their own build directory
# (build-d, buildtype release), after installing what they need beyond the
# default build (heaptrack, valgrind: benchmark-only, so not in
# scripts/deps.sh).  Run as root on Debian.
#
#   bash bench/run.sh                 every benchmark
#   bash bench/run.sh --suite writer  one suite (programs, writer, section, latency,
#                                     instructions, ...); any `meson test`
#                                     arguments pass through
#   MSTAT_BENCH_BEFORE=/path/to/base/libmstatshm.so.0 bash bench/run.sh --suite writer
#                                     the hot loop beside another build
#   MSTAT_BENCH_BEFORE=... MSTAT_BENCH_BEFORE_RUN=/path/to/base/mstat-run \
#     bash bench/run.sh --suite start  forks that exec() beside another build
#
# The full output is kept in build-d/meson-logs/benchmarklog.txt; the
# summary lines (BENCH ...) are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh heaptrack valgrind # benchmark-only packages
[ -d build-d ] || meson setup build-d --buildtype=release
meson compile -C build-d
out=build-d/bench-output.txt
meson test -C build-d --benchmark --verbose "$@" | tee "$out"
echo
echo "---- summary ($(nproc) CPUs, $(date -u +%FT%TZ)) ----"
grep -o 'BENCH .*' "$out" || true
