#!/usr/bin/env bash
# Installs what building and testing need on Debian (run as root), and
# any further packages named as arguments (bench/run.sh names its own).
set -euo pipefail
pkgs=(gcc g++ meson ninja-build pkg-config liburcu-dev libcmocka-dev
      libncurses-dev libjson-c-dev spin
      libmicrohttpd-dev libyaml-dev libcrypt-dev # mstat-exporter: HTTP
                              # and TLS, its web config, bcrypt
      openssl python3-prometheus-client # its tests: a certificate, a
                              # strict OpenMetrics parser
      tmux python3 prometheus # mstat-top's tests: tmux drives the view,
                              # promtool (prometheus) checks OpenMetrics
      libjemalloc2 libtcmalloc-minimal4 sqlite3 jq libxml2-utils
      util-linux binutils # interposition tests: allocators to stack on,
                          # real programs, unshare/setpriv, nm
      libunwind8          # the library: stacks of sampled allocations
                          # (loaded at the first sample)
      libdw-dev zlib1g-dev # mstat-top: naming frames, gzipped pprof
      golang-go)          # the profile's test: go tool pprof reads it
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
