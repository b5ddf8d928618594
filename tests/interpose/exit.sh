#!/usr/bin/env bash
# The exit is counted to its end: frees made by a library's destructor
# finalised after libmstatshm, by atexit and at_quick_exit handlers, by
# a thread a destructor starts, around a vfork, before an _exit() called
# from a destructor, all in mstat-run's summary and in mstat-top's row of
# the process once it is gone; and a process killed during its exit is
# `killed`, with what it freed until then.
# Usage: exit.sh MSTAT_RUN MSTAT_TOP LIBMSTATSHM LATE
set -euo pipefail
. "$(dirname "$0")/../shell.sh"
run=$1 top=$2 lib=$3 late=$4

# summary MODE: the summary of `late MODE` in $tmp/MODE.json, its exit
# status in $rc and its usable block size in $usable.
summary() {
	"$run" --summary "$tmp/$1.json" -- "$late" "$1" >"$tmp/$1.out" && rc=0 || rc=$?
	usable=$(sed -n 's/^usable //p' "$tmp/$1.out")
}

# check MODE STATE SIGNAL FREED [THREAD]: against `late keep`, the class
# of the 1000-byte blocks has the same allocations and FREED more frees,
# the class of the thread's 3000-byte blocks THREAD more of each; the
# process ended as STATE, by SIGNAL (0: exited), and nothing was cut.
check() {
	python3 - "$tmp/keep.json" "$tmp/$1.json" "$usable" "$2" "$3" "$4" "${5:-0}" <<'PY'
import json, sys
keep, got = (json.load(open(f)) for f in sys.argv[1:3])
usable, state, sig, freed, thread = sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
usable = int(usable)
def cls(s, size):
    # the class of a block of `size` usable bytes: the smallest whose bound
    # holds it, among both summaries' (a class not counted in is zeros)
    sizes = {c["size"] for x in (keep, got) for c in x["process"]["classes"]
             if c["size"] is not None and c["size"] >= size}
    bound = min(sizes)
    return next((c for c in s["process"]["classes"] if c["size"] == bound),
                {"alloc_count": 0, "free_count": 0, "free_bytes": 0})
p = got["process"]
assert got["counted"] is True, got
assert p["state"] == state, (p["state"], state)
assert got["exit"] == ({"signal": sig} if sig else {"code": 0}), got["exit"]
assert got["cut"] == 0, got["cut"]
a, b = cls(keep, usable), cls(got, usable)
assert b["alloc_count"] == a["alloc_count"], (a, b)
assert b["free_count"] - a["free_count"] == freed, (a, b, freed)
assert b["free_bytes"] - a["free_bytes"] == freed * usable, (a, b, freed)
if thread:
    t = cls(got, 3000)
    t0 = cls(keep, 3000)
    assert t["alloc_count"] - t0["alloc_count"] == thread, (t0, t)
    assert t["free_count"] - t0["free_count"] == thread, (t0, t)
for c in p["classes"] + [p]:
    assert c["free_count"] <= c["alloc_count"], c
PY
}

summary keep
[ "$rc" = 0 ] || fail "keep: exit status $rc"
for m in dtor atexit quick_exit _exit vfork; do
	summary $m
	[ "$rc" = 0 ] || fail "$m: exit status $rc"
	check $m exited 0 100 || fail "$m: $(cat "$tmp/$m.json")"
done
summary thread
[ "$rc" = 0 ] || fail "thread: exit status $rc"
check thread exited 0 100 10 || fail "thread: $(cat "$tmp/thread.json")"
# Killed inside an update of its exiting thread: `killed`, that update
# cut, and nothing of it counted half (frees never exceed allocations).
summary busy
[ "$rc" = 137 ] || fail "busy: exit status $rc"
python3 - "$tmp/busy.json" <<'PY' || fail "busy: $(cat "$tmp/busy.json")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["process"]
assert s["counted"] is True and p["state"] == "killed" and s["cut"] == 1, s
assert s["exit"] == {"signal": 9}, s["exit"]
for c in p["classes"] + [p]:
    assert c["free_count"] <= c["alloc_count"], c
PY
# A snapshot of itself once its segment's name is gone (the exit has
# begun): the destructor's frees, and `exiting`.
summary self
[ "$rc" = 0 ] || fail "self: exit status $rc"
check self exited 0 100 || fail "self: $(cat "$tmp/self.json")"
python3 - "$tmp/self.json" "$tmp/self.out" "$usable" <<'PY' || fail "self: $(cat "$tmp/self.out")"
import json, sys
s = json.load(open(sys.argv[1]))
usable = int(sys.argv[3])
said = [l.split() for l in open(sys.argv[2]) if l.startswith("self ")]
assert said, "no snapshot"
frees, state = int(said[0][1]), int(said[0][2])
c = min((c for c in s["process"]["classes"] if c["size"] >= usable), key=lambda c: c["size"])
assert frees == c["free_count"], (frees, c)
assert state == 2, state  # MSTAT_EXITING
PY
# Killed during its exit: what it freed until then, and `killed`.
summary kill
[ "$rc" = 137 ] || fail "kill: exit status $rc"
check kill killed 9 50 || fail "kill: $(cat "$tmp/kill.json")"

# mstat-top: a process seen while its destructor runs is `exiting`; once
# gone, its row is `exited` with the destructor's frees.  Each step waits
# for what the one before must have made: `late` saying where it is, or
# mstat-top having printed a tick that shows it, however long a busy
# machine takes.
rm -f "$tmp/in" "$tmp/out"
mkfifo "$tmp/in" "$tmp/out"
MSTAT_EAGER=1 LD_PRELOAD=$lib "$late" wait <"$tmp/in" >"$tmp/out" &
pid=$!
exec 3>"$tmp/in" 4<"$tmp/out"
said() { # WORD: the next line `late` says, which must begin with WORD
	local line
	read -r line <&4 || fail "wait: ended before it said $1"
	[[ $line == "$1"* ]] || fail "wait: said $line, not $1"
	echo "$line"
}
usable=$(said usable)
usable=${usable#usable }
"$top" -b -o json -d 0.1 -p "$pid" >"$tmp/top.json" 3>&- 4<&- &
top_pid=$!
until_shown() { # STATE: until mstat-top has printed a tick showing it
	until grep -q "\"state\":\"$1\"" "$tmp/top.json"; do
		kill -0 "$top_pid" 2>/dev/null || fail "mstat-top ended: $(tail -n 1 "$tmp/top.json")"
		sleep 0.05
	done
}
until_shown running
printf x >&3
said exiting >/dev/null
until_shown exiting
exec 3>&- 4<&-
wait "$pid"
until_shown exited
kill "$top_pid"
wait "$top_pid" 2>/dev/null || true
python3 - "$tmp/top.json" "$pid" "$usable" <<'PY' || fail "mstat-top: $(tail -n 1 "$tmp/top.json")"
import json, sys
pid, usable = int(sys.argv[2]), int(sys.argv[3])
rows = [p for l in open(sys.argv[1]) for p in json.loads(l)["processes"] if p["pid"] == pid]
def cls(p):
    c = [c for c in p["classes"] if c["size"] is None or c["size"] >= usable]
    return min(c, key=lambda c: c["size"] if c["size"] is not None else 2**64)
exiting = [p for p in rows if p["state"] == "exiting"]
assert exiting, [p["state"] for p in rows]
last = rows[-1]
assert last["state"] == "exited", last["state"]
assert cls(last)["free_count"] - cls(exiting[0])["free_count"] == 100, (cls(exiting[0]), cls(last))
assert last["end_time_s"] is not None
PY
echo ok
