#!/usr/bin/env bash
# Installs what building and testing need on Debian (run as root), and
# any further packages named as arguments (bench/run.sh names its own;
# .ci/run those of the suite image: buildah, netavark, which buildah's
# containers-common takes for its network stack where the first choice,
# containernetworking-plugins, ships a service, and mmdebstrap).
#
# It starts nothing and enables nothing.  No package it installs, nor
# any they pull in, ships a service (a systemd unit or an init script):
# what it would install is fetched and looked at first, and refused,
# with nothing installed, if one does; services are kept from starting
# while it installs all the same (policy-rc.d).  The Prometheus server
# and promtool the tests run come from Debian's `prometheus` package,
# which would enable and start a server on port 9090: it is unpacked
# into .deps/prometheus in this tree instead, never installed; so is
# nginx, which mstat-attach's tests attach while it serves.
#
# The npm packages the deploy suite loads go into .deps/node, as
# tests/deploy/package-lock.json pins them (npm ci, no install scripts).
#
#   deps.sh --check [PKG...]   installs nothing: says which services the
#       packages it installs (and PKG...) and what they depend on ship on
#       this machine, beyond the Essential packages every Debian system
#       has; fails if any does
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkgs=(gcc g++ meson ninja-build pkg-config liburcu-dev libcmocka-dev
      libncurses-dev libjson-c-dev spin
      libmicrohttpd-dev libyaml-dev libcrypt-dev # mstat-exporter: HTTP
                              # and TLS, its web config, bcrypt
      openssl python3-prometheus-client # its tests: a certificate, a
                              # strict OpenMetrics parser
      tmux python3            # mstat-top's tests: tmux drives the view
      groff-base              # the install test renders the man pages
      libjemalloc2 libtcmalloc-minimal4 sqlite3 jq libxml2-utils
      util-linux binutils # interposition tests: allocators to stack on,
                          # real programs, unshare/setpriv, nm
      libunwind8          # the library: stacks of sampled allocations
                          # (loaded at the first sample)
      libdw-dev zlib1g-dev # mstat-top: naming frames, gzipped pprof
      systemtap-sdt-dev   # the library's USDT probes: sys/sdt.h
      bpftrace            # their test: a tracer attached to them
      golang-go)          # the profile's test: go tool pprof reads it
# Node.js and npm: the deploy suite checks the Kubernetes manifests with
# the npm package kubernetes-models.  Debian's, where the machine has none
# (another Node.js, such as NodeSource's, already brings both).
command -v node >/dev/null || pkgs+=(nodejs)
command -v npm >/dev/null || pkgs+=(npm)
# Unpacked into .deps/NAME, never installed: what the tests run of them
# needs nothing beyond the C library.
unpacked=(prometheus      # prometheus and promtool: the exporter's tests
                          # (a real server scraping it; promtool checks
                          # the text format), mstat-top's (promtool)
          nginx)          # a real server mstat-attach's tests attach,
                          # under load (its unit would start it)

# A path a package ships that is a service, as dpkg -L and dpkg-deb -c
# (with a leading .) show it.
service='^\.?(/usr)?(/lib/systemd/(system|user)/[^/]+\.(service|socket|timer|path)|/etc/init\.d/[^/]+)$'

check=false
if [[ ${1:-} == --check ]]; then
	check=true
	shift
fi
pkgs+=("$@")

# The services the installed packages named on stdin ship, as
# "package: path" lines.
services_installed() {
	re=$service awk -F': ' '
		FNR == NR { wanted[$1] = 1; next }
		$2 ~ ENVIRON["re"] {
			n = split($1, owners, ", ")
			for (i = 1; i <= n; i++) {
				sub(/:.*/, "", owners[i]) # an architecture
				if (owners[i] in wanted)
					print owners[i] ": " $2
			}
		}' - <(dpkg -S '*/systemd/system/*' '*/systemd/user/*' \
			  '/etc/init.d/*' 2>/dev/null || true)
}

# The installed packages these names need (themselves included), one a
# line: their closure by Depends and Pre-Depends.
closure() {
	apt-cache depends --recurse --installed --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances "$@" \
		2>/dev/null | grep -v '^[ <]' | sed 's/:.*//' | sort -u
}

if $check; then
	mapfile -t essential < <(dpkg-query -W -f='${Package} ${Essential}\n' |
				 awk '$2 == "yes" { print $1 }')
	base=$(closure "${essential[@]}")
	found=$(comm -23 <(closure "${pkgs[@]}") <(echo "$base") |
			services_installed | sort)
	if [[ -n $found ]]; then
		echo "deps.sh: these packages ship services:" >&2
		echo "$found" >&2
		exit 1
	fi
	exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
updated=false
tmp=$(mktemp -d)
policy=/usr/sbin/policy-rc.d
own_policy=false
cleanup() {
	rm -rf "$tmp"
	if $own_policy; then rm -f "$policy"; fi
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
lock=(-o DPkg::Lock::Timeout=300) # another apt at work: wait for it
# apt fetches as the user _apt where there is one: it writes here.
chown _apt "$tmp" 2>/dev/null || true

if ((${#missing[@]})); then
	apt-get update -qq
	updated=true
	# Everything it would install, fetched into a cache of its own and
	# looked at before any of it is installed.
	cache=(-o "Dir::Cache::archives=$tmp/archives")
	mkdir -p "$tmp/archives/partial"
	chown -R _apt "$tmp/archives" 2>/dev/null || true
	apt-get install -y -qq --no-install-recommends --download-only \
		"${lock[@]}" "${cache[@]}" "${missing[@]}"
	found=
	for deb in "$tmp"/archives/*.deb; do
		[[ -e $deb ]] || continue
		found+=$(dpkg-deb -c "$deb" | awk '{ print $6 }' |
				 grep -E "$service" | sed "s|^|${deb##*/}: |")$'\n' ||
			true
	done
	if [[ -n ${found//$'\n'/} ]]; then
		echo "deps.sh: installing ${missing[*]} would bring these" \
		     "services; nothing was installed:" >&2
		grep -v '^$' <<<"$found" >&2
		exit 1
	fi
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# scripts/deps.sh: no service starts while it installs\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		own_policy=true
	fi
	apt-get install -y -qq --no-install-recommends "${lock[@]}" \
		"${cache[@]}" "${missing[@]}"
fi

for p in "${unpacked[@]}"; do
	dir=$root/.deps/$p
	have=$(cat "$dir/.version" 2>/dev/null || true)
	want=$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')
	if [[ -z $have && ( -z $want || $want == "(none)" ) ]] && ! $updated; then
		apt-get update -qq
		updated=true
		want=$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')
	fi
	[[ -n $have && ( $have == "$want" || -z $want || $want == "(none)" ) ]] &&
		continue
	(cd "$tmp" && apt-get download -qq "$p")
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	dpkg-deb -x "$tmp/$p"_*.deb "$dir.new"
	dpkg-deb -f "$tmp/$p"_*.deb Version >"$dir.new/.version"
	rm -rf "$dir"
	mv "$dir.new" "$dir"
	rm -f "$tmp/$p"_*.deb
done

# The deploy suite's npm packages, exactly as the lock file says, when it
# changed or they are not there.
npm_lock=$root/tests/deploy/package-lock.json
node_dir=$root/.deps/node
if ! cmp -s "$npm_lock" "$node_dir/package-lock.json" ||
	[[ ! -d $node_dir/node_modules ]]; then
	rm -rf "$node_dir.new"
	mkdir -p "$node_dir.new"
	cp "$root/tests/deploy/package.json" "$npm_lock" "$node_dir.new/"
	(cd "$node_dir.new" && npm ci --ignore-scripts --no-audit --no-fund \
		--loglevel=error)
	rm -rf "$node_dir"
	mv "$node_dir.new" "$node_dir"
fi
