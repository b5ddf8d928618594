#!/usr/bin/env bash
# The walk of one mstat-top tick, or of one malloc+free in the preloaded
# library (bench/walk.py): the source files the calls go through, and how
# often the walk comes back to a file it had left.  Not a benchmark of
# speed: a measure of how the code is laid out.  Needs gdb and a private
# /dev/shm (/work/tools/iso, or a machine of one's own):
#   meson setup build-walk --buildtype=debug
#   ninja -C build-walk top/mstat-top demo/mstat-demo-workload \
#       bench/mstat-bench-pairs lib/libmstatshm.so.0.1.0
#   bash bench/walk.sh build-walk walk.txt            # one tick
#   MODE=malloc bash bench/walk.sh build-walk walk.txt  # one malloc+free
# The tick: the second tick of `mstat-top -b -n 2` over one target; TICK
# names the tick function; GONE=1 kills the target just before the tick
# walked, which then finds it gone.  The malloc+free: the 500th malloc of
# the hot loop (bench/pairs.c, one thread, sampling off so that the pair
# walked is never a sample) and the free after it, on the inline paths.
# EXT=c,h counts the functions of headers as files of their own.
set -euo pipefail
b=$1
out=${2:-walk.txt}
here=$(dirname "$0")
export WALK_OUT=$out WALK_EXT=${EXT:-c}
if [ "${MODE:-tick}" = malloc ]; then
	MSTAT_EAGER=1 MSTAT_SAMPLE_BYTES=0 MSTAT_NAME=walk \
		WALK_PRELOAD=$b/lib/libmstatshm.so WALK_DIRS=lib,shm \
		WALK_TICK=malloc WALK_END=free WALK_NTH=500 \
		gdb -q -batch -x "$here/walk.py" \
		--args "$b/bench/mstat-bench-pairs" --variant plain --threads 1 \
		--iters 4096 >/dev/null 2>&1
	tail -n 1 "$out"
	exit 0
fi
top=${TOP:-$b/top/mstat-top}
LD_PRELOAD=$b/lib/libmstatshm.so MSTAT_EAGER=1 MSTAT_NAME=walk \
	"$b/demo/mstat-demo-workload" steady &
pid=$!
trap 'kill $pid 2>/dev/null; wait' EXIT
sleep 0.5
WALK_KILL=${GONE:+$pid} WALK_TICK=${TICK:-mstat_core_tick} gdb -q -batch \
	-x "$here/walk.py" --args "$top" -b -n 2 -d 0.1 -p "$pid" -o json \
	>/dev/null 2>&1
tail -n 1 "$out"
