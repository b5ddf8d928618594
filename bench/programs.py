#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""programs.py - what counting costs real programs (suite `programs`).

  programs.py --lib SO --forward SO --lean SO --run MSTAT_RUN --service EXE
              [--rounds N] [--only NAME,...] [--variant NAME=SO[,VAR=VALUE...] ...]
              [--service-args "THREADS REQUESTS"] [--cpus LIST]

Runs each program plain and with each preload, one run of each in turn,
in an order rotated every round, every run a fresh process; takes each
round's ratio to the plain run of the same round, and reports the median
over rounds with the quartiles and the extremes as the spread.  The
programs are Debian's python3 (PYTHONMALLOC=malloc, a dict, json and sort
script), sqlite3 (a 300,000-row insert, an index, a group by), jq (over
17 MB of JSON) and mstat-bench-service (bench/service.cc, C++, a
two threads handing batches of messages to each other).

The pairs of a program are its allocations, counted by the library
itself: one run under mstat-run, whose summary gives the final totals.
The extra ns per pair is (preloaded wall - plain wall) / pairs, per
round, median over rounds.

Summary lines:
  BENCH programs program=P variant=V wall_ratio=.. q1=.. q3=.. min=.. max=..
        cpu_ratio=.. extra_ns_pair=.. pairs=.. plain_s=..
  BENCH programs-goal program=P variant=lib wall_ratio=.. goal=1.03 met=..
--variant NAME=SO adds a preload (another build of the library, say) to
the same run, with the environment variables that follow it, if any
(--variant nosample=libmstatshm.so,MSTAT_SAMPLE_BYTES=0); every other
MSTAT_ variable is dropped.  MSTAT_BENCH_ROUNDS overrides --rounds.
--service-args replaces the service's "2 150000"; --cpus 0 runs every
program on CPU 0 alone (a comma-separated list of CPUs), so that two
threads take turns instead of running side by side.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PY_SCRIPT = r'''
import json, random
random.seed(7)
rows = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 13), "u%d" % (i % 7)],
         "score": random.random()} for i in range(120000)]
text = json.dumps(rows)
back = json.loads(text)
index = {}
for r in back:
    index.setdefault(r["tags"][0], []).append((r["score"], r["name"]))
for k in index:
    index[k].sort()
words = {}
for r in back:
    for w in (r["name"], r["tags"][1], str(r["id"] % 1000)):
        words[w] = words.get(w, 0) + 1
top = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
print(len(text), sum(len(v) for v in index.values()), top)
'''

SQL_SCRIPT = r'''
create table t(k integer primary key, a integer, b text);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 300000)
insert into t select i, i * 7919 % 1000, printf('%08d-%s', i * 104729 % 100003, hex('v' || i)) from n;
create index tb on t(b);
create index ta on t(a, b);
select count(*), min(b), max(b), sum(length(b)) from t;
select a % 17 g, count(*), max(b) from t group by g order by g limit 5;
select count(distinct substr(b, 1, 4)) from t;
'''

JQ_FILTER = ('[.[] | select(.v % 3 == 0)] | length, (map(.v) | add), '
             '(group_by(.v % 7) | map(length)), (map(.s | length) | add)')


def make_inputs(tmp):
    with open(os.path.join(tmp, "work.py"), "w") as f:
        f.write(PY_SCRIPT)
    with open(os.path.join(tmp, "work.sql"), "w") as f:
        f.write(SQL_SCRIPT)
    # About 17 MB of JSON: objects with a number, a string and a list.
    with open(os.path.join(tmp, "in.json"), "w") as f:
        f.write("[")
        for i in range(170000):
            f.write("%s{\"k\":%d,\"v\":%d,\"s\":\"%s\",\"l\":[%d,%d,%d]}" % (
                "," if i else "", i, i * 7919 % 1000, "x" * (i % 40),
                i % 3, i % 5, i % 7))
        f.write("]\n")


def programs(tmp, service, service_args):
    py = shutil.which("python3", path="/usr/bin") or "python3"
    return {
        "python": ([py, os.path.join(tmp, "work.py")], {"PYTHONMALLOC": "malloc"}),
        "sqlite": (["sqlite3", ":memory:", ".read " + os.path.join(tmp, "work.sql")], {}),
        "jq": (["jq", "-c", JQ_FILTER, os.path.join(tmp, "in.json")], {}),
        "cxx-service": ([service] + service_args.split(), {}),
    }


DROP = ("LD_PRELOAD", "GLIBC_TUNABLES", "PYTHONMALLOC")


def env_for(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in DROP and not k.startswith("MALLOC_") and not k.startswith("MSTAT_")}
    env.update(extra)
    return env


CPUS = None  # --cpus: the CPUs every run is confined to


def confine():
    if CPUS:
        os.sched_setaffinity(0, CPUS)


def run(argv, env, out=subprocess.DEVNULL):
    """Wall seconds and CPU seconds (user + system) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.PIPE,
                         preexec_fn=confine)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read()
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (argv[0], p.returncode, err.decode(errors="replace")))
    return wall, ru.ru_utime + ru.ru_stime


def quantile(v, q):
    v = sorted(v)
    if len(v) == 1:
        return v[0]
    x = q * (len(v) - 1)
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--forward", required=True)
    ap.add_argument("--lean", required=True)
    ap.add_argument("--run", required=True, help="mstat-run, for the pair counts")
    ap.add_argument("--service", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--only", default="")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=SO[,VAR=VALUE...]: one more preload in the same run")
    ap.add_argument("--service-args", default="2 150000")
    ap.add_argument("--cpus", default="", help="LIST: confine every run to these CPUs")
    a = ap.parse_args()
    global CPUS
    CPUS = {int(c) for c in a.cpus.split(",")} if a.cpus else None
    rounds = int(os.environ.get("MSTAT_BENCH_ROUNDS", a.rounds))

    variants = [("plain", None, {}), ("lib", a.lib, {}), ("forward", a.forward, {}),
                ("lean", a.lean, {})]
    for v in a.variant:
        name, _, rest = v.partition("=")
        so, *kvs = rest.split(",")
        variants.append((name, so, dict(kv.split("=", 1) for kv in kvs)))
    tmp = tempfile.mkdtemp(prefix="mstat-bench-programs.")
    try:
        make_inputs(tmp)
        progs = programs(tmp, a.service, a.service_args)
        if a.only:
            progs = {k: v for k, v in progs.items() if k in a.only.split(",")}

        # Same output plain and preloaded; the pairs, from the library's totals.
        pairs = {}
        for name, (argv, extra) in progs.items():
            outs = []
            for _, so, venv in variants:
                e = dict(extra, **venv, **({"LD_PRELOAD": so} if so else {}))
                with open(os.path.join(tmp, "out"), "wb") as f:
                    run(argv, env_for(e), f)
                with open(os.path.join(tmp, "out"), "rb") as f:
                    outs.append(f.read())
            if any(o != outs[0] for o in outs):
                sys.exit("%s: output differs between variants" % name)
            summary = os.path.join(tmp, "summary.json")
            run([a.run, "--summary", summary, "--"] + argv, env_for(extra))
            with open(summary) as f:
                s = json.load(f)
            pairs[name] = s["process"]["alloc_count"]
            print("program %s pairs=%d threads_slots=%d output=%d bytes" % (
                name, pairs[name], s.get("slots_used", 0), len(outs[0])), flush=True)

        wall = {p: {v[0]: [] for v in variants} for p in progs}
        cpu = {p: {v[0]: [] for v in variants} for p in progs}
        for r in range(rounds):
            for name, (argv, extra) in progs.items():
                order = variants[r % len(variants):] + variants[:r % len(variants)]
                for v, so, venv in order:
                    e = dict(extra, **venv, **({"LD_PRELOAD": so} if so else {}))
                    w, c = run(argv, env_for(e))
                    wall[name][v].append(w)
                    cpu[name][v].append(c)
            print("round %d/%d done" % (r + 1, rounds), flush=True)

        for name in progs:
            base_w, base_c = wall[name]["plain"], cpu[name]["plain"]
            print("%s: plain wall %s" % (name, " ".join("%.3f" % x for x in base_w)))
            for v, _, _ in variants[1:]:
                ratios = [x / b for x, b in zip(wall[name][v], base_w)]
                cratios = [x / b for x, b in zip(cpu[name][v], base_c)]
                extra_ns = [(x - b) * 1e9 / pairs[name] for x, b in zip(wall[name][v], base_w)]
                print("BENCH programs program=%s variant=%s wall_ratio=%.4f q1=%.4f q3=%.4f "
                      "min=%.4f max=%.4f cpu_ratio=%.4f extra_ns_pair=%.1f pairs=%d plain_s=%.3f" % (
                          name, v, statistics.median(ratios), quantile(ratios, 0.25),
                          quantile(ratios, 0.75), min(ratios), max(ratios),
                          statistics.median(cratios), statistics.median(extra_ns),
                          pairs[name], statistics.median(base_w)), flush=True)
        for name in progs:
            ratios = [x / b for x, b in zip(wall[name]["lib"], wall[name]["plain"])]
            m = statistics.median(ratios)
            print("BENCH programs-goal program=%s variant=lib wall_ratio=%.4f goal=1.03 met=%s "
                  "stretch=1.02 met=%s" % (name, m, "yes" if m <= 1.03 else "no",
                                          "yes" if m <= 1.02 else "no"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
