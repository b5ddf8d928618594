#!/usr/bin/env bash
# The walk of one mstat-top tick (bench/walk.py): the source files the
# second tick's calls go through, over one target, and how often the walk
# comes back to a file it had left.  Not a benchmark of speed: a measure
# of how the code is laid out.  Needs gdb and a private /dev/shm
# (/work/tools/iso, or a machine of one's own):
#   meson setup build-walk --buildtype=debug
#   ninja -C build-walk top/mstat-top demo/mstat-demo-workload lib/libmstatshm.so.0.1.0
#   bash bench/walk.sh build-walk walk.txt
# TICK names the tick function; GONE=1 kills the target just before the
# tick walked, which then finds it gone.
set -euo pipefail
b=$1
out=${2:-walk.txt}
top=${TOP:-$b/top/mstat-top}
LD_PRELOAD=$b/lib/libmstatshm.so MSTAT_EAGER=1 MSTAT_NAME=walk \
	"$b/demo/mstat-demo-workload" steady &
pid=$!
trap 'kill $pid 2>/dev/null; wait' EXIT
sleep 0.5
WALK_KILL=${GONE:+$pid} WALK_TICK=${TICK:-mstat_core_tick} WALK_OUT=$out gdb -q -batch -x "$(dirname "$0")/walk.py" \
	--args "$top" -b -n 2 -d 0.1 -p "$pid" -o json >/dev/null 2>&1
tail -n 1 "$out"
