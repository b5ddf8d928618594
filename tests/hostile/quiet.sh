#!/usr/bin/env bash
# The library never writes to the program's descriptors unless asked.
# When the segment cannot be made (/dev/shm full, missing, read-only, not
# writable by the user) the program runs on uncounted and its stderr stays
# as it was; why is told by mstat_self_status(), by mstat-run, and, with
# MSTAT_LOG=stderr or MSTAT_LOG=FILE, in one line there.
# Each case runs in a private mount namespace (unshare -m, as root) with a
# small tmpfs of its own; without that the test is skipped.
# Usage: quiet.sh LIBMSTATSHM LEAKER MSTAT-RUN
set -euo pipefail
lib=$1 leaker=$2 run=$3
. "$(dirname "$0")/../shell.sh"
chmod 777 "$tmp"   # the log of a process of another user goes here too

if ! unshare -m true 2>/dev/null; then
	echo "SKIP: needs root for unshare -m"
	exit 77
fi

# in_ns SETUP RUNAS ENV PROG...: PROG, preloaded with ENV, after SETUP in a
# private mount namespace, as RUNAS; stdout to out, stderr to err.
in_ns() {
	local setup=$1 runas=$2 env=$3
	shift 3
	# Only the program itself starts with the library (not setpriv).
	unshare -m bash -c "set -e; $setup
		exec $runas env $env bash -c 'export LD_PRELOAD=\$0; exec \"\$@\"' $lib $(printf '%q ' "$@")" \
		>"$tmp/out" 2>"$tmp/err"
}

# case NAME SETUP [RUNAS]: the leaker and python3 work and say nothing;
# asked, they say one line where they were asked to; mstat-run says why.
# Nor does the segment that could not be made leave its error in errno:
# a malloc that succeeds leaves it alone.
case_() {
	local name=$1 setup=$2 runas=${3:-}
	for prog in "$leaker status" "/usr/bin/python3 -c print(6*7)"; do
		in_ns "$setup" "$runas" "" $prog || fail "$name: $prog exit $?: $(cat "$tmp/err")"
		[ ! -s "$tmp/err" ] || fail "$name: $prog: wrote to stderr: $(cat "$tmp/err")"
		case $prog in
		*python3*) [ "$(cat "$tmp/out")" = 42 ] || fail "$name: python3 printed $(cat "$tmp/out")" ;;
		*) grep -q '^status: not counting: .' "$tmp/out" || fail "$name: $(cat "$tmp/out")"
		   grep -q '^segments: 0' "$tmp/out" || fail "$name: a segment exists" ;;
		esac

		in_ns "$setup" "$runas" MSTAT_LOG=stderr $prog || fail "$name: $prog exit $?"
		[ "$(wc -l <"$tmp/err")" = 1 ] || fail "$name: $prog: MSTAT_LOG=stderr: not one line: $(cat "$tmp/err")"
		grep -q '^mstatshm: .*not counting: .' "$tmp/err" || fail "$name: $(cat "$tmp/err")"
		local said; said=$(tr -d 0-9 <"$tmp/err")  # but the pids

		rm -f "$tmp/log"
		in_ns "$setup" "$runas" MSTAT_LOG="$tmp/log" $prog || fail "$name: $prog exit $?"
		[ ! -s "$tmp/err" ] || fail "$name: $prog: MSTAT_LOG=FILE wrote to stderr: $(cat "$tmp/err")"
		[ "$(tr -d 0-9 <"$tmp/log")" = "$said" ] ||
			fail "$name: $prog: the log holds $(cat "$tmp/log" 2>&1), not $said"
	done
	in_ns "$setup" "$runas" "" $leaker errno 100000 1000 ||
		fail "$name: $(cat "$tmp/out") $(cat "$tmp/err")"
	[ "$(cat "$tmp/out")" = "errno kept" ] || fail "$name: $(cat "$tmp/out")"
	# mstat-run is a tool of its own: it says why on its stderr, and in
	# the summary.  (It is not preloaded; the command is.)
	unshare -m bash -c "set -e; $setup
		exec $runas $run --summary - -- $leaker status" >"$tmp/out" 2>"$tmp/err" ||
		fail "$name: mstat-run exit $?: $(cat "$tmp/err")"
	grep -q '"counted": false' "$tmp/out" || fail "$name: mstat-run: $(cat "$tmp/out")"
	grep -q '"reason": "not counting: .' "$tmp/out" || fail "$name: mstat-run reason: $(cat "$tmp/out")"
	grep -q '^mstat-run: .*not counting: .' "$tmp/err" || fail "$name: mstat-run said: $(cat "$tmp/err")"
	echo "ok: $name: $(tr -d 0-9 <"$tmp/err")"
}

case_ "full /dev/shm" "mount -t tmpfs -o size=64k mstat-test /dev/shm
	dd if=/dev/zero of=/dev/shm/filler bs=4k count=16 status=none 2>/dev/null || true"
case_ "/dev/shm with room for a part of the segment" \
	"mount -t tmpfs -o size=16k mstat-test /dev/shm"
case_ "no /dev/shm" "mount -t tmpfs -o size=1m mstat-test /dev"
case_ "read-only /dev/shm" "mount -t tmpfs -o ro,size=16m mstat-test /dev/shm"
case_ "/dev/shm not writable" "mount -t tmpfs -o size=16m,mode=755 mstat-test /dev/shm" \
	"setpriv --reuid=65534 --regid=65534 --clear-groups"

# A warning is as quiet: a bad MSTAT_SLOTS is ignored, and said when asked.
MSTAT_SLOTS=x LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "MSTAT_SLOTS=x: said $(cat "$tmp/err")"
grep -q '^status: counting into .*MSTAT_SLOTS ignored' "$tmp/out" || fail "MSTAT_SLOTS=x: $(cat "$tmp/out")"
MSTAT_LOG=stderr MSTAT_SLOTS=x LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
grep -q '^mstatshm: .*MSTAT_SLOTS ignored' "$tmp/err" || fail "MSTAT_SLOTS=x, asked: $(cat "$tmp/err")"

# MSTAT_DISABLE=1: no segment, nothing said; mstat-run says so.
MSTAT_DISABLE=1 LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "disabled: said $(cat "$tmp/err")"
grep -q '^status: disabled by MSTAT_DISABLE' "$tmp/out" || fail "disabled: $(cat "$tmp/out")"
grep -q '^segments: 0' "$tmp/out" || fail "disabled: a segment exists"
MSTAT_DISABLE=1 "$run" --summary - -- "$leaker" status >"$tmp/out" 2>"$tmp/err"
grep -q '"reason": "disabled by MSTAT_DISABLE' "$tmp/out" || fail "disabled, mstat-run: $(cat "$tmp/out")"

# MSTAT_LOG names a file the program appends to: never through a
# symbolic link planted under that name, never into a FIFO (whose open
# would wait for a reader, inside the program), never another user's.
echo victim >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/log-link"
MSTAT_LOG="$tmp/log-link" MSTAT_SLOTS=x LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/victim")" = victim ] || fail "MSTAT_LOG through a symbolic link: wrote $(cat "$tmp/victim")"
[ ! -s "$tmp/err" ] || fail "MSTAT_LOG through a symbolic link: said $(cat "$tmp/err")"
mkfifo "$tmp/log-fifo"
MSTAT_LOG="$tmp/log-fifo" MSTAT_SLOTS=x LD_PRELOAD="$lib" timeout 10 "$leaker" status \
	>"$tmp/out" 2>"$tmp/err" || fail "MSTAT_LOG a FIFO: exit $? (waited on it?)"
MSTAT_LOG="$tmp/log-new" MSTAT_SLOTS=x LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ "$(stat -c %a "$tmp/log-new")" = 600 ] || fail "MSTAT_LOG made mode $(stat -c %a "$tmp/log-new")"
grep -q 'MSTAT_SLOTS ignored' "$tmp/log-new" || fail "MSTAT_LOG=FILE: $(cat "$tmp/log-new")"

# And enabled, for contrast: one segment, nothing said.
LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "enabled: said $(cat "$tmp/err")"
grep -q '^segments: 1' "$tmp/out" || fail "enabled: $(cat "$tmp/out")"
echo ok
