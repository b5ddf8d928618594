#!/usr/bin/env bash
# install.sh - the project installed as README.md says, into a DESTDIR,
# used from there, and uninstalled: the README's Install section gives
# the commands; the files land where the README's examples expect them;
# `man` renders every installed page; a program built with `pkg-config
# --cflags --libs mstatshm` counts exactly; the installed mstat-run
# preloads the installed library; the installed mstat-top and
# mstat-exporter see the program; the installed mstat-attach attaches a
# program started without the library (as root); `ninja -C build
# uninstall` leaves no file behind.
#
# Environment (set by meson): MESON, NINJA, BUILD_ROOT, README, PREFIX,
# BINDIR, LIBDIR, INCLUDEDIR, MANDIR (meson's options), CC, SHELL_SH
# (tests/shell.sh).
set -euo pipefail
. "$SHELL_SH"

dest=$tmp/dest
under() { # under DIR: the option's directory, absolute
	case $1 in /*) echo "$1" ;; *) echo "$PREFIX/$1" ;; esac
}
bindir=$dest$(under "$BINDIR")
libdir=$dest$(under "$LIBDIR")
includedir=$dest$(under "$INCLUDEDIR")
mandir=$dest$(under "$MANDIR")

section=$(awk '/^## / { on = $0 == "## Install" } on' "$README")
for cmd in "meson setup build --prefix=/usr/local" "meson install -C build" \
	   ldconfig "ninja -C build uninstall"; do
	grep -qF -- "$cmd" <<<"$section" ||
		fail "README.md's Install section does not say $cmd"
done

# meson install writes the list of what it installed, which `ninja
# uninstall` removes, into the build directory: that of a real install is
# kept, not replaced by this one's.
log=$BUILD_ROOT/meson-logs/install-log.txt
if [[ -e $log ]]; then cp -p "$log" "$tmp/install-log.txt"; fi
started=() # processes to end, however this ends
restore_log() {
	for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
	if [[ -e $tmp/install-log.txt ]]; then
		cp -p "$tmp/install-log.txt" "$log"
	else
		rm -f "$log"
	fi
	rm -rf "$tmp"
}
trap restore_log EXIT
DESTDIR=$dest "$MESON" install -C "$BUILD_ROOT" --no-rebuild --quiet ||
	fail "meson install with DESTDIR failed"

for f in "$bindir"/mstat-run "$bindir"/mstat-top "$bindir"/mstat-exporter \
	 "$bindir"/mstat-attach "$libdir"/libmstatshm-attach.so.0 \
	 "$mandir"/man1/mstat-attach.1 \
	 "$libdir"/libmstatshm.so.0 "$libdir"/libmstatshm.so \
	 "$libdir"/pkgconfig/mstatshm.pc "$includedir"/mstatshm.h \
	 "$includedir"/mstatshm_counters.h "$mandir"/man1/mstat-top.1 \
	 "$mandir"/man1/mstat-run.1 "$mandir"/man1/mstat-exporter.1 \
	 "$mandir"/man3/libmstatshm.3; do
	[[ -e $f ]] || fail "not installed: ${f#"$dest"}"
done

# The man pages, as `man` renders them: found by name under the installed
# MANPATH, and without a warning from groff.
if command -v man >/dev/null; then
	render=(man --warnings -l)
else
	render=(nroff -man -ww -Tutf8) # what man runs, where man-db is not
fi
for page in man1/mstat-top.1 man1/mstat-run.1 man1/mstat-exporter.1 \
	    man1/mstat-attach.1 man3/libmstatshm.3; do
	name=$(basename "$page" | sed 's/\.[0-9]$//')
	out=$(MANWIDTH=80 "${render[@]}" "$mandir/$page" 2>"$tmp/man.err") ||
		fail "${render[*]} $page failed: $(cat "$tmp/man.err")"
	[[ ! -s $tmp/man.err ]] || fail "${render[*]} $page: $(cat "$tmp/man.err")"
	grep -q '^NAME' <<<"$out" && grep -qi "^ *$name " <<<"$out" ||
		fail "${render[*]} $page: no NAME section naming $name"
	if command -v man >/dev/null; then
		found=$(MANPATH=$mandir man -w "$name")
		[[ $found == "$mandir/$page"* ]] ||
			fail "man -w $name under MANPATH=$mandir: $found"
	fi
done
echo "man pages: rendered by ${render[0]}"

# A program built the way the README says, against the installed files
# only: pkg-config with its search path and sysroot in the DESTDIR.
cat >"$tmp/counted.c" <<'EOF'
#include <mstatshm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counts a known pattern between two snapshots of itself and prints the
 * difference; with "wait", then waits for its stdin to close. */
int
main(int argc, char **argv)
{
	struct mstat_snapshot a, b;

	printf("counting\n"); /* stdio's buffer, before the first snapshot */
	if (mstat_self_snapshot(&a) != 0) {
		printf("no snapshot: %s\n", mstat_self_status());
		return 1;
	}
	char *volatile p = malloc(1000);
	for (int i = 0; i < 1000; i++)
		mstat_record_alloc(4096, 4000);
	for (int i = 0; i < 300; i++)
		mstat_record_free(4096);
	free(p);
	if (mstat_self_snapshot(&b) != 0)
		return 1;
	printf("allocs %llu frees %llu requested %llu\n",
	       (unsigned long long)(b.total.alloc_count - a.total.alloc_count),
	       (unsigned long long)(b.total.free_count - a.total.free_count),
	       (unsigned long long)(b.requested_bytes - a.requested_bytes));
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "wait") == 0)
		while (getchar() != EOF)
			;
	return 0;
}
EOF
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs mstatshm) || fail "pkg-config: no mstatshm"
[[ $flags == *"-I$includedir"* && $flags == *"-L$libdir"* ]] ||
	fail "pkg-config --cflags --libs mstatshm: $flags"
# shellcheck disable=SC2086 # pkg-config's words
"$CC" -o "$tmp/counted" "$tmp/counted.c" $flags || fail "cc $flags failed"
export LD_LIBRARY_PATH=$libdir
lib=$(ldd "$tmp/counted" | awk '/libmstatshm/ { print $3 }')
[[ $(realpath "$lib") == "$(realpath "$libdir/libmstatshm.so.0")" ]] ||
	fail "the program loads $lib, not the installed library"
want="allocs 1001 frees 301 requested 4001000"
got=$(MSTAT_EAGER=1 "$tmp/counted" | tail -n 1)
[[ $got == "$want" ]] || fail "the program built with pkg-config: $got, not $want"
echo "built with pkg-config: $got"

# The installed mstat-run preloads the installed library: it looks next
# to its own executable.
unset LD_LIBRARY_PATH
export PATH=$bindir:$PATH
[[ $(command -v mstat-run) == "$bindir/mstat-run" ]] || fail "mstat-run on PATH"
preload=$(mstat-run -- sh -c 'echo "$LD_PRELOAD"' 2>"$tmp/run.err") ||
	fail "the installed mstat-run: $(cat "$tmp/run.err")"
[[ $(realpath "${preload%% *}") == "$(realpath "$libdir/libmstatshm.so.0")" ]] ||
	fail "the installed mstat-run preloads '$preload', not $libdir/libmstatshm.so.0"
mstat-run --name installed-run --summary "$tmp/summary.json" -- true ||
	fail "mstat-run -- true"
grep -q '"version": *2' "$tmp/summary.json" ||
	fail "mstat-run's summary: $(cat "$tmp/summary.json")"

# The installed mstat-top and mstat-exporter see a process counting with
# the installed library.
export LD_LIBRARY_PATH=$libdir
coproc TARGET { MSTAT_EAGER=1 MSTAT_NAME=installed-$$ exec "$tmp/counted" wait; }
unset LD_LIBRARY_PATH
target=$TARGET_PID
started+=("$target")
read -r line <&"${TARGET[0]}"
read -r line <&"${TARGET[0]}"
[[ $line == "$want" ]] || fail "the waiting program: $line"
top=$(mstat-top -b -n 1 -o json -p "$target") || fail "mstat-top -b failed"
grep -q "\"pid\": *$target," <<<"$top" && grep -q "\"name\": *\"installed-$$\"" <<<"$top" ||
	fail "mstat-top -b does not show $target: $top"
echo "mstat-top: shows $target"

# One scrape of the installed mstat-exporter, on a port free a moment ago.
for attempt in $(seq 20); do
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mstat-exporter --web.listen-address=127.0.0.1:"$port" 2>"$tmp/exporter.err" &
	exporter=$!
	started+=("$exporter")
	while kill -0 "$exporter" 2>/dev/null &&
	      ! grep -q "listening on 127.0.0.1:$port " "$tmp/exporter.err"; do
		sleep 0.05
	done
	kill -0 "$exporter" 2>/dev/null && break
	grep -q "Address already in use" "$tmp/exporter.err" ||
		fail "mstat-exporter: $(cat "$tmp/exporter.err")"
done
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
scrape=$(cat <&3)
exec 3<&-
kill "$exporter"
wait "$exporter" || fail "mstat-exporter exited $?: $(cat "$tmp/exporter.err")"
grep -q "^mstat_live_objects{pid=\"$target\",name=\"installed-$$\"} " <<<"$scrape" ||
	fail "the scrape has no mstat_live_objects of $target: $scrape"
echo "mstat-exporter: serves $target"
exec {TARGET[1]}>&-
wait "$target"

# The installed mstat-attach, as root: a program started without the
# library counts once attached (the library it injects found next to
# it), and ends as it would.
if [[ $(id -u) == 0 ]]; then
	coproc PLAIN { exec python3 -c 'import sys; print("ready", flush=True); sys.stdin.read(); print("done")'; }
	plain=$PLAIN_PID
	started+=("$plain")
	read -r line <&"${PLAIN[0]}"
	mstat-attach --name attached-$$ "$plain" >"$tmp/attach.out" 2>&1 ||
		fail "the installed mstat-attach: $(cat "$tmp/attach.out")"
	top=$(mstat-top -b -n 1 -o json -p "$plain") || fail "mstat-top -b failed"
	grep -q "\"name\": *\"attached-$$\"" <<<"$top" &&
		grep -q '"attached_time_s": *[0-9]' <<<"$top" ||
		fail "mstat-top -b does not show $plain attached: $top"
	exec {PLAIN[1]}>&-
	read -r line <&"${PLAIN[0]}"
	wait "$plain" && [[ $line == done ]] || fail "the attached program ended badly: $line"
	echo "mstat-attach: attached $plain"
fi

# Uninstalled as the README says: what meson made is gone, the
# directories it made with it (DESTDIR itself among them).
"$NINJA" -C "$BUILD_ROOT" uninstall >"$tmp/uninstall.out" 2>&1 ||
	fail "ninja uninstall: $(cat "$tmp/uninstall.out")"
[[ ! -e $dest ]] || fail "left after ninja uninstall: $(find "$dest")"
echo "ninja uninstall: removed every file and directory it made"
