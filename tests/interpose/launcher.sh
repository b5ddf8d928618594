#!/usr/bin/env bash
# mstat-run: counts, exact final totals in versioned JSON, exit status,
# signals, children inheriting the preload, bad input, cleanup.
# Usage: launcher.sh MSTAT_RUN LEAKER ENDER [BUILD_ROOT]
# With BUILD_ROOT, also installs the build into a scratch prefix and runs
# the installed mstat-run, which must find the installed library.
set -euo pipefail
. "$(dirname "$0")/../shell.sh"
run=$1 leaker=$2 ender=$3 build=${4:-}

# Checks a summary: version 2, counted, and exactly N live blocks (no
# frees) in the class of a USABLE-byte block; the process is described as
# mstat-top describes one, growth counted over the whole run.
check_json() { # file n usable-bytes-of-all-n
	python3 - "$@" <<'PY'
import json, sys
f, n, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = json.load(open(f))
assert s["version"] == 2, s["version"]
assert s["counted"] is True, s
p = s["process"]
cls = [c for c in p["classes"] if c["size"] is None or c["size"] >= total // n]
c = min(cls, key=lambda c: c["size"] if c["size"] is not None else 2**64)
assert c["alloc_count"] == n and c["free_count"] == 0, c
assert c["alloc_bytes"] == total, c
assert c["growth_bytes"] == total and c["growth_objects"] == n, c
assert p["live_objects"] == p["alloc_count"] - p["free_count"]
assert p["live_bytes"] == sum(k["alloc_bytes"] - k["free_bytes"]
                              for k in p["classes"])
assert p["growth_bytes"] == p["live_bytes"], p
assert p["requested_bytes"] > 0
assert p["start_time_s"] <= p["end_time_s"], p
PY
}

# A plain run: exact totals, the child's exit code, the segment removed.
out=$("$run" --summary "$tmp/a.json" -- "$leaker" leak 7 1234567 3) && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "exit code $rc, not the child's 3"
usable=${out#usable }
check_json "$tmp/a.json" 7 "$usable" || fail "summary: $(cat "$tmp/a.json")"
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["pid"])' "$tmp/a.json")
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["exit"] == {"code": 3}' "$tmp/a.json"
ls /dev/shm | grep -q "^mstat\.$pid\." && fail "segment of $pid left in /dev/shm"

# --name, and stacking in front of an LD_PRELOAD already set.
LD_PRELOAD=libjemalloc.so.2 "$run" --name my-app --summary "$tmp/b.json" -- "$leaker" leak 5 300000 >"$tmp/b.out"
usable=$(sed -n 's/^usable //p' "$tmp/b.out")
check_json "$tmp/b.json" 5 "$usable" || fail "jemalloc summary: $(cat "$tmp/b.json")"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["process"]["name"] == "my-app"' "$tmp/b.json" ||
	fail "name not my-app"

# Killed by a signal: 128 + 9, and still the exact totals up to then.
"$run" --summary "$tmp/c.json" -- "$leaker" kill 4 1234567 >"$tmp/c.out" && rc=0 || rc=$?
[ "$rc" = 137 ] || fail "exit status $rc after SIGKILL"
check_json "$tmp/c.json" 4 "$(sed -n 's/^usable //p' "$tmp/c.out")" || fail "killed summary"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["exit"] == {"signal": 9}' "$tmp/c.json"
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["pid"])' "$tmp/c.json")
# Its segment is kept for readers that were not running (MSTAT_KILLED_GRACE);
# with a grace of 0, mstat-run removes it.
ls /dev/shm | grep -q "^mstat\.$pid\." || fail "segment of killed $pid not kept for the grace"
MSTAT_KILLED_GRACE=0 "$run" --summary "$tmp/c0.json" -- "$leaker" kill 4 1234567 >/dev/null && rc=0 || rc=$?
[ "$rc" = 137 ] || fail "exit status $rc after SIGKILL, grace 0"
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"]["pid"])' "$tmp/c0.json")
ls /dev/shm | grep -q "^mstat\.$pid\." && fail "segment of killed $pid left in /dev/shm with a grace of 0"
MSTAT_KILLED_GRACE=x "$run" -- true 2>"$tmp/bad.err" && fail "MSTAT_KILLED_GRACE=x accepted"
grep -q "MSTAT_KILLED_GRACE=x: not a number of seconds" "$tmp/bad.err" || fail "MSTAT_KILLED_GRACE=x: $(cat "$tmp/bad.err")"

# Threads still inside malloc and free when the command exits: the exit
# stops counting and waits for them, so the totals are whole (no update
# cut, and in the churning class every count has its bytes: 200 usable
# bytes each), and frees never exceed allocations.
for i in $(seq 30); do
	"$run" --summary "$tmp/t.json" -- "$ender" churn 8 || fail "churn: exit $?"
	python3 - "$tmp/t.json" <<'PY' || fail "churn run $i: $(cat "$tmp/t.json")"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["process"]
assert s["counted"] is True and p["state"] == "exited" and s["cut"] == 0, s
for c in p["classes"] + [p]:
    assert c["free_count"] <= c["alloc_count"], c
    assert c["free_bytes"] <= c["alloc_bytes"], c
churn = [c for c in p["classes"] if c["size"] == 208][0]
assert churn["alloc_bytes"] == 200 * churn["alloc_count"], churn
assert churn["free_bytes"] == 200 * churn["free_count"], churn
PY
done

# How it ended, in words: a code, a signal, 127 from a shell that found
# no such command (counted: the shell ran), a command that could not be
# run at all (not counted, and why).
expect_end() { # json python-expression
	python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert $2, s" "$1" ||
		fail "$(cat "$1")"
}
"$run" --summary "$tmp/x1.json" -- sh -c 'exit 7' && rc=0 || rc=$?
[ "$rc" = 7 ] || fail "exit 7: $rc"
expect_end "$tmp/x1.json" 's["exit"] == {"code": 7} and s["counted"] is True'
"$run" --summary "$tmp/x2.json" -- sh -c 'kill -TERM $$' && rc=0 || rc=$?
[ "$rc" = 143 ] || fail "SIGTERM: $rc"
expect_end "$tmp/x2.json" 's["exit"] == {"signal": 15} and s["counted"] is True and s["process"]["state"] == "killed"'
"$run" --summary "$tmp/x3.json" -- sh -c 'no-such-command-here' 2>/dev/null && rc=0 || rc=$?
[ "$rc" = 127 ] || fail "command not found: $rc"
expect_end "$tmp/x3.json" 's["exit"] == {"code": 127} and s["counted"] is True'
"$run" --summary "$tmp/x4.json" -- /nonexistent/cmd 2>"$tmp/x4.err" && rc=0 || rc=$?
[ "$rc" = 127 ] || fail "exec failure: $rc"
expect_end "$tmp/x4.json" 's["exit"] == {"code": 127} and s["counted"] is False and s["reason"] == "cannot run /nonexistent/cmd: No such file or directory"'
grep -q 'cannot run /nonexistent/cmd: No such file or directory' "$tmp/x4.err" ||
	fail "exec failure said: $(cat "$tmp/x4.err")"
"$run" --summary "$tmp/x5.json" -- /etc/passwd 2>/dev/null && rc=0 || rc=$?
[ "$rc" = 126 ] || fail "not executable: $rc"
expect_end "$tmp/x5.json" 's["counted"] is False and "Permission denied" in s["reason"]'

# Children inherit the preload (and count: they see themselves counted).
"$run" -- sh -c "\"$leaker\" status" >"$tmp/d.out"
grep -q '^status: counting into' "$tmp/d.out" || fail "grandchild: $(cat "$tmp/d.out")"

# Not counted (MSTAT_DISABLE): said so, in the summary too.
MSTAT_DISABLE=1 "$run" --summary "$tmp/e.json" -- "$leaker" leak 1 10 >/dev/null 2>"$tmp/e.err"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["version"] == 2 and s["counted"] is False and s["reason"] and s["process"]["alloc_count"] is None' "$tmp/e.json" ||
	fail "disabled summary: $(cat "$tmp/e.json")"

# Bad input: a clear message and mstat-run's own status.
"$run" >/dev/null 2>"$tmp/f.err" && rc=0 || rc=$?
[ "$rc" = 125 ] && grep -q 'no command' "$tmp/f.err" || fail "no command: $rc"
"$run" --bogus -- true 2>/dev/null && rc=0 || rc=$?
[ "$rc" = 125 ] || fail "bad option: $rc"
"$run" -- /nonexistent/cmd 2>"$tmp/g.err" && rc=0 || rc=$?
[ "$rc" = 127 ] && grep -q '/nonexistent/cmd' "$tmp/g.err" || fail "missing command: $rc"
"$run" --summary /nonexistent/dir/x.json -- true 2>/dev/null && rc=0 || rc=$?
[ "$rc" = 125 ] || fail "unwritable summary: $rc"
# Values that cannot mean anything: refused before the command runs,
# with what the option takes.
for bad in "--summary=|a file name, or - for standard output" \
	   "--name=|a name, 1 to 63 bytes"; do
	opt=${bad%%|*}
	"$run" "$opt" -- touch "$tmp/ran" 2>"$tmp/h.err" && rc=0 || rc=$?
	want="mstat-run: bad value '' for ${opt%=}: ${bad#*|}"
	[ "$rc" = 125 ] && [ "$(cat "$tmp/h.err")" = "$want" ] && [ ! -e "$tmp/ran" ] ||
		fail "$opt: exit $rc, said '$(cat "$tmp/h.err")', not '$want'"
done
# Installed: bin/mstat-run finds lib/<multiarch>/libmstatshm.so.0.
if [ -n "$build" ] && command -v meson >/dev/null; then
	meson install -C "$build" --destdir "$tmp/inst" --no-rebuild --quiet >/dev/null 2>&1 ||
		fail "meson install into $tmp/inst"
	inst=$(find "$tmp/inst" -path '*/bin/mstat-run' | head -n 1)
	[ -x "$inst" ] || fail "no installed mstat-run"
	out=$("$inst" --summary "$tmp/i.json" -- "$leaker" leak 2 1234567)
	check_json "$tmp/i.json" 2 "${out#usable }" || fail "installed: $(cat "$tmp/i.json")"
fi
echo ok
