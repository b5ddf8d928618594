#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Resident memory in parts, with known answers: processes whose memory is
made to be so (tests/top/memory_target.c, the library preloaded, and
jemalloc or tcmalloc after it) read by mstat-top -o json.

    memory.py TEST   TEST: frag mapped arenas jemalloc tcmalloc trim
                           shared file untouched partial

Environment (set by meson): MSTAT_TOP, MSTAT_MEMORY_TARGET, MSTAT_LIB (the
library to preload).  Every figure is checked against what the test
made, with the margins the allocators' own rounding needs; the parts must
add up to rss exactly, and rss be within 2 % of VmRSS as the test reads
it before and after mstat-top.
"""
import json
import os
import subprocess
import sys

TOP = os.environ["MSTAT_TOP"]
TARGET = os.environ["MSTAT_MEMORY_TARGET"]
LIB = os.environ["MSTAT_LIB"]
TIMEOUT = 120
MB = 1000 * 1000
MIB = 1 << 20
PARTS = ("live", "allocator_free", "allocator_overhead", "not_heap", "file",
         "shmem", "library")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Target:
    """memory_target.c in `mode`, preloaded with the library and `next`
    after it; it exits when its stdin closes."""

    def __init__(self, args, after=None, env=None):
        pre = LIB + (" " + after if after else "")
        e = dict(os.environ, LD_PRELOAD=pre, MSTAT_EAGER="1",
                 MSTAT_NAME="memory-" + args[0])
        # meson's MALLOC_PERTURB_ makes glibc write every block it hands
        # out: a block never written would be resident.
        e.pop("MALLOC_PERTURB_", None)
        e.update(env or {})
        self.p = subprocess.Popen([TARGET] + args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=e)
        line = self.p.stdout.readline().decode()
        check(line.startswith("ready "), "%s did not start: %r" % (args, line))
        self.pid = self.p.pid

    def ask(self, command, answer):
        self.p.stdin.write(command.encode() + b"\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().decode().strip()
        check(line == answer, "%s: %r, not %r" % (command, line, answer))

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=TIMEOUT)


def vmrss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise Failure("no VmRSS for %d" % pid)


def read(t, ticks=1, wrap=()):
    """The target's row as mstat-top's last of `ticks` ticks shows it
    (run by the command `wrap`, if any), checked: its parts add up to its
    rss, which is within 2 % of VmRSS read around it."""
    before = vmrss(t.pid)
    r = subprocess.run(list(wrap) + [TOP, "-b", "-o", "json", "-n", str(ticks),
                                     "-d", "0.2", "-p", str(t.pid)],
                       stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    after = vmrss(t.pid)
    check(r.returncode == 0, "mstat-top: %s" % r.stderr.decode())
    p = json.loads(r.stdout.decode().splitlines()[-1])["processes"][0]
    m = p["memory"]
    check(m is not None, "no memory: %r" % p)
    check(sum(m[k] for k in PARTS) == m["rss"], "the parts add up: %r" % m)
    for v in (before, after):
        check(abs(m["rss"] - v) <= 0.02 * v,
              "rss %d within 2 %% of VmRSS %d" % (m["rss"], v))
    print("%s (%s, %s): %s" % (p["name"], p["allocator"], p["memory_source"],
                               " ".join("%s %.1fMB" % (k, m[k] / MB)
                                        for k in ("rss",) + PARTS)))
    return p


def near(v, want, within, what):
    check(abs(v - want) <= within, "%s: %d, not %d +- %d" %
          (what, v, want, within))


def fragmented(after=None, env=None):
    """200,000 blocks of 1 KiB, nine of every ten freed, scattered: their
    live bytes (20,000 usable sizes) and the rest held by the allocator."""
    return Target(["frag", "200000", "1024"], after, env)


def test_frag():
    t = fragmented()
    p = read(t)
    m = p["memory"]
    check(p["allocator"] == "glibc" and p["memory_source"] == "glibc",
          "glibc, found from outside: %r" % p)
    # The counters' live bytes, every one resident: 20,000 blocks of
    # 1032 usable bytes, and the array of 200,000 pointers that kept them
    # (and a few KiB of the loader's and stdio's).
    near(m["live"], p["live_bytes"], 0, "live is the live bytes")
    near(m["live"], 20000 * 1032 + 200000 * 8, MB, "live")
    check(m["live_not_resident"] == 0, "all of it resident: %r" % m)
    check(m["allocator_free"] >= 150 * MB, "allocator_free: %r" % m)
    # Headers: 8 bytes for each of 20,000 blocks, 16 for the array.
    near(m["allocator_overhead"], 8 * p["live_objects"], 64, "overhead")
    check(m["not_heap"] < 10 * MB, "not_heap: %r" % m)
    check(m["library"] >= 4096, "the segment is the library's: %r" % m)
    t.stop()


def test_trim():
    """malloc_trim(0) gives the free pages back: allocator_free and rss
    fall by the same."""
    t = fragmented()
    a = read(t)["memory"]
    t.ask("trim", "trimmed")
    b = read(t)["memory"]
    freed = a["allocator_free"] - b["allocator_free"]
    fell = a["rss"] - b["rss"]
    check(freed >= 50 * MB, "malloc_trim gave back %d: %r %r" % (freed, a, b))
    near(fell, freed, freed // 50, "rss fell as allocator_free did")
    near(b["live"], a["live"], 0, "live stays")
    near(b["not_heap"], a["not_heap"], MB, "not_heap stays")
    t.stop()


def test_mapped():
    """8 MB of heap beside a 100 MiB mapping of the program's own: the
    mapping is not_heap, the heap is live; the heap as blocks of 1000
    bytes, or one mmapped chunk made after or before the mapping."""
    for how in ("small", "big", "bigfirst"):
        t = Target(["mapped", "100", "8", how])
        p = read(t)
        m = p["memory"]
        check(m["not_heap"] >= 95 * MB and m["not_heap"] <= 100 * MIB + 10 * MB,
              "%s: not_heap: %r" % (how, m))
        near(m["live"], 8 * MIB, 1 * MB, "%s: live" % how)
        check(m["live_not_resident"] < MB, "%s: resident: %r" % (how, m))
        t.stop()


def test_partial():
    """A reader that may not read the process's memory (no ptrace
    access: here a seccomp filter) finds glibc's heap in its maps, but not
    its chunks: their bytes are not_heap, and live bytes not resident."""
    t = Target(["mapped", "100", "8", "big"])
    p = read(t, wrap=(TARGET, "noreadv"))
    m = p["memory"]
    check(p["memory_source"] == "glibc-partial", "partial: %r" % p)
    check(m["not_heap"] >= 100 * MIB + 8 * MIB, "not_heap: %r" % m)
    near(m["live_not_resident"], 8 * MIB, 1 * MB, "live_not_resident")
    full = read(t)
    check(full["memory_source"] == "glibc" and
          full["memory"]["live_not_resident"] < MB, "with it: %r" % full)
    t.stop()


def test_arenas():
    """Eight threads in four arenas (MALLOC_ARENA_MAX), each 20,000 blocks
    of 1000 bytes, nine of ten freed: what the arenas hold free is
    allocator_free, not not_heap."""
    t = Target(["arenas", "8", "20000"], env={"MALLOC_ARENA_MAX": "4"})
    p = read(t)
    m = p["memory"]
    check(p["memory_source"] == "glibc", "glibc: %r" % p)
    near(m["live"], p["live_bytes"], 0, "live is the live bytes")
    near(m["live"], 8 * 2000 * 1008, 2 * MB, "live")
    # Of the 144 MB freed, what the arenas did not give back at their
    # tops (glibc trims an arena's heap where it ends free: 75 to 115
    # MB here); were the arenas' heaps not found, a few MB.
    check(m["allocator_free"] >= 50 * MB, "allocator_free: %r" % m)
    check(m["not_heap"] < 10 * MB, "not_heap: %r" % m)
    t.stop()


def answered(t):
    """The row once the allocator has answered a reader: each read asks,
    and the target answers at its next sampled allocation."""
    for _ in range(20):
        p = read(t)
        if p["memory_source"] == "allocator":
            return p
        t.ask("churn 64", "churned")
    raise Failure("the allocator never answered: %r" % p)


def test_jemalloc():
    """jemalloc behind the library: what it keeps (freed, retained,
    its caches) is allocator_free, as its own figures say."""
    t = fragmented("libjemalloc.so.2")
    p = answered(t)
    m = p["memory"]
    check(p["allocator"] == "jemalloc", "jemalloc: %r" % p)
    near(m["live"], p["live_bytes"], 0, "live is the live bytes")
    check(m["allocator_free"] >= 150 * MB, "allocator_free: %r" % m)
    check(m["not_heap"] < 20 * MB, "not_heap: %r" % m)
    check(p["allocator_time_s"] is not None, "its answer's time")
    t.stop()


def test_tcmalloc():
    t = fragmented("libtcmalloc_minimal.so.4")
    p = answered(t)
    m = p["memory"]
    check(p["allocator"] == "tcmalloc", "tcmalloc: %r" % p)
    near(m["live"], p["live_bytes"], 0, "live is the live bytes")
    check(m["allocator_free"] >= 150 * MB, "allocator_free: %r" % m)
    check(m["not_heap"] < 20 * MB, "not_heap: %r" % m)
    t.stop()


def test_shared():
    """A shared mapping of the program's own is shmem; the segment is
    the library's."""
    t = Target(["shared", "16384"])
    m = read(t)["memory"]
    near(m["shmem"], 16 * MIB, 64 * 1024, "shmem")
    check(4096 <= m["library"] < MIB, "library: %r" % m)
    t.stop()


def test_file():
    """A file of 16 MiB the program mapped and read is file, beside its
    code's and its libraries' pages."""
    import tempfile
    # In the build directory, not /tmp: a tmpfs's pages are shared memory.
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as d:
        t = Target(["file", os.path.join(d, "mapped"), "16"])
        m = read(t)["memory"]
        t.stop()
    check(16 * MIB <= m["file"] < 16 * MIB + 16 * MB, "file: %r" % m)
    check(m["shmem"] < MIB, "not shmem: %r" % m)


def test_untouched():
    """A live block of 256 MiB never written: live, but not resident."""
    t = Target(["untouched", "256"])
    p = read(t)
    m = p["memory"]
    near(m["live_not_resident"], 256 * MIB, MB, "live_not_resident")
    check(m["rss"] < 32 * MB, "not resident: %r" % m)
    t.stop()


def main():
    if "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        print("skip: valgrind replaces the allocators whose memory this is")
        return 77
    fn = globals().get("test_" + sys.argv[1])
    if not fn:
        print("no test %s" % sys.argv[1])
        return 2
    try:
        fn()
    except Failure as e:
        print("FAIL %s: %s" % (sys.argv[1], e))
        return 1
    print("ok %s" % sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
