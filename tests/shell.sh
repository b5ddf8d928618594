# shell.sh - the start every shell test shares; sourced after
# `set -euo pipefail`.
#
# Under valgrind (meson test --setup valgrind) the interposer never runs
# (valgrind replaces malloc everywhere) and bash reports its own leaks:
# skip, from a process that is not bash.  Then $tmp, a directory removed
# at exit, `fail MESSAGE`, and the waits a test makes: for the processes
# it started, never for a time or for files to vanish (a busy machine
# makes any time too short).
[[ ${LD_PRELOAD:-} != *vgpreload* ]] ||
	exec /bin/sh -c 'echo "SKIP: valgrind replaces malloc everywhere"; exit 77'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# wait_gone PID...: until each process has ended, one this shell may not
# `wait` for (a grandchild, an orphan): by a pidfd, which polls readable
# once it has died.  A zombie holds no memory and no file.
wait_gone() {
	python3 - "$@" <<'PY'
import os, select, sys
for pid in map(int, sys.argv[1:]):
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        continue
    select.select([fd], [], [])
    os.close(fd)
PY
}

# start_waiting CMD...: starts CMD in the background ($! is its pid),
# its stdin a fifo held open on fd 3 (closing fd 3 is its end of input),
# its stdout a fifo read on fd 4; returns once it has said "ready" there,
# however long that takes.
start_waiting() {
	local line
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in" "$tmp/out"
	"$@" <"$tmp/in" >"$tmp/out" &
	exec 3>"$tmp/in" 4<"$tmp/out"
	read -r line <&4 || fail "$*: ended before it said ready"
	[ "$line" = ready ] || fail "$*: said $line, not ready"
}
