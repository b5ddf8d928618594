#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ab.py - two builds of the library side by side on the hot loop.

    python3 bench/ab.py --pairs build-d/bench/mstat-bench-pairs \\
        --a /path/to/before/libmstatshm.so.0 --b build-d/lib/libmstatshm.so.0 \\
        [--rounds 41] [--ms 60] [--threads 1,2]

Each round runs mstat-bench-pairs (bench/pairs.c) plain, with A
preloaded and with B preloaded, each a fresh process, in an order
rotated every round, for each thread count.  Per round it takes B's
time per pair over A's, and each one's extra over plain in that same
round; it prints their medians over rounds, with quartiles.  What
bench/writer.c's --before gives, without its other variants: more
rounds in the same time, for "does this change cost anything?".

Prints one line per thread count:
  BENCH ab threads=T ratio_b_a=R q1=.. q3=.. extra_a=+X extra_b=+Y plain_ns=P rounds=N
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


def run(pairs, lib, threads, ms):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    out = subprocess.run(
        [pairs, "--variant", "plain", "--threads", str(threads), "--ms", str(ms)],
        env=env, capture_output=True, text=True, check=True).stdout
    m = re.search(r"ns_pair=([0-9.]+)", out)
    if not m:
        sys.exit("ab.py: no ns_pair in: " + out.strip())
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--a", required=True, help="the library before")
    ap.add_argument("--b", required=True, help="the library after")
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--ms", type=int, default=60)
    ap.add_argument("--threads", default="1,2")
    o = ap.parse_args()
    variants = [("plain", None), ("a", o.a), ("b", o.b)]
    for t in [int(x) for x in o.threads.split(",")]:
        ratio, ea, eb, plain = [], [], [], []
        for r in range(o.rounds):
            order = variants[r % 3:] + variants[:r % 3]
            ns = {name: run(o.pairs, lib, t, o.ms) for name, lib in order}
            ratio.append(ns["b"] / ns["a"])
            ea.append(ns["a"] - ns["plain"])
            eb.append(ns["b"] - ns["plain"])
            plain.append(ns["plain"])
        q1, med, q3 = quartiles(ratio)
        print("BENCH ab threads=%d ratio_b_a=%.3f q1=%.3f q3=%.3f "
              "extra_a=%+.2f extra_b=%+.2f plain_ns=%.2f rounds=%d"
              % (t, med, q1, q3, statistics.median(ea), statistics.median(eb),
                 statistics.median(plain), o.rounds))


if __name__ == "__main__":
    main()
