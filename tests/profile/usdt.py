#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's USDT probes (lib/probes.h), with a real tracer.

    usdt.py preloaded|attached
        (MSTAT_LIB, MSTAT_ATTACH, HEAPSITES, BPFTRACE: set by meson)

preloaded: heapsites runs with libmstatshm preloaded, and bpftrace -p PID
names the library by its path.  attached: heapsites is started without
the library, and mstat-attach injects libmstatshm-attach.so into it while
it waits; that library is mapped from a memfd the process no longer has
open, which bpftrace names by its mapping's link in /proc/PID/map_files
(docs/profiles.md): without -p, as bpftrace's bcc finds a process's
objects by their paths in its maps, and a memfd's through its open
descriptors.  Either way:

1. The library's notes (readelf -n, of that path): otel_memory:alloc with
   three 8-byte arguments in %rdi, %rsi, %rdx and otel_memory:free with
   one in %rdi, each with a semaphore, as the OpenTelemetry eBPF profiler
   reads them.
2. heapsites (heapsites.c), sampled at the default interval (512 KiB),
   waits; both semaphores read 0 in its memory.  bpftrace attaches to the
   probes of that process: both read 1.  heapsites then
   keeps 65536 blocks of 1 KiB and allocates and frees 65536 of 8 KiB,
   and bpftrace, detached, has seen:
     - about one alloc per 512 KiB allocated: as many as the sampling
       gives, within 5 standard deviations, and the weighted bytes summed
       within 5 standard deviations of the bytes allocated;
     - each alloc with the block's usable size and its weight exactly,
       usable / (1 - exp(-requested / 512 KiB));
     - exactly one free per sampled block freed: every 8 KiB block it
       saw allocated, and no 1 KiB one (those are never freed).
   Detached, both semaphores read 0 again.
Skips (77) where bpftrace is not installed, this is not root, the
preloaded library has no probes (built without sys/sdt.h), or the kernel
refuses the uprobes (bpftrace's reason).  The attached library having
no probes, or bpftrace attaching to none of them, where it attaches to
the preloaded one's, is a failure.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys

from e2e import LIB, HEAPSITES, LEAKS, LEAK_SIZE, CHURNS, sigma, \
    within_sigmas, fail

BPFTRACE = os.environ.get("BPFTRACE", "")
ATTACH = os.environ.get("MSTAT_ATTACH", "")
MEMFD = "/memfd:mstat-attach (deleted)"  # the attached library's mapping
INTERVAL = 512 * 1024   # the library's default
CHURN_SIZE = 8192


# Counts by size and weight; the sampled blocks live, by address (a
# freed one's address is often the next one's), and frees by the size
# their block was allocated with, or of no block seen allocated.
PROGRAM = """
BEGIN { printf("attached\\n"); }
usdt:%s:otel_memory:alloc {
	@allocs[arg1, arg2] = count();
	@live[arg0] = arg1;
}
usdt:%s:otel_memory:free {
	if (@live[arg0]) {
		@frees[@live[arg0]] = count();
		delete(@live[arg0]);
	} else {
		@unknown = count();
	}
}
END { clear(@live); }
"""
CHECK = """
BEGIN { printf("attached\\n"); exit(); }
usdt:%s:otel_memory:alloc { }
"""


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def notes(path):
    """The stapsdt notes of the object at path: {name: (semaphore,
    arguments)}."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True,
                         text=True, check=True).stdout
    found = {}
    for m in re.finditer(r"Provider: (\S+)\n\s+Name: (\S+)\n\s+Location: \S+ "
                         r"Base: \S+ Semaphore: (0x[0-9a-f]+)\n\s+"
                         r"Arguments: ([^\n]*)", out):
        if m.group(1) != "otel_memory":
            fail("a probe of another provider: %s" % m.group(0))
        found[m.group(2)] = (int(m.group(3), 16), m.group(4))
    return found


def library(pid, mode):
    """Where process pid has the library: its load address (its mapping at
    offset 0) and the path a tracer names it by.  Preloaded, the file;
    attached, that mapping's link in /proc/PID/map_files, which opens the
    memfd it was loaded from."""
    real = os.path.realpath(LIB)
    found = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            x = line.split(maxsplit=5)
            if len(x) < 6 or int(x[2], 16) != 0:
                continue
            name = x[5].rstrip("\n")
            if os.path.realpath(name) == real:
                found.append(("preloaded", x[0], LIB))
            elif name == MEMFD:
                found.append(("attached", x[0],
                              "/proc/%d/map_files/%s" % (pid, x[0])))
    if [f[0] for f in found] != [mode]:
        fail("process %d maps %r, not the library %s once" % (pid, found, mode))
    return int(found[0][1].split("-")[0], 16), found[0][2]


def semaphores(pid, base, probes):
    """Each probe's semaphore, read in process pid's memory: the library's
    load address plus the note's address."""
    out = {}
    with open("/proc/%d/mem" % pid, "rb") as m:
        for name, (sem, _) in probes.items():
            m.seek(base + sem)
            out[name] = int.from_bytes(m.read(2), "little")
    return out


def tracer(prog, args):
    """bpftrace running prog (with its own args), once its BEGIN says that
    every probe is attached; or None, and the last line it said why."""
    bt = subprocess.Popen(
        [BPFTRACE, "-f", "json"] + args + ["-e", prog],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, BPFTRACE_MAP_KEYS_MAX="65536"))
    for line in bt.stdout:
        if line.strip() and json.loads(line).get("type") == "printf":
            return bt, None
    err = bt.stderr.read().strip().splitlines()
    bt.wait()
    return None, err[-1] if err else "?"


def can_trace():
    """Whether bpftrace attaches to the preloaded library's probes, by its
    path, here (in no process): if not, the kernel or the user refuses."""
    bt, _ = tracer(CHECK % LIB, [])
    if bt:
        bt.communicate(timeout=120)
    return bt is not None


def start(mode):
    """heapsites, waiting, with the library preloaded or attached."""
    env = dict(os.environ, MSTAT_EAGER="1")
    env.pop("MSTAT_SAMPLE_BYTES", None)
    env.pop("LD_PRELOAD", None)
    if mode == "preloaded":
        env["LD_PRELOAD"] = LIB
    hs = subprocess.Popen([HEAPSITES, "wait"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=env, text=True)
    if hs.stdout.readline().strip() != "waiting":
        fail("heapsites did not wait")
    if mode == "attached":
        r = subprocess.run([ATTACH, str(hs.pid)], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            hs.kill()
            hs.wait()
            fail("mstat-attach: %s" % r.stderr.strip())
        print(r.stdout.strip())
    return hs


def main():
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    if mode not in ("preloaded", "attached"):
        fail("usage: usdt.py preloaded|attached")
    if not BPFTRACE:
        skip("no bpftrace (Debian: bpftrace; scripts/deps.sh installs it)")
    if os.geteuid() != 0:
        skip("bpftrace needs root")
    if "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        skip("valgrind replaces malloc everywhere: nothing is sampled")
    if not notes(LIB):
        skip("the library has no USDT probes (built without sys/sdt.h: "
             "Debian's systemtap-sdt-dev)")

    hs = start(mode)
    bt = None
    try:
        base, path = library(hs.pid, mode)
        probes = notes(path)
        want = {"alloc": "8@%rdi 8@%rsi 8@%rdx", "free": "8@%rdi"}
        if {k: v[1] for k, v in probes.items()} != want or \
                not all(v[0] for v in probes.values()):
            fail("the probes' notes in %s: %r, not %r with semaphores"
                 % (path, probes, want))
        print("notes of %s: %r" % (path, probes))
        before = semaphores(hs.pid, base, probes)
        if before != {"alloc": 0, "free": 0}:
            fail("semaphores before a tracer: %r" % before)
        prog = PROGRAM % (path, path)
        pid = ["-p", str(hs.pid)] if mode == "preloaded" else []
        bt, why = tracer(prog, pid)
        if not bt:
            if mode == "attached" and can_trace():
                fail("bpftrace attaches to the preloaded library's probes, "
                     "not to the attached one's: %s" % why)
            skip("bpftrace could not attach: %s" % why)
        during = semaphores(hs.pid, base, probes)
        if during != {"alloc": 1, "free": 1}:
            fail("semaphores with bpftrace attached: %r" % during)
        hs.stdin.write("\n")
        hs.stdin.flush()
        ready = hs.stdout.readline().split()
        if len(ready) != 3 or ready[0] != "ready":
            fail("heapsites said %r" % ready)
        usable_1k, usable_8k = int(ready[1]), int(ready[2])
        bt.send_signal(signal.SIGINT)
        out, err = bt.communicate(timeout=120)
        bt = None
        after = semaphores(hs.pid, base, probes)
        if after != {"alloc": 0, "free": 0}:
            fail("semaphores once bpftrace detached: %r" % after)
        print("semaphores: %r before bpftrace, %r with it, %r after"
              % (before, during, after))
    finally:
        if bt:
            bt.kill()
            bt.wait()
        hs.stdin.close()
        hs.wait(timeout=60)

    maps = {}
    for line in filter(str.strip, out.splitlines()):
        o = json.loads(line)
        if o.get("type") == "map":
            maps.update(o["data"])

    # Each alloc says its block's usable size and weight, exactly.
    weight = {usable_1k: round(usable_1k / -math.expm1(-LEAK_SIZE / INTERVAL)),
              usable_8k: round(usable_8k / -math.expm1(-CHURN_SIZE / INTERVAL))}
    allocs = {}
    for key, n in maps.get("@allocs", {}).items():
        size, w = (int(x) for x in key.split(","))
        if size not in weight or abs(w - weight[size]) > 1:
            fail("%d allocs of size %d, weighted_bytes %d; blocks are %r"
                 % (n, size, w, weight))
        allocs[size] = allocs.get(size, 0) + n
    n1k, n8k = allocs.get(usable_1k, 0), allocs.get(usable_8k, 0)
    p1k = -math.expm1(-LEAK_SIZE / INTERVAL)
    p8k = -math.expm1(-CHURN_SIZE / INTERVAL)
    allocated = LEAKS * usable_1k + CHURNS * usable_8k
    print("alloc probes: %d (%d of 1 KiB, %d of 8 KiB), one per %d bytes "
          "allocated" % (n1k + n8k, n1k, n8k, allocated // (n1k + n8k)))
    within_sigmas("alloc probes", n1k + n8k,
                  round(LEAKS * p1k + CHURNS * p8k),
                  math.sqrt(LEAKS * p1k * (1 - p1k) + CHURNS * p8k * (1 - p8k)))
    within_sigmas("weighted_bytes summed",
                  n1k * weight[usable_1k] + n8k * weight[usable_8k], allocated,
                  math.hypot(sigma(LEAKS, LEAK_SIZE, usable_1k, INTERVAL),
                             sigma(CHURNS, CHURN_SIZE, usable_8k, INTERVAL)))
    # Frees: exactly the sampled blocks freed, each once.
    frees = {int(k): n for k, n in maps.get("@frees", {}).items()}
    if frees != {usable_8k: n8k} or maps.get("@unknown"):
        fail("free probes by allocated size %r, %r of no block seen "
             "allocated; %d sampled 8 KiB blocks were freed"
             % (frees, maps.get("@unknown"), n8k))
    print("free probes: %d, one per sampled block freed, none of the %d "
          "kept" % (n8k, n1k))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
