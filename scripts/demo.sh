#!/usr/bin/env bash
# The main job: installs dependencies, builds, starts demo workloads with
# different heap behaviour under the library, and watches them with
# mstat-top, sorted by growth since each was first seen: the leaking one
# rises to the top.  On a terminal, interactive: the top row is selected
# until you move the selection, so Enter opens the leaking one once it is
# on top (its size classes), s its call sites, Esc goes back, b resets
# its baseline, q quits.  Otherwise a few batch ticks, then the call
# sites that hold the leaking one's heap.
#   steady      a working set renewed at a steady rate
#   churning    bursts of short-lived objects on 4 threads
#   leaking     keeps one object in 16; exits once it has leaked 64 MiB,
#               in about a minute (its row then stays, with what it never
#               freed, per size class: 64 MiB)
#   short       lives a few seconds and exits, again and again
#   killed      leaks as leaking does, until the demo SIGKILLs it (as the
#               OOM killer would) after 4 s: its row turns killed, and its
#               heap profile, kept after its death, still says where its
#               memory went (the sites view, or -p PID --sites)
#   attached    steady, started without the library and attached while
#               it runs (mstat-attach): counted from the attach on; its
#               blocks made before, freed since, are shown apart
# MSTAT_BUILD names the build directory (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${MSTAT_BUILD:-build}
[ -d "$build" ] || meson setup "$build"
meson compile -C "$build"

run="$build/launcher/mstat-run"
work="$build/demo/mstat-demo-workload"
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT
for mode in steady churning leaking; do
	"$run" --name "demo-$mode" -- "$work" "$mode" & pids+=($!)
done
# The one that is killed: its workload, not the launcher, as the OOM
# killer would.
"$run" --name demo-killed -- "$work" leaking &
launcher=$!
pids+=($launcher)
(sleep 4; pkill -KILL -P "$launcher" 2>/dev/null) & pids+=($!)
# Killing the loop would leave its current run behind: it takes that along.
(trap 'kill $! 2>/dev/null; wait; exit' TERM
 while :; do
	"$run" --name demo-short -- "$work" short & wait $! || true
	sleep 1
 done) &
pids+=($!)
# One the library was not started with, as a service already running
# would be: mstat-attach makes it count from now on.  Attaching needs
# ptrace rights (root, or ptrace_scope 0): without them it says why and
# the demo goes on without that row.
"$work" steady & attached=$!
pids+=($attached)
sleep 0.5
killed=$(pgrep -P "$launcher" || true)
attach_said=$("$build/attach/mstat-attach" --name demo-attached "$attached" 2>&1) ||
	attached=
echo "$attach_said"
[ -n "$attached" ] || echo "demo: the demo goes on without an attached process"

if [ -t 0 ] && [ -t 1 ]; then
	"$build/top/mstat-top" -F demo- -s growth
else
	"$build/top/mstat-top" -b -n 5 -F demo- -s growth
	# And where the leak comes from: the call sites holding the leaking
	# one's live heap, from its sampled profile, read from outside.
	echo
	echo "demo-leaking: the call sites holding its live heap (sampled)"
	"$build/top/mstat-top" -b -n 1 -o json -F demo-leaking --sites 3 |
		jq -r '.processes[] | .sites[]? | "  \(.live_bytes) bytes live in \(.live_objects) objects: \(.function) (\(.file):\(.line))"'
	# And one that was SIGKILLed: its segment is kept for a grace
	# (MSTAT_KILLED_GRACE), so a reader started after its death still
	# reads its last profile.
	echo
	echo "demo-killed (pid $killed), SIGKILLed: read after its death"
	"$build/top/mstat-top" -b -n 1 -o json -p "$killed" --sites 3 |
		jq -r '.processes[] | "  state \(.state), \(.live_bytes) bytes live", (.sites[]? | "  \(.live_bytes) bytes live in \(.live_objects) objects: \(.function) (\(.file):\(.line))")'
	# And the one attached while it ran: what it did since the attach,
	# and what became of its blocks made before.
	if [ -n "$attached" ]; then
		echo
		echo "demo-attached (pid $attached), started without the library"
		"$build/top/mstat-top" -b -n 1 -o json -p "$attached" |
			jq -r '.processes[] | "  attached at \(.attached_time_s | todate): \(.live_bytes) bytes live made since; made before and freed since: \(.prior_frees) blocks, \(.prior_free_bytes) bytes"'
	fi
fi
