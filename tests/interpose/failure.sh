#!/usr/bin/env bash
# When the segment cannot be made, the program runs on uncounted, with
# exactly one line on stderr: /dev/shm full, missing, read-only, not
# writable by the user.  MSTAT_DISABLE=1 makes no segment and says nothing.
# Each case runs in a private mount namespace (unshare -m, as root) with a
# small tmpfs of its own; without that the test is skipped.
# Usage: failure.sh LIBMSTATSHM LEAKER
set -euo pipefail
# Under valgrind (meson test --setup valgrind) the interposer never runs
# (valgrind replaces malloc everywhere) and bash reports its own leaks:
# skip, from a process that is not bash.
[[ ${LD_PRELOAD:-} != *vgpreload* ]] ||
	exec /bin/sh -c 'echo "SKIP: valgrind replaces malloc everywhere"; exit 77'
lib=$1 leaker=$2
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! unshare -m true 2>/dev/null; then
	echo "SKIP: needs root for unshare -m"
	exit 77
fi

# case NAME SETUP [RUNAS]: runs the leaker and python3, preloaded, after
# SETUP in a private mount namespace; both must work, say one line.
case_() {
	local name=$1 setup=$2 runas=${3:-}
	for prog in "$leaker status" "/usr/bin/python3 -c print(6*7)"; do
		# Only prog itself starts with the library (not setpriv).
		unshare -m bash -c "set -e; $setup
			exec $runas bash -c 'export LD_PRELOAD=\$0; exec \"\$@\"' $lib $(printf '%q ' $prog)" \
			>"$tmp/out" 2>"$tmp/err" || fail "$name: $prog exit $?: $(cat "$tmp/err")"
		[ "$(wc -l <"$tmp/err")" = 1 ] || fail "$name: $prog: stderr is not one line: $(cat "$tmp/err")"
		grep -q '^mstatshm: .*not counting' "$tmp/err" || fail "$name: $(cat "$tmp/err")"
		case $prog in
		*python3*) [ "$(cat "$tmp/out")" = 42 ] || fail "$name: python3 printed $(cat "$tmp/out")" ;;
		*) grep -q '^status: not counting' "$tmp/out" || fail "$name: $(cat "$tmp/out")"
		   grep -q '^segments: 0' "$tmp/out" || fail "$name: a segment exists" ;;
		esac
	done
	echo "ok: $name: $(cat "$tmp/err")"
}

case_ "full /dev/shm" "mount -t tmpfs -o size=64k mstat-test /dev/shm
	dd if=/dev/zero of=/dev/shm/filler bs=4k count=16 status=none 2>/dev/null || true"
case_ "/dev/shm with room for a part of the segment" \
	"mount -t tmpfs -o size=16k mstat-test /dev/shm"
case_ "no /dev/shm" "mount -t tmpfs -o size=1m mstat-test /dev"
case_ "read-only /dev/shm" "mount -t tmpfs -o ro,size=16m mstat-test /dev/shm"
case_ "/dev/shm not writable" "mount -t tmpfs -o size=16m,mode=755 mstat-test /dev/shm" \
	"setpriv --reuid=65534 --regid=65534 --clear-groups"

# MSTAT_DISABLE=1: no segment, nothing said.
MSTAT_DISABLE=1 LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "disabled: said $(cat "$tmp/err")"
grep -q '^status: disabled by MSTAT_DISABLE' "$tmp/out" || fail "disabled: $(cat "$tmp/out")"
grep -q '^segments: 0' "$tmp/out" || fail "disabled: a segment exists"

# And enabled, for contrast: one segment, nothing said.
LD_PRELOAD="$lib" "$leaker" status >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "enabled: said $(cat "$tmp/err")"
grep -q '^segments: 1' "$tmp/out" || fail "enabled: $(cat "$tmp/out")"
echo ok
