#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/prometheus/mstat.rules.yml, tested with promtool.

    rules.py ROOT      (PROMTOOL: promtool)

1. `promtool check rules`: the file is valid, every expression parses.
2. `promtool test rules` over the series of one process each, scraped
   every 15 s for 6 hours, the rules evaluated every minute (Prometheus's
   default), made below from seeded functions of time:
     plateau   a warm-up, then flat, with churn
     cache     a cache filling to 1 GiB (time constant 25 min), flushed
               after 3 hours and filled again
     sawtooth  teeth of 2 to 5 minutes, random heights; and teeth of 20
               minutes, heights 80 to 120 MiB
     bursts    bursts of 100 to 800 MiB, 30 s to 3 min long, every 10 to
               40 minutes, allocating 20 times as fast meanwhile
   none of which fires any alert, ever; and
     slow      a leak of 1 MiB/h from the end of its first hour:
               MstatHeapLeak fires within the hour, nothing before it,
               MstatHeapLeakFast never
     fast      a leak of 100 MiB/h from the same time:
               MstatHeapLeakFast fires within 5 minutes
     class     a leak of 1 MiB/h in one size class (64), beside a class
               that churns 64 MiB: MstatHeapLeak of that class, within
               the hour
     surge     20,000 allocations per second, then 100,000 for 40
               minutes: MstatAllocationSurge, within 20 minutes
     killed    killed by the OOM killer, its post-mortem named; killed
               by a signal, none written: MstatProcessKilled, as said
     gap       an allocator that holds 1.2 GiB free of 2 GiB resident:
               MstatHeapRssGap after 30 minutes; one that holds 100 MiB:
               none.
3. Each alert's `dashboard` annotation opens a panel of
   docs/mstat-grafana.json that shows a metric the alert reads.
(kubernetes.js checks that deploy/kubernetes/prometheusrule.yaml holds
these groups.)
Then each broken variant of the rules (BROKEN below: each drops one
condition of a rule) must fail a test of step 2.
"""
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = sys.argv[1]
PROMTOOL = os.environ.get("PROMTOOL", "")
RULES = os.path.abspath(os.path.join(ROOT, "deploy", "prometheus", "mstat.rules.yml"))
DASHBOARD = os.path.join(ROOT, "docs", "mstat-grafana.json")

MiB = 1 << 20
GiB = 1 << 30
STEP = 15                  # seconds between scrapes
HOURS = 6
N = HOURS * 3600 // STEP   # scrapes after the first
INSTANCE = "host1:10415"


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def churn(rng, top, idle=0.5):
    """What a process holds for the work in hand: nothing between two
    pieces of work (probability `idle`), else up to `top` bytes."""
    return 0.0 if rng.random() < idle else rng.uniform(0, top)


def series(f):
    """f(t) at every scrape, t in seconds from the process's start."""
    return [f(i * STEP) for i in range(N + 1)]


def plateau():
    rng = random.Random(1)
    return series(lambda t: 300 * MiB * (1 - math.exp(-t / 120))
                  + churn(rng, 32 * MiB))


def cache():
    rng = random.Random(2)

    def f(t):
        since = t if t < 3 * 3600 else t - 3 * 3600    # flushed at 3 h
        return (64 * MiB * (1 - math.exp(-t / 60))
                + GiB * (1 - math.exp(-since / 1500)) + churn(rng, 16 * MiB))
    return series(f)


def teeth(rng, period, height, base):
    """A sawtooth: each tooth rises for its period, from `base` to a
    height of its own, and drops at once; period() and height() draw
    them."""
    ends, t = [], 0.0
    while t < HOURS * 3600 + 3600:
        p, h = period(), height()
        ends.append((t, t + p, h))
        t += p
    vals = []
    k = 0
    for i in range(N + 1):
        t = i * STEP
        while ends[k][1] <= t:
            k += 1
        start, end, h = ends[k]
        vals.append(base + h * (t - start) / (end - start)
                    + churn(rng, 8 * MiB))
    return vals


def sawtooth_short():
    rng = random.Random(3)
    return teeth(rng, lambda: rng.uniform(120, 300),
                 lambda: rng.uniform(32, 96) * MiB, 200 * MiB)


def sawtooth_long():
    rng = random.Random(4)
    return teeth(rng, lambda: 1200, lambda: rng.uniform(80, 120) * MiB,
                 200 * MiB)


def bursts():
    """Live bytes and the allocation counter of a process with bursts."""
    rng = random.Random(5)
    spans, t = [], 0.0
    while t < HOURS * 3600:
        t += rng.uniform(600, 2400)
        spans.append((t, t + rng.uniform(30, 180), rng.uniform(100, 800) * MiB))
    live, allocs, total = [], [], 0.0
    for i in range(N + 1):
        t = i * STEP
        b = [h for s, e, h in spans if s <= t < e]
        live.append(150 * MiB + churn(rng, 16 * MiB) + (b[0] if b else 0))
        total += STEP * 20000 * (20 if b else 1)
        allocs.append(total)
    return live, allocs


def leak(per_hour, seed):
    """200 MiB after a warm-up of minutes, churn of up to 4 MiB, and a
    leak of `per_hour` bytes an hour from the end of the first hour."""
    rng = random.Random(seed)
    return series(lambda t: 200 * MiB * (1 - math.exp(-t / 60))
                  + churn(rng, 4 * MiB)
                  + per_hour * max(0, t - 3600) / 3600)


def class_leak():
    """Two size classes: 64 leaks 1 MiB/h from the end of the first hour
    over 20 MiB; 4096 churns up to 64 MiB.  Their counters, and the
    process's live bytes."""
    rng = random.Random(6)
    small = series(lambda t: 20 * MiB + churn(rng, MiB)
                   + MiB * max(0, t - 3600) / 3600)
    big = series(lambda t: 100 * MiB + churn(rng, 64 * MiB))
    out = {}
    for size, live in (("64", small), ("4096", big)):
        # Freed: 1 GiB a second; allocated: that and what is live.
        freed = [i * STEP * GiB for i in range(N + 1)]
        out[size] = ([f + v for f, v in zip(freed, live)], freed)
    return out, [a + b for a, b in zip(small, big)]


def surge():
    total, out = 0.0, []
    for i in range(N + 1):
        t = i * STEP
        total += STEP * (100000 if 3 * 3600 <= t < 3 * 3600 + 2400 else 20000)
        out.append(total)
    return out


def values(v):
    return " ".join("%.0f" % x for x in v)


def labels(pid, name, **more):
    extra = "".join(',%s="%s"' % kv for kv in sorted(more.items()))
    return '{job="mstat",instance="%s",pid="%d",name="%s"%s}' % (
        INSTANCE, pid, name, extra)


def process(pid, name, live, allocs=None):
    """The input series of one process: its start (0, the test's
    beginning), its live bytes and its allocations."""
    if allocs is None:
        allocs = [i * STEP * 20000.0 for i in range(N + 1)]
    return [
        {"series": "mstat_process_start_time_seconds" + labels(pid, name),
         "values": "0x%d" % N},
        {"series": "mstat_live_bytes" + labels(pid, name),
         "values": values(live)},
        {"series": "mstat_allocs_total" + labels(pid, name),
         "values": values(allocs)},
    ]


def never(pid):
    """No alert fires for `pid` in the whole run."""
    return {"expr": 'count_over_time(ALERTS{alertstate="firing",pid="%d"}[%dh])'
            % (pid, HOURS), "eval_time": "%dh" % HOURS, "exp_samples": []}


def firing(pid, name, alert, by, severity, **more):
    """`alert` fires for `pid` at `by`."""
    lab = dict(alertname=alert, alertstate="firing", job="mstat",
               instance=INSTANCE, pid=str(pid), name=name, severity=severity,
               **more)
    return {"expr": 'ALERTS{alertname="%s",alertstate="firing",pid="%d"}'
            % (alert, pid), "eval_time": by,
            "exp_samples": [{"labels": "ALERTS{%s}" % ",".join(
                '%s="%s"' % kv for kv in sorted(lab.items())), "value": 1}]}


def quiet_until(pid, until):
    """No alert fires for `pid` before `until` (minutes)."""
    return {"expr": 'count_over_time(ALERTS{alertstate="firing",pid="%d"}[%dm])'
            % (pid, until), "eval_time": "%dm" % until, "exp_samples": []}


def unit_tests(rules):
    inputs, tests, alerts = [], [], []
    kinds = [("plateau", plateau()), ("cache", cache()),
             ("sawtooth-short", sawtooth_short()),
             ("sawtooth-long", sawtooth_long())]
    for pid, (name, live) in enumerate(kinds, 1):
        inputs += process(pid, name, live)
        tests.append(never(pid))
    live, allocs = bursts()
    inputs += process(5, "bursts", live, allocs)
    tests.append(never(5))

    inputs += process(10, "slow", leak(MiB, 10))
    tests += [quiet_until(10, 60),
              firing(10, "slow", "MstatHeapLeak", "120m", "warning"),
              {"expr": 'count_over_time(ALERTS{alertname="MstatHeapLeakFast",'
                       'pid="10"}[%dh])' % HOURS,
               "eval_time": "%dh" % HOURS, "exp_samples": []}]
    inputs += process(11, "fast", leak(100 * MiB, 11))
    tests += [quiet_until(11, 60),
              firing(11, "fast", "MstatHeapLeakFast", "65m", "critical")]

    classes, live = class_leak()
    inputs += process(12, "class", live)
    for size, (alloc, free) in classes.items():
        inputs += [
            {"series": "mstat_class_alloc_bytes_total" + labels(12, "class", size=size),
             "values": values(alloc)},
            {"series": "mstat_class_free_bytes_total" + labels(12, "class", size=size),
             "values": values(free)}]
    tests += [quiet_until(12, 60),
              firing(12, "class", "MstatHeapLeak", "120m", "warning", size="64")]
    tests[-1]["exp_samples"].append(firing(12, "class", "MstatHeapLeak", "120m",
                                           "warning")["exp_samples"][0])

    inputs += process(13, "surge", [100 * MiB] * (N + 1), surge())
    tests += [quiet_until(13, 180),
              firing(13, "surge", "MstatAllocationSurge", "200m", "warning")]

    # Killed at 30 minutes; shown for the grace, 300 s.
    pm = "/var/tmp/mstat/api-14-19700101T003000Z.pb.gz"
    gone = "_x%d 1x20 _x%d" % (30 * 4 - 1, N - 30 * 4 - 20)
    inputs += [
        {"series": 'mstat_killed_info{job="mstat",instance="%s",pid="14",'
                   'name="api",how="oomkill",postmortem="%s"}' % (INSTANCE, pm),
         "values": gone},
        {"series": 'mstat_killed_info{job="mstat",instance="%s",pid="15",'
                   'name="batch",how="killed"}' % INSTANCE,
         "values": gone}]
    common = dict(job="mstat", instance=INSTANCE)
    alerts.append({"eval_time": "32m", "alertname": "MstatProcessKilled",
                   "exp_alerts": [
        {"exp_labels": dict(common, pid="14", name="api", how="oomkill",
                            postmortem=pm, severity="critical"),
         "exp_annotations": {
             "summary": "api (pid 14 on %s) was killed by the OOM killer"
                        % INSTANCE,
             "description": "Its heap profile at its death is in %s on %s: "
                            "go tool pprof -sample_index=inuse_space %s. "
                            "Until its segment goes: go tool pprof "
                            "http://%s/debug/pprof/heap?pid=14"
                            % (pm, INSTANCE, pm, INSTANCE),
             "dashboard": "d/mstat-heap/mstat?viewPanel=12&var-instance=%s"
                          "&var-name=api" % INSTANCE}},
        {"exp_labels": dict(common, pid="15", name="batch", how="killed",
                            severity="warning"),
         "exp_annotations": {
             "summary": "batch (pid 15 on %s) was killed by a signal"
                        % INSTANCE,
             "description": "No post-mortem file was written "
                            "(mstat-exporter --postmortem-dir). "
                            "Until its segment goes: go tool pprof "
                            "http://%s/debug/pprof/heap?pid=15" % INSTANCE,
             "dashboard": "d/mstat-heap/mstat?viewPanel=12&var-instance=%s"
                          "&var-name=batch" % INSTANCE}}]})
    tests.append(quiet_until(14, 29))

    for pid, free in ((16, 1.2 * GiB), (17, 100 * MiB)):
        inputs += [
            {"series": "mstat_resident_memory_bytes" + labels(pid, "gap"),
             "values": "%.0fx%d" % (2 * GiB, N)},
            {"series": "mstat_memory_bytes" + labels(
                pid, "gap", part="allocator_free"),
             "values": "%.0fx%d" % (free, N)}]
    tests += [quiet_until(16, 29),
              firing(16, "gap", "MstatHeapRssGap", "31m", "warning"),
              never(17)]
    return {"rule_files": [rules], "evaluation_interval": "1m",
            "tests": [{"interval": "%ds" % STEP, "input_series": inputs,
                       "alert_rule_test": alerts, "promql_expr_test": tests}]}


# Broken variants: (what, text of the rules replaced wherever it is, by).
# Each must make a test of unit_tests() fail.
BROKEN = [
    ("the slow leak rule without its check that growth goes on",
     "            >= 0.5 * (mstat:live_bytes:floor10m offset 30m - "
     "mstat:live_bytes:floor10m offset 40m)\n", "            >= 0\n"),
    ("the fast leak rule without its margin over the floors of before",
     "            > 2 * max_over_time(mstat:live_bytes:floor1m[30m] offset 33m)\n"
     "              - quantile_over_time(0.5, mstat:live_bytes:floor1m[30m] "
     "offset 33m)\n", "            > 0\n"),
    ("the slow leak rule on live bytes, not their floor",
     "min_over_time(mstat_live_bytes[10m])", "mstat_live_bytes"),
    ("the fast leak rule held for 10 minutes",
     "        for: 1m\n", "        for: 10m\n"),
    ("the surge rule held for a minute",
     "        for: 15m\n", "        for: 1m\n"),
    ("the rules on a process in its first hour",
     "mstat_process_start_time_seconds >= 3600", "mstat_process_start_time_seconds >= 0"),
]


def promtool(*args):
    return subprocess.run([PROMTOOL] + list(args), capture_output=True,
                          text=True, timeout=600)


def run_tests(d, rules):
    path = os.path.join(d, "tests.yml")
    with open(path, "w") as f:
        json.dump(unit_tests(rules), f)   # JSON is YAML
    return promtool("test", "rules", path)


def alert_metrics(expr):
    return set(re.findall(r"\b(mstat_[a-z0-9_]+)\b", expr))


def check_dashboard(groups):
    with open(DASHBOARD) as f:
        board = json.load(f)
    panels = {p["id"]: p for p in board["panels"]}
    for g in groups:
        for r in g["rules"]:
            if "alert" not in r:
                continue
            link = r.get("annotations", {}).get("dashboard", "")
            m = re.search(r"viewPanel=([^&]*)", link)
            ids = {int(i) for i in re.findall(r"\d+", m.group(1))} if m else set()
            if not link.startswith("d/%s/" % board["uid"]) or not ids:
                fail("%s: no link to the dashboard (%s): %r"
                     % (r["alert"], board["uid"], link))
            wants = alert_metrics(r["expr"])
            # The floors are of mstat_live_bytes and of the class counters.
            if "mstat:live_bytes" in r["expr"]:
                wants |= {"mstat_live_bytes", "mstat_class_alloc_bytes_total"}
            if "mstat:allocs" in r["expr"]:
                wants.add("mstat_allocs_total")
            for i in ids:
                if i not in panels:
                    fail("%s: panel %d is not in the dashboard" % (r["alert"], i))
                shown = set()
                for t in panels[i].get("targets", []):
                    shown |= alert_metrics(t["expr"])
                if not wants & shown:
                    fail("%s: panel %d (%s) shows none of %r"
                         % (r["alert"], i, panels[i]["title"], wants))


def main():
    if not PROMTOOL:
        print("SKIP: no promtool (bash scripts/deps.sh unpacks it)")
        return 77
    r = promtool("check", "rules", RULES)
    if r.returncode != 0:
        fail("promtool check rules:\n" + r.stdout + r.stderr)
    with open(RULES) as f:
        text = f.read()
    groups = yaml.safe_load(text)["groups"]
    with tempfile.TemporaryDirectory(prefix="mstat-rules.") as d:
        r = run_tests(d, RULES)
        if r.returncode != 0:
            fail("promtool test rules:\n" + r.stdout + r.stderr)
        print("promtool test rules: every series as expected")
        for what, old, new in BROKEN:
            if old not in text:
                fail("broken variant %r: its text is not in the rules" % what)
            path = os.path.join(d, "broken.yml")
            with open(path, "w") as f:
                f.write(text.replace(old, new))
            r = run_tests(d, path)
            if r.returncode == 0:
                fail("broken variant passed: " + what)
            print("refused as it should be: " + what)
    check_dashboard(groups)
    print("every alert opens a panel that shows what it reads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
