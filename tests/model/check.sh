#!/usr/bin/env bash
# Model-checks protocol.pml with Spin: the protocol must have no error;
# each broken variant must have one (so the model can fail).
#   check.sh [spin-define...]   e.g. check.sh -DN=3
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v spin >/dev/null || { echo "spin is not installed (apt-get install spin)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() { # name expect(0|fail) defines...
	local name=$1 expect=$2; shift 2
	mkdir -p "$work/$name"
	(cd "$work/$name" && spin -a "$@" "$here/protocol.pml" >/dev/null &&
	 cc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c &&
	 ./pan -m100000 -E >out.txt 2>&1) || true
	local errors states
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/$name/out.txt")
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$work/$name/out.txt")
	[ -n "$errors" ] || { cat "$work/$name/out.txt"; echo "$name: spin did not finish"; return 1; }
	if [ "$expect" = 0 ] && [ "$errors" != 0 ]; then
		grep -m3 -iE "assertion|violated" "$work/$name/out.txt" || true
		echo "FAIL $name: $errors errors in $states states"; return 1
	fi
	if [ "$expect" = fail ] && [ "$errors" = 0 ]; then
		echo "FAIL $name: the broken protocol passed ($states states)"; return 1
	fi
	echo "ok   $name: $errors errors in $states states"
}

run protocol 0 "$@"
# Without catch-up a section spanning GENS - 1 dead readers tears a base:
# three deaths with four generations.
run no-catchup fail -DNO_CATCHUP -DMAXCRASH=3 "$@"
run no-handshake-wait fail -DNO_WAIT "$@"
run stale-slots-used fail -DSTALE_USED "$@"
