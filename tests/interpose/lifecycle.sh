#!/usr/bin/env bash
# No segment outlives its process, a footprint that scales with threads,
# and a full /dev/shm that hurts nobody.  In a private mount namespace with
# a /dev/shm of its own (unshare -m, as root; skipped otherwise), so that
# what is left there is exactly what these processes left.
# Usage: lifecycle.sh LIBMSTATSHM ENDER MSTAT_RUN MSTAT_TOP
set -euo pipefail
. "$(dirname "$0")/../shell.sh"
lib=$1 ender=$2 run=$3 top=$4
if [ -z "${MSTAT_LIFECYCLE_PRIVATE:-}" ]; then
	if ! unshare -m true 2>/dev/null; then
		echo "SKIP: needs root for a private /dev/shm (unshare -m)"
		exit 77
	fi
	unshare -m env MSTAT_LIFECYCLE_PRIVATE=1 bash "$0" "$@"
	exit
fi
mount -t tmpfs -o size=64m,mode=1777 mstat-lifecycle /dev/shm
ulimit -c 0
segs() { ls /dev/shm; }
none_left() { [ -z "$(segs)" ] || fail "$1: left $(segs | tr '\n' ' ')"; }
# MSTAT_EAGER=1: each process makes its segment at start.  By default a
# process that ends within milliseconds never makes one (see below), and
# nothing here would test the way it ends.
pre() { MSTAT_EAGER=1 LD_PRELOAD=$lib "$@"; }

# Every way out that runs code: nothing is left, at once.
for m in exit _exit _Exit return quick_exit exec-fail fork-_exit vfork-_exit; do
	pre "$ender" "$m" >/dev/null || fail "$m: exit status $?"
	none_left "$m"
done

# Death by a signal runs nothing: the segment stays, its owner lock gone.
# It is a killed process's: the next process that makes its segment
# keeps it for the grace (MSTAT_KILLED_GRACE, 300 s by default), for
# readers that were not running when it died; with a grace of 0 it
# removes it.
# The header's killed_s (shm/layout.h): when it was first found killed,
# by whoever found it first: this /dev/shm is private to the processes
# here, but a reader of every namespace (mstat-top or mstat-exporter run
# on this machine, as root) reads it too, and keeps what it finds killed
# for the grace as they do, writing killed_s if it is first.
killed_s() {
	python3 - "$1" <<'PY'
import struct, sys
hdr = open(sys.argv[1], "rb").read(4096)
print(struct.unpack_from("<I", hdr, 340)[0]) # MSTAT_KILLED_S_OFFSET
PY
}
for m in abort segv term kill; do
	pre "$ender" "$m" 2>/dev/null && fail "$m: exit status 0"
	[ "$(segs | wc -l)" = 1 ] || fail "$m: $(segs | wc -l) segments left"
	seg=/dev/shm/$(segs)
	pre /bin/true
	[ "$(segs | wc -l)" = 1 ] || fail "$m: not kept for the grace by a new process"
	[ "$(killed_s "$seg")" != 0 ] || fail "$m: the new process wrote no killed_s"
	MSTAT_KILLED_GRACE=0 pre /bin/true
	none_left "$m, once another process started with a grace of 0"
done

# The grace counts from when it was first found killed, not from each
# look: a process that looks within it keeps it, one that looks once it
# is over removes it.  (A grace of an hour: whoever found it first, a
# reader of every namespace too, found it after this kill.)
pre "$ender" kill 2>/dev/null || true
MSTAT_KILLED_GRACE=3600 pre /bin/true
[ "$(segs | wc -l)" = 1 ] || fail "grace 3600: removed at once"
sleep 2
MSTAT_KILLED_GRACE=1 pre /bin/true
none_left "grace 1, 2 s after it was found killed"

# The byte bound: three killed segments found a second apart; with room
# for two, a process that starts removes the oldest, and keeps the others.
for i in 1 2 3; do
	pre "$ender" kill 2>/dev/null || true
	pre /bin/true # finds it killed now
	eval "seg$i=\$(ls -t /dev/shm | head -1)"
	[ $i = 3 ] || sleep 1.1
done
[ "$(segs | wc -l)" = 3 ] || fail "bytes: $(segs | tr '\n' ' ')kept, not 3"
room=$(( ($(stat -c %b "/dev/shm/$seg2") + $(stat -c %b "/dev/shm/$seg3")) * 512 ))
MSTAT_KILLED_BYTES=$room pre /bin/true
[ -e "/dev/shm/$seg1" ] && fail "bytes: the oldest killed segment was kept"
[ -e "/dev/shm/$seg2" ] && [ -e "/dev/shm/$seg3" ] ||
	fail "bytes: a younger killed segment was removed: $(segs | tr '\n' ' ')"
MSTAT_KILLED_GRACE=0 pre /bin/true
none_left "the killed segments, with a grace of 0"

# A process in another pid namespace: its pid there (1) exists here too,
# so starting processes leave it to observers, whose tick removes it.
if unshare -p --fork true 2>/dev/null; then
	pre unshare -p --fork "$ender" exit
	none_left "exit in another pid namespace"
	# Not pid 1 there, which SIGKILL from itself does not end.
	pre unshare -p --fork sh -c '"$0" kill; true' "$ender" 2>/dev/null || true
	[ "$(segs | wc -l)" = 1 ] ||
		fail "killed in another pid namespace: left $(segs | tr '\n' ' ')"
	MSTAT_KILLED_GRACE=0 "$top" -b -n 1 >/dev/null 2>&1
	none_left "killed in another pid namespace, after a tick"
fi

# A shell's every command: 1000 runs leave /dev/shm as it was, each
# making its segment and removing it.  And by default, a command that ends
# at once never makes one: one that counts 10 ms after it started does
# (lib/shared.c), which a busy machine makes of any command, so each run
# is judged by its own time.  A run shorter than 10 ms, less a tick of
# the coarse clock the library reads, must have made no segment (the
# directory's mtime says whether one was made and removed).  Up to 300
# runs, until 20 were that short; a machine so busy that fewer were
# cannot tell, and says so.
for i in $(seq 1000); do
	pre dash -c true
done
none_left "1000 runs of dash -c true"
python3 - "$lib" <<'PY' || fail "dash -c true made segments without MSTAT_EAGER"
import os, subprocess, sys, time
env = dict(os.environ, LD_PRELOAD=sys.argv[1])
env.pop("MSTAT_EAGER", None)
bound = 0.010 - time.clock_getres(6)  # CLOCK_MONOTONIC_COARSE
runs = short = made = 0
while runs < 300 and short < 20:
    before = os.stat("/dev/shm").st_mtime_ns
    t = time.monotonic()
    subprocess.run(["dash", "-c", "true"], env=env, check=True)
    took = time.monotonic() - t
    runs += 1
    if took < bound:
        short += 1
        made += os.stat("/dev/shm").st_mtime_ns != before
print("dash -c true: %d of %d runs under %.1f ms, %d of them made a segment%s"
      % (short, runs, bound * 1e3, made,
         "" if short >= 20 else ": too busy a machine to tell"))
sys.exit(1 if made else 0)
PY

# Each process below is waited for before /dev/shm is looked at: its
# exit unlinks its segment, and once it is gone nothing of it is left,
# at once.  (Waiting for the files to go instead waits for the unlink,
# which comes first in the exit: the process may still map the segment,
# and keep /dev/shm busy, for as long as a busy machine makes it.)

# By default, a process that counts again once it has lived 10 ms makes
# its segment then (measured by the coarse clock, 4 ms a tick here).
start_waiting env LD_PRELOAD="$lib" "$ender" late
[ "$(segs | wc -l)" = 1 ] || fail "a process 30 ms old: no segment"
exec 3>&- 4<&-
wait $!
none_left "a process 30 ms old, once it exited"

# mstat-run killed: its command runs on, counting, and leaves nothing.
start_waiting "$run" -- "$ender" wait
run_pid=$!
cmd_pid=$(cat "/proc/$run_pid/task/$run_pid/children")
kill -9 "$run_pid"
wait "$run_pid" 2>/dev/null || true
[ "$(segs | wc -l)" = 1 ] || fail "the command of a killed mstat-run: not counting"
exec 3>&- 4<&-
wait_gone $cmd_pid
none_left "the command of a killed mstat-run, once it exited"

# Footprint: a process with one thread, and with eight: the slots' pages.
# Without sampling: a sample the threads happen to take touches a page of
# the profile's region too (one run in a dozen went 4 KiB over so).
one=$(MSTAT_SAMPLE_BYTES=0 pre "$ender" threads 0 | sed -n 's/^footprint //p')
eight=$(MSTAT_SAMPLE_BYTES=0 pre "$ender" threads 7 | sed -n 's/^footprint //p')
[ "$one" -gt 0 ] && [ "$one" -le 65536 ] ||
	fail "one thread holds $one bytes of /dev/shm"
[ "$eight" -le $((65536 + 7 * 24576)) ] ||
	fail "eight threads hold $eight bytes of /dev/shm"
echo "ok: footprint: one thread $one bytes, eight threads $eight bytes"

# A full /dev/shm: room for the segment and one thread's slot.  The other
# threads count through the shared slot, exactly, and nobody gets SIGBUS.
# Every process started above has ended; the old /dev/shm is detached
# lazily all the same: the descriptor the command of the killed mstat-run
# sent it, in flight when mstat-run died, is released by the kernel's
# collector of such descriptors, on its own time (on a busy machine, 2
# runs of 8 found the file system busy then, and none without that
# case).
umount --lazy /dev/shm
mount -t tmpfs -o size=56k,mode=1777 mstat-lifecycle /dev/shm
out=$(pre "$ender" exact 8) || fail "full /dev/shm: exit status $?: $out"
[ "$out" = "exact slots_used 2 overflowed 8" ] || fail "full /dev/shm: $out"
none_left "full /dev/shm"
echo ok
