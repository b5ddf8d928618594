#!/usr/bin/env bash
# Without libunwind the library counts on and samples nothing, and says so
# once in its status (which mstat-run's summary carries); with it, or with
# sampling off, it says nothing of it.  libunwind is hidden by a bind
# mount of /dev/null over it in a private mount namespace (unshare -m, as
# root); without that the test is skipped.
# Usage: no_unwinder.sh MSTAT-RUN
set -euo pipefail
. "$(dirname "$0")/../shell.sh"
run=$1

if ! unshare -m true 2>/dev/null; then
	echo "SKIP: needs root for unshare -m"
	exit 77
fi
# awk reads to the end: leaving early would kill ldconfig with SIGPIPE,
# which pipefail makes this script's exit status.
unw=$(ldconfig -p | awk '$1 == "libunwind.so.8" && /x86-64|64bit/ && !f { print $NF; f = 1 }')
[ -n "$unw" ] || { echo "SKIP: libunwind.so.8 is not installed"; exit 77; }

said="libunwind.so.8 could not be loaded: not sampling"
# The interpreter itself, not a wrapper script that runs it (pyenv's).
py=$(python3 -c 'import sys; print(sys.executable)')
# status ENV HIDE: under mstat-run, a program that allocates 5 MB in 5000
# blocks (about ten samples are due): the library's status as the
# summary has it, then its log (MSTAT_LOG), every warning it made.
status() {
	rm -f "$tmp/log"
	env PYTHONMALLOC=malloc MSTAT_LOG="$tmp/log" $1 unshare -m sh -c "${2:+mount --bind /dev/null $unw && }\"\$0\" --summary $tmp/s.json -- $py -c 'x = [bytes(1000) for _ in range(5000)]'" "$run" ||
		fail "mstat-run ($1${2:+, hidden})"
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["library"])' "$tmp/s.json"
	cat "$tmp/log" 2>/dev/null || true
}

got=$(status "" hide)
[ "$(grep -o "$said" <<<"$got" | wc -l)" = 2 ] || fail "hidden: said in the summary and the log once each: $got"
case $got in counting\ into*) ;; *) fail "hidden, not counting: $got" ;; esac
got=$(status "" "")
[[ $got != *libunwind* ]] || fail "installed: $got"
got=$(status MSTAT_SAMPLE_BYTES=0 hide)
[[ $got != *libunwind* ]] || fail "sampling off: $got"
echo "ok: without libunwind: $said (once); counting on"
