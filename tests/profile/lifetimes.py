#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How long each call site's blocks live, from the samples, end to end.

    lifetimes.py      (MSTAT_TOP, MSTAT_LIB, LIFESITES: set by meson)

lifesites (lifesites.c), preloaded, sampled every 64 KiB on average,
has a site that frees each block at once (64 MiB in 4 KiB blocks, about
1000 samples), one that frees each 0.5 s after it made it (16 MiB,
about 250), and one that never frees (4 MiB, about 60, made first).
mstat-top -b -o json --sites reads, per site:
  - lifetime_median_ns: under 1 us, within 0.3 to 1 s, and null;
  - short_lived_share (freed within 1 ms): above 0.99, 0, and 0;
  - lifetimes, bucket by bucket, their bytes summing to what was freed
    (alloc_bytes - live_bytes, within a byte per bucket of rounding);
  - live_age_ns and oldest_live_age_ns: null where nothing is live;
    for the site that never frees, at least the 2 s the process slept
    since, and the oldest no younger than the mean.
mstat-top --pprof writes the same as numeric labels of each sample,
`lifetime` and `age` in nanoseconds (tests/exporter/pprofproto.py reads
it): the site freeing at once's lifetime under 1 us, the later one's
within 0.3 to 1 s, the kept one with an age and no lifetime.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "exporter"))
import pprofproto  # noqa: E402

TOP = os.environ["MSTAT_TOP"]
LIB = os.environ["MSTAT_LIB"]
LIFESITES = os.environ["LIFESITES"]


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def main():
    if "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        print("SKIP: valgrind replaces malloc everywhere: nothing is sampled")
        return 77
    env = dict(os.environ, LD_PRELOAD=LIB, MSTAT_EAGER="1",
               MSTAT_SAMPLE_BYTES=str(64 * 1024),
               MSTAT_NAME="lifetimes%d" % os.getpid())
    p = subprocess.Popen([LIFESITES], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, text=True)
    try:
        check(p.stdout.readline().strip() == "ready", "lifesites not ready")
        out = subprocess.run([TOP, "-b", "-n", "1", "-o", "json", "--sites",
                              "10", "-p", str(p.pid)], capture_output=True,
                             text=True, timeout=120)
        check(out.returncode == 0, "mstat-top: %s" % out.stderr)
        procs = json.loads(out.stdout)["processes"]
        check(len(procs) == 1 and procs[0]["sites"], "sites: %r" % procs)
        sites = {s["function"]: s for s in procs[0]["sites"]}
        for f in ("at_once_site", "later_site", "never_site"):
            check(f in sites, "no site %s among %r" % (f, list(sites)))
            s = sites[f]
            print("%s: median %s ns, short %s, live age %s ns (oldest %s), "
                  "%d buckets" % (f, s["lifetime_median_ns"],
                                  s["short_lived_share"], s["live_age_ns"],
                                  s["oldest_live_age_ns"], len(s["lifetimes"])))
            freed = s["alloc_bytes"] - s["live_bytes"]
            summed = sum(b["bytes"] for b in s["lifetimes"])
            check(abs(summed - freed) <= 1 + len(s["lifetimes"]),
                  "%s: buckets sum to %d, %d freed" % (f, summed, freed))
            for b in s["lifetimes"]:
                check(b["to_ns"] is None or b["from_ns"] < b["to_ns"],
                      "%s: bucket %r" % (f, b))
        a, l, n = sites["at_once_site"], sites["later_site"], sites["never_site"]
        check(a["lifetime_median_ns"] is not None and
              a["lifetime_median_ns"] < 1000,
              "at once: median %r, not under 1 us" % a["lifetime_median_ns"])
        check(l["lifetime_median_ns"] is not None and
              3e8 <= l["lifetime_median_ns"] <= 1e9,
              "0.5 s: median %r, not in 0.3-1 s" % l["lifetime_median_ns"])
        check(n["lifetime_median_ns"] is None and n["lifetimes"] == [],
              "never: median %r, buckets %r" % (n["lifetime_median_ns"],
                                                n["lifetimes"]))
        check(a["short_lived_share"] > 0.99 and l["short_lived_share"] == 0
              and n["short_lived_share"] == 0, "short-lived shares")
        check(a["live_age_ns"] is None and l["live_age_ns"] is None,
              "ages of sites with nothing live: %r %r"
              % (a["live_age_ns"], l["live_age_ns"]))
        check(n["live_age_ns"] is not None and n["live_age_ns"] >= 2e9 and
              n["oldest_live_age_ns"] >= n["live_age_ns"],
              "never: live age %r, oldest %r"
              % (n["live_age_ns"], n["oldest_live_age_ns"]))

        with tempfile.TemporaryDirectory(prefix="mstat-lifetimes.") as d:
            path = os.path.join(d, "heap.pb.gz")
            out = subprocess.run([TOP, "-p", str(p.pid), "--pprof=" + path],
                                 capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "--pprof: %s" % out.stderr)
            with open(path, "rb") as f:
                prof = pprofproto.Profile(f.read())
        by = {}
        for smp in prof.samples:
            by.setdefault(prof.function_of(smp.locations[0]), []).append(smp)
        for f in ("at_once_site", "later_site", "never_site"):
            check(f in by, "pprof: no sample of %s" % f)
        for smp in by["at_once_site"]:
            v = smp.labels.get("lifetime")
            check(v and v[2] == "nanoseconds" and v[1] < 1000,
                  "pprof: at once: lifetime %r" % (v,))
        for smp in by["later_site"]:
            v = smp.labels.get("lifetime")
            check(v and 3e8 <= v[1] <= 1e9, "pprof: later: lifetime %r" % (v,))
        for smp in by["never_site"]:
            check("lifetime" not in smp.labels and
                  smp.labels.get("age", ("", 0, ""))[1] >= 2e9,
                  "pprof: never: labels %r" % smp.labels)
        print("pprof: lifetime and age labels, in nanoseconds")
    finally:
        p.stdin.close()
        p.wait(timeout=60)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
