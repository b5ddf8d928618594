#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of mstat-exporter against real instrumented processes.

    e2e.py TEST     TEST: flags http formats gone concurrent busy stalled
                          tls dashboard prometheus health crowd pprof
                          pprof_tls pprof_go pprof_concurrent
                          pprof_prometheus

Environment (set by meson): MSTAT_EXPORTER, MSTAT_TOP, MSTAT_TARGET
(tests/top/target.c), PROMTOOL, PROMETHEUS (as scripts/deps.sh
unpacks them), OPENSSL (empty when not found), DASHBOARD
(docs/mstat-grafana.json), GO (empty when go is not installed),
MSTAT_SAMPLES (0 where a sanitizer's malloc stands in for the
library's, so that processes sample nothing: the profiles are checked
for what they are without samples; so too under valgrind).

The pprof tests read profiles with pprofproto.py, a reader of
profile.proto written from the format, and with go tool pprof.

The exporter reads every segment of this user, other tests' among them:
every assertion is about processes this script started (by pid and a
name unique to this run).  Ports are ones the kernel found free, never
fixed numbers.  Nothing here asserts a duration: a hang shows as a
timeout, generous enough for a loaded machine.
"""
import base64
import ctypes
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pprofproto

EXPORTER = os.environ["MSTAT_EXPORTER"]
TOP = os.environ["MSTAT_TOP"]
TARGET = os.environ["MSTAT_TARGET"]
PROMTOOL = os.environ.get("PROMTOOL", "")
PROMETHEUS = os.environ.get("PROMETHEUS", "")
OPENSSL = os.environ.get("OPENSSL", "")
DASHBOARD = os.environ["DASHBOARD"]
RULES = os.environ["RULES"]
GO = os.environ.get("GO", "")
TAG = "exp%d" % os.getpid()  # unique names for this run
VALGRIND = "vgpreload" in os.environ.get("LD_PRELOAD", "")
# Memcheck's malloc, too, stands in for the library's everywhere.
SAMPLES = os.environ.get("MSTAT_SAMPLES", "1") != "0" and not VALGRIND
TIMEOUT = 90 * (20 if VALGRIND else 1)  # a hang, not a slow machine

B = 1 << 37  # the size target.c's fixed mode counts: 10 allocs, 3 frees
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,"
                     "application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
OM_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

children = []
tmpdirs = []


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_for(cond, what, timeout=None):
    deadline = time.monotonic() + (timeout or TIMEOUT)
    while True:
        v = cond()
        if v:
            return v
        check(time.monotonic() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


def tmpdir():
    d = tempfile.mkdtemp(prefix="mstat-exporter-%s-" % TAG)
    tmpdirs.append(d)
    return d


class Target:
    """An instrumented process; it exits cleanly when stop() closes stdin."""

    def __init__(self, mode, name, env=None):
        self.name = name
        self.p = subprocess.Popen([TARGET, mode], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  env=dict(os.environ, MSTAT_NAME=name,
                                           **(env or {})))
        children.append(self.p)
        line = self.p.stdout.readline()
        check(line == b"ready\n", "%s did not start: %r" % (mode, line))
        self.pid = self.p.pid

    def labels(self):
        return 'pid="%d",name="%s"' % (self.pid, self.name)

    def stop(self):
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGCONT)
            self.p.stdin.close()
            self.p.wait(timeout=TIMEOUT)


def segments_of(pid):
    return [n for n in os.listdir("/dev/shm") if n.startswith("mstat.%d." % pid)]


def free_port():
    """A port free a moment ago: whoever binds it must be ready to find it
    taken since, and try another."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Exporter:
    """mstat-exporter on a free port of 127.0.0.1 (it takes no port 0)."""

    def __init__(self, *args, scheme="http", ca=None):
        self.err = os.path.join(tmpdir(), "stderr")
        for attempt in range(20):
            self.port = free_port()
            with open(self.err, "w") as err:
                self.p = subprocess.Popen(
                    [EXPORTER, "--web.listen-address=127.0.0.1:%d" % self.port]
                    + list(args), stdout=subprocess.DEVNULL, stderr=err)
            children.append(self.p)
            wait_for(lambda: self.p.poll() is not None or re.search(
                r"listening on 127\.0\.0\.1:%d " % self.port, self.stderr()),
                "the exporter to listen: %s" % self.stderr())
            if self.p.poll() is None:
                break
            check("Address already in use" in self.stderr(),
                  "the exporter exited %d: %s" % (self.p.returncode,
                                                  self.stderr()))
        else:
            raise Failure("no free port in 20 attempts")
        self.scheme = scheme
        self.ctx = ssl.create_default_context(cafile=ca) if ca else None

    def stderr(self):
        with open(self.err) as f:
            return f.read()

    def url(self, path):
        return "%s://127.0.0.1:%d%s" % (self.scheme, self.port, path)

    def get(self, path="/metrics", accept=None, auth=None, method="GET"):
        """(status, content type, body, headers)."""
        req = urllib.request.Request(self.url(path), method=method)
        if accept:
            req.add_header("Accept", accept)
        if auth:
            req.add_header("Authorization", "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT,
                                        context=self.ctx) as r:
                return (r.status, r.headers.get("Content-Type"),
                        r.read().decode(), r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read().decode(), \
                e.headers

    def raw(self, path, auth=None, method="GET"):
        """(status, headers, body bytes)."""
        req = urllib.request.Request(self.url(path), method=method)
        if auth:
            req.add_header("Authorization", "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT,
                                        context=self.ctx) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def metrics(self, accept=None, **kw):
        status, ctype, body, _ = self.get(accept=accept, **kw)
        check(status == 200, "scrape: %d %s" % (status, body))
        return body

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.p.wait(timeout=TIMEOUT)
            check(self.p.returncode == 0, "the exporter exited %d: %s" %
                  (self.p.returncode, self.stderr()))


def samples(text):
    """{'name{labels}': value} of an exposition, either format."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def of(text, t):
    """The samples of target t, by metric name and the labels after pid
    and name: {'mstat_live_bytes': v, 'mstat_class_allocs_total,size="..."': v}."""
    out = {}
    prefix = "{" + t.labels()
    for series, v in samples(text).items():
        name, _, rest = series.partition(prefix)
        if rest:
            out[name + rest[:-1]] = v
    return out


def expect_fixed(s, what, classes=True):
    """Target.c's fixed mode, exactly: 10 allocations and 3 frees of 2^37
    bytes in their class; the totals hold those and the process's own
    small allocations."""
    live = 7 * B
    check(live <= s.get("mstat_live_bytes", -1) < live + (1 << 36),
          "%s: live bytes %r" % (what, s.get("mstat_live_bytes")))
    check(s["mstat_live_bytes"] == s["mstat_alloc_bytes_total"] -
          s["mstat_free_bytes_total"], "%s: live = alloc - free" % what)
    check(s["mstat_running"] == 1 and s["mstat_threads"] == 1,
          "%s: running, one thread" % what)
    if classes:
        k = ',size="%d"' % B
        got = [s.get(n + k) for n in ("mstat_class_allocs_total",
                                      "mstat_class_alloc_bytes_total",
                                      "mstat_class_frees_total",
                                      "mstat_class_free_bytes_total")]
        check(got == [10, 10 * B, 3, 3 * B], "%s: class %r" % (what, got))


def parse_openmetrics(text):
    """Strictly, with Prometheus's Python client's OpenMetrics parser, and
    our rules: no timestamps, pid and name on per-process samples."""
    try:
        from prometheus_client.openmetrics.parser import \
            text_string_to_metric_families
    except ImportError:
        raise Failure("python3-prometheus-client is not installed "
                      "(bash scripts/deps.sh installs it)")
    families = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = fam
        for smp in fam.samples:
            check(smp.timestamp is None, "a timestamp: %r" % (smp,))
            if not fam.name.startswith("mstat_exporter_"):
                check({"pid", "name"} <= set(smp.labels), "labels %r" % (smp,))
    return families


def promtool(text):
    check(PROMTOOL, "no promtool (bash scripts/deps.sh unpacks it)")
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "promtool: %s" % r.stdout.decode())


# ---- the tests ----

def test_http():
    """The landing page, 404 and 405, a chosen telemetry path, and a
    query string that changes nothing."""
    t = Target("fixed", TAG + "-http")
    e = Exporter("--web.telemetry-path=/heap", "--collector.classes")
    status, ctype, body, _ = e.get("/")
    check(status == 200 and ctype.startswith("text/html") and
          '<a href="/heap">' in body, "landing page: %d %r" % (status, body))
    check(e.get("/metrics")[0] == 404, "/metrics is not the path now")
    check(e.get("/heap/x")[0] == 404, "only the path itself")
    status, _, _, headers = e.get("/heap", method="POST")
    check(status == 405 and headers.get("Allow") == "GET, HEAD", "POST: 405")
    status, _, body, headers = e.get("/heap", method="HEAD")
    check(status == 200 and body == "" and
          headers.get("Content-Type") == TEXT_TYPE, "HEAD: %d" % status)
    # Nothing in a URL chooses what is read: a query naming processes or
    # files is not even looked at.
    plain = samples(e.get("/heap")[2])
    other = samples(e.get("/heap?pid=1&name=x&file=/etc/passwd&collect[]=no")[2])
    mine = [s for s in plain if "pid=\"%d\"" % t.pid in s]
    check(mine and all(s in other for s in mine) and
          set(plain) - set(other) <= {s for s in plain if "pid=" in s and
                                      "pid=\"%d\"" % t.pid not in s},
          "the query string changed what was read")
    expect_fixed(of(e.get("/heap?pid=1")[2], t), "with a query")
    e.stop()
    t.stop()


def test_formats():
    """OpenMetrics 1.0.0 to a scraper that prefers it (strictly parsed),
    text 0.0.4 otherwise (promtool), the same series and exact counts in
    both; the exporter's own metrics."""
    f = Target("fixed", TAG + "-fmt")
    g = Target("steady", TAG + '-fmt "quoted" \\ name')
    e = Exporter("--collector.classes")
    status, ctype, om, _ = e.get(accept=PROMETHEUS_ACCEPT)
    check(status == 200 and ctype == OM_TYPE, "OpenMetrics: %r" % ctype)
    check(om.endswith("# EOF\n"), "ends with # EOF")
    fams = parse_openmetrics(om)
    for name, kind in (("mstat_allocs", "counter"), ("mstat_live_bytes", "gauge"),
                       ("mstat_requested_bytes", "counter"),
                       ("mstat_process", "info"),
                       ("mstat_process_start_time_seconds", "gauge"),
                       ("mstat_exporter_build", "info"),
                       ("mstat_exporter_scrape_duration_seconds", "gauge"),
                       ("mstat_exporter_scrape_errors", "counter"),
                       ("mstat_exporter_processes", "gauge")):
        check(name in fams and fams[name].type == kind,
              "%s is a %s: %r" % (name, kind, fams.get(name)))
    check(fams["mstat_live_bytes"].unit == "bytes", "a unit")
    reasons = {s.labels["reason"] for s in fams["mstat_exporter_scrape_errors"].samples}
    check(reasons == {"stalled", "busy", "refused", "dropped", "descriptors",
                      "read"}, "reasons %r" % reasons)
    expect_fixed(of(om, f), "OpenMetrics")
    check('name="%s-fmt \\"quoted\\" \\\\ name"' % TAG in om, "escaped name")
    start = of(om, f)["mstat_process_start_time_seconds"]
    check(abs(start - time.time()) < 600, "start time %r" % start)

    status, ctype, text, _ = e.get()
    check(status == 200 and ctype == TEXT_TYPE, "text: %r" % ctype)
    check("# EOF" not in text, "no # EOF in text 0.0.4")
    promtool(text)
    expect_fixed(of(text, f), "text")
    for accept in ("*/*", "text/plain", "application/openmetrics-text;q=0",
                   "application/json"):
        check(e.get(accept=accept)[1] == TEXT_TYPE, "Accept %s" % accept)
    check(e.get(accept="application/openmetrics-text")[1] == OM_TYPE,
          "OpenMetrics without a version")
    # The same series, whichever format (the exporter's own values and
    # the steady target's move between scrapes).  Only this test's
    # processes: others of the user may come and go between the scrapes.
    def ours_only(text):
        return {k for k in samples(text) if "mstat_exporter" in k or TAG in k}
    check(ours_only(om) == ours_only(text), "the same series")
    # Without --collector.classes: no per-class series; without
    # --collector.memory, no memory series.
    e.stop()
    e = Exporter()
    s = of(e.metrics(), f)
    expect_fixed(s, "without classes", classes=False)
    check(not [k for k in s if "class" in k], "no class series: %r" % s)
    check(not [k for k in s if "memory" in k], "no memory series: %r" % s)
    e.stop()
    # With it: the parts, which add up to the resident memory.
    e = Exporter("--collector.memory")
    s = of(e.metrics(), f)
    parts = {k: v for k, v in s.items() if k.startswith("mstat_memory_bytes")}
    check(sorted(parts) == sorted('mstat_memory_bytes,part="%s"' % p for p in (
        "live", "allocator_free", "allocator_overhead", "not_heap", "file",
        "shmem", "library")), "the parts: %r" % s)
    check(sum(parts.values()) == s["mstat_resident_memory_bytes"] > 0,
          "they add up: %r" % s)
    e.stop()
    f.stop()
    g.stop()


def test_gone():
    """A process that exits is gone from the next scrape; one killed stays
    while its segment is kept for the grace (MSTAT_KILLED_GRACE), not read
    again, with its final counts, mstat_running 0 and mstat_killed_info
    naming its post-mortem profile; with a grace of 0, removed."""
    a = Target("fixed", TAG + "-exit")
    k = Target("fixed", TAG + "-kill")
    pm = os.path.join(tmpdir(), "postmortem")
    os.mkdir(pm)
    e = Exporter("--postmortem-dir=" + pm)
    text = e.metrics()
    expect_fixed(of(text, a), "before", classes=False)
    expect_fixed(of(text, k), "before", classes=False)
    a.stop()
    os.kill(k.pid, signal.SIGKILL)
    k.p.wait(timeout=TIMEOUT)
    check(segments_of(k.pid), "a killed process leaves its segment")
    text = e.metrics()
    check(of(text, a) == {}, "exited: gone from the next scrape: %r"
          % of(text, a))
    check(segments_of(k.pid), "the killed process's segment kept")
    # (Other tests' processes killed meanwhile are written too.)
    files = [f for f in os.listdir(pm) if f.startswith(TAG)]
    check(len(files) == 1 and re.fullmatch(
        r"%s-kill-%d-\d{8}T\d{6}Z\.pb\.gz" % (re.escape(TAG), k.pid), files[0])
        and os.stat(os.path.join(pm, files[0])).st_mode & 0o777 == 0o600,
        "--postmortem-dir: the killed one's profile only: %r" % files)
    killed = of(text, k)
    check(killed.get("mstat_running") == 0 and killed.get(
        'mstat_killed_info,how="killed",postmortem="%s"'
        % os.path.join(pm, files[0])) == 1,
        "killed: running 0, how and its post-mortem: %r" % killed)
    check(7 * B <= killed.get("mstat_live_bytes", -1) < 7 * B + (1 << 36)
          and killed.get("mstat_threads") == 0,
          "killed: its final live bytes, no thread: %r" % killed)
    text = e.metrics()
    check(of(text, k) == killed, "not read again: %r" % of(text, k))
    e.stop()
    e = Exporter("--killed-grace=0")
    e.metrics()
    check(not segments_of(k.pid), "the killed process's segment removed "
          "with a grace of 0")
    e.stop()


def scrape_loop(e, targets, n, out, accept):
    try:
        for _ in range(n):
            text = e.metrics(accept=accept)
            for t in targets:
                expect_fixed(of(text, t), "concurrent scrape")
            out.append(text)
    except Exception as x:  # reported by the main thread
        out.append(x)


def test_concurrent():
    """Scrapes from many clients at once, while mstat-top reads the same
    segments ten times a second: every scrape exact, counters never
    going back, nothing busy."""
    if VALGRIND:
        # Memcheck runs one thread at a time, each tens of times slower:
        # readers then outwait each other's budgets, and nothing runs
        # concurrently to test.
        print("concurrency is not tested under valgrind")
        sys.exit(77)
    fixed = [Target("fixed", "%s-conc%d" % (TAG, i)) for i in range(3)]
    steady = Target("steady", TAG + "-conc-steady")
    pids = ",".join(str(t.pid) for t in fixed + [steady])
    top = subprocess.Popen([TOP, "-b", "-d", "0.1", "-o", "json", "-p", pids],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    children.append(top)
    ticks = []
    reader = threading.Thread(target=lambda: ticks.extend(
        json.loads(line) for line in top.stdout))
    reader.start()
    wait_for(lambda: ticks, "mstat-top's first tick")
    e = Exporter("--collector.classes")
    results = [[] for _ in range(8)]
    threads = [threading.Thread(target=scrape_loop, args=(
        e, fixed, 40, results[i],
        PROMETHEUS_ACCEPT if i % 2 else None)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=TIMEOUT)
        check(not th.is_alive(), "a scrape hung")
    n = len(ticks)
    wait_for(lambda: len(ticks) >= n + 3, "mstat-top's ticks")
    top.send_signal(signal.SIGTERM)
    top.wait(timeout=TIMEOUT)
    reader.join(timeout=TIMEOUT)
    for r in results:
        for x in r:
            if isinstance(x, Exception):
                raise x
        check(len(r) == 40, "40 scrapes, got %d" % len(r))
        # One client's scrapes are in order: a tick begun after each
        # request, so the steady target's counters never go back.
        seq = [of(text, steady).get("mstat_allocs_total", 0) for text in r]
        check(seq == sorted(seq) and seq[0] > 0, "steady counters %r" % seq)
    last = samples(e.metrics())
    print("%d scrapes beside %d ticks of mstat-top; busy: %d" % (
        sum(len(r) for r in results), len(ticks),
        last['mstat_exporter_scrape_errors_total{reason="busy"}']))
    check(last['mstat_exporter_scrape_errors_total{reason="busy"}'] == 0,
          "busy reads: %r" % last)
    # mstat-top, reading beside the exporter, was exact all along.
    for tick in ticks:
        rows = {p["pid"]: p for p in tick["processes"]}
        for t in fixed:
            p = rows.get(t.pid)
            check(p and p["state"] == "running" and p["alloc_count"] >= 10,
                  "mstat-top row %r" % p)
    e.stop()
    for t in fixed + [steady]:
        t.stop()


def test_busy():
    """A segment another reader holds (its flock, as a reading mstat-top
    holds it) is read once it is free, within the wait budget."""
    t = Target("fixed", TAG + "-busy")
    e = Exporter("--collector.classes", "--reader.wait-budget=5s")
    fd = os.open("/dev/shm/" + segments_of(t.pid)[0], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    got = []
    th = threading.Thread(target=lambda: got.append(e.metrics()))
    th.start()
    time.sleep(0.3)  # the scrape is waiting for the lock by now
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    th.join(timeout=TIMEOUT)
    check(got, "the scrape did not return")
    expect_fixed(of(got[0], t), "read once free")
    s = samples(got[0])
    check(s['mstat_exporter_scrape_errors_total{reason="busy"}'] == 0,
          "counted busy")
    e.stop()
    t.stop()


def test_stalled():
    """A process stopped inside an update delays a scrape by the wait
    budget at most: the others are read exactly, it has no counters (it
    was never read) and is counted as stalled; continued, it is read."""
    f = Target("fixed", TAG + "-ok")
    s = Target("stall", TAG + "-stall")
    wait_for(lambda: open("/proc/%d/stat" % s.pid).read().rsplit(")", 1)[1]
             .split()[0] == "T", "the target to stop itself")
    e = Exporter("--collector.classes")
    text = e.metrics(accept=PROMETHEUS_ACCEPT)
    parse_openmetrics(text)
    expect_fixed(of(text, f), "beside a stalled process")
    st = of(text, s)
    check(st.get("mstat_running") == 1 and "mstat_live_bytes" not in st,
          "the stalled process: running, counters unknown: %r" % st)
    all_ = samples(text)
    check(all_['mstat_exporter_scrape_errors_total{reason="stalled"}'] >= 1,
          "counted as stalled")
    print("scrape with a stalled target: %.1f ms of reading (budget 10 ms)" %
          (1000 * all_["mstat_exporter_scrape_duration_seconds"]))
    os.kill(s.pid, signal.SIGCONT)
    # The fixed mode's counts and one more allocation and free, then the
    # one made inside the section: 12 allocations, 4 frees.
    key = 'mstat_class_allocs_total,size="%d"' % B

    def read():
        st = of(e.metrics(), s)
        return st.get(key) == 12 and st
    st = wait_for(read, "the continued process to be read")
    check(st['mstat_class_frees_total,size="%d"' % B] == 4, "its frees")
    e.stop()
    f.stop()
    s.stop()


def dashboard_queries(board):
    """Every PromQL expression of a Grafana dashboard: its panels' targets
    and its variables' queries."""
    exprs = []

    def panels(ps):
        for p in ps:
            for t in p.get("targets", []):
                exprs.append(("panel %r" % p.get("title"), t["expr"]))
            panels(p.get("panels", []))
    panels(board["panels"])
    for v in board.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]
            exprs.append(("variable %s" % v["name"],
                          q["query"] if isinstance(q, dict) else q))
    return exprs


def grafana_to_promql(expr):
    """A dashboard expression with Grafana's variables made concrete,
    label_values(m, l) made a query of m."""
    m = re.match(r"^label_values\((.*),\s*[a-z_]+\)$", expr)
    if m:
        expr = m.group(1)
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "15s")
    return re.sub(r"\$\{?[a-z_]+\}?", ".*", expr)


def served_names():
    """Every sample name the exporter serves, classes, memory and a
    killed process's included."""
    t = Target("fixed", TAG + "-names")
    k = Target("fixed", TAG + "-names-killed")
    os.kill(k.pid, signal.SIGKILL)
    k.p.wait(timeout=TIMEOUT)
    e = Exporter("--collector.classes", "--collector.memory")
    text = e.metrics()
    e.stop()
    t.stop()
    return {s.split("{")[0].split(" ")[0] for s in samples(text)}


def test_dashboard():
    """docs/mstat-grafana.json is valid JSON, and every PromQL expression
    in it names metrics the exporter serves, and only those."""
    with open(DASHBOARD) as f:
        board = json.load(f)
    exprs = dashboard_queries(board)
    check(len(exprs) >= 5, "expressions: %r" % exprs)
    served = served_names()
    for where, expr in exprs:
        names = set(re.findall(r"\b(mstat_[a-z0-9_]+)\b", expr))
        check(names, "%s: no mstat metric in %r" % (where, expr))
        check(names <= served, "%s: %r names what is not served: %r" %
              (where, expr, names - served))
    titles = [p.get("title", "") for p in board["panels"]]
    for want in ("Live bytes", "Growth", "Allocation rate", "heat map",
                 "Resident memory by part"):
        check(any(want.lower() in t.lower() for t in titles),
              "a panel for %s: %r" % (want, titles))
    # The checker itself: a name that is not served is caught.
    check("mstat_live_bytes_total" not in served, "the checker")


def bcrypt(password):
    """A bcrypt hash made here, with the system's libcrypt."""
    lib = ctypes.CDLL("libcrypt.so.1")
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong,
                                  ctypes.c_char_p, ctypes.c_int]
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    salt = lib.crypt_gensalt(b"$2y$", 10, None, 0)
    h = lib.crypt(password.encode(), salt).decode()
    check(h.startswith("$2y$10$"), "bcrypt: %r" % h)
    return h


def certificates(d):
    """A CA and a server certificate for 127.0.0.1 it signed."""
    check(OPENSSL, "openssl is not installed (bash scripts/deps.sh)")

    def ssl_(*args):
        r = subprocess.run([OPENSSL] + list(args), cwd=d, timeout=TIMEOUT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        check(r.returncode == 0, "openssl %s: %s" % (args[0], r.stdout.decode()))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ssl_("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt",
         "-days", "2", "-subj", "/CN=mstat test CA %s" % TAG)
    ssl_("req", *ec, "-keyout", "server.key", "-out", "server.csr",
         "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ssl_("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey",
         "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "2",
         "-extfile", "san.ext")


def refused_start(args, status, line, prefix=False):
    """mstat-exporter with args stops at once, never listening, with the
    status and one line on stderr (`line` whole, or in it if it does not
    begin "mstat-exporter: "; with `prefix`, at its start)."""
    err = os.path.join(tmpdir(), "stderr")
    with open(err, "w") as f:
        p = subprocess.Popen([EXPORTER] + args, stdout=subprocess.DEVNULL,
                             stderr=f)
    children.append(p)

    def said():
        with open(err) as f:
            return f.read()
    wait_for(lambda: p.poll() is not None or "listening on" in said(),
             "%r to stop or listen" % args)
    check(p.poll() is not None, "%r started: %s" % (args, said()))
    got = said()
    check(p.returncode == status, "%r exited %d, not %d: %s" %
          (args, p.returncode, status, got))
    whole = line.startswith("mstat-exporter: ") and not prefix
    check((got == line + "\n") if whole else
          (got.startswith(line) if prefix else line in got) and
          got.count("\n") == 1,
          "%r said %r, not %r" % (args, got, line))


FORMS = ("; the forms are host:port, [ipv6]:port and :port (every "
         "interface), with a port from 1 to 65535")


def test_flags():
    """What the exporter is given is checked before it starts: every port
    outside 1-65535, every malformed listen address, a telemetry path
    without its / or one the exporter serves already, and an empty value
    for any flag stop the start with a line saying what is allowed."""
    def bad(flag, value, why):
        return "mstat-exporter: bad value '%s' for %s: %s" % (value, flag, why)
    for addr, why in ((":99999", "the port 99999 is out of range"),
                      ("127.0.0.1:65536", "the port 65536 is out of range"),
                      ("127.0.0.1:0", "the port 0 is out of range"),
                      ("127.0.0.1:-1", "the port -1 is not a decimal number"),
                      ("127.0.0.1:+80", "the port +80 is not a decimal number"),
                      ("localhost:http",
                       "the port http is not a decimal number"),
                      ("127.0.0.1:", "no port after :"),
                      ("10415", "no :port"),
                      ("::1:10415", "an IPv6 address goes in brackets, as in "
                       "[::1]:10415"),
                      ("[::1]", "no :port after ]"),
                      ("[::1:10415", "no ] after ["),
                      ("[localhost]:10415", "localhost is not an IPv6 address"),
                      ("local host:10415",
                       "local host is not a host name or IPv4 address")):
        refused_start(["--web.listen-address=" + addr], 2,
                      bad("--web.listen-address", addr, why + FORMS))
    # A bad address after a good one: nothing is bound.
    refused_start(["--web.listen-address=127.0.0.1:%d" % free_port(),
                   "--web.listen-address=:99999"], 2,
                  "the port 99999 is out of range")
    refused_start(["--web.telemetry-path=nometrics"], 2,
                  bad("--web.telemetry-path", "nometrics",
                      "it must start with /, as /metrics does"))
    refused_start(["--web.telemetry-path=/metrics?x"], 2,
                  "a path is / and printable ASCII but for space, ?, # and %")
    # Every path the exporter serves already is refused, with what
    # serves it: the metrics would hide it.
    for path, what in (("/", "the landing page"),
                       ("/-/healthy", "the health endpoint"),
                       ("/debug/pprof", "the heap profiles (/debug/pprof/)"),
                       ("/debug/pprof/", "the heap profiles (/debug/pprof/)"),
                       ("/debug/pprof/heap",
                        "the heap profiles (/debug/pprof/)"),
                       ("/debug/pprof/targets",
                        "the heap profiles (/debug/pprof/)"),
                       ("/debug/pprof/other",
                        "the heap profiles (/debug/pprof/)")):
        refused_start(["--web.telemetry-path=" + path], 2,
                      bad("--web.telemetry-path", path, "%s is %s: the "
                          "metrics need a path of their own, such as "
                          "/metrics" % (path, what)))
    # The profiles' flags.
    refused_start(["--web.external-address=:10415"], 2,
                  bad("--web.external-address", ":10415", "a host is "
                      "needed: the address scrapers reach this exporter at"))
    refused_start(["--web.external-address=node7"], 2,
                  bad("--web.external-address", "node7", "no :port" + FORMS))
    for n in ("0", "1001", "x", "-1"):
        refused_start(["--web.max-profile-requests=" + n], 2,
                      bad("--web.max-profile-requests", n,
                          "a number of profiles, 1 to 1000"))
    # The killed processes' flags.
    refused_start(["--killed-grace=86401"], 2,
                  bad("--killed-grace", "86401", "seconds, 0 to 86400"))
    refused_start(["--postmortem-dir=/nonexistent/x"], 2,
                  bad("--postmortem-dir", "/nonexistent/x",
                      "No such file or directory: make it first (mkdir -m "
                      "700 /nonexistent/x)"))
    refused_start(["--postmortem-bytes=1k"], 2,
                  bad("--postmortem-bytes", "1k", "a number of bytes"))
    refused_start(["--reader.namespaces=2147483647"], 2,
                  bad("--reader.namespaces", "2147483647", "no process "
                      "2147483647: its /dev/shm cannot be read"))
    # Every flag that takes a value, as --help lists them, refuses an
    # empty one.
    r = subprocess.run([EXPORTER, "--help"], stdout=subprocess.PIPE,
                       timeout=60)
    valued = re.findall(r"^  (?:-\w, |    )--([\w.-]+)=", r.stdout.decode(),
                        re.M)
    check(len(valued) >= 11, "--help lists %d flags with values" %
          len(valued))
    for name in valued:
        refused_start(["--%s=" % name], 2, "mstat-exporter: bad value '' for "
                      "--%s: " % name, prefix=True)
    # The addresses that are allowed: served, at a path of its own.
    e = Exporter("--web.telemetry-path=/heap")
    check(e.get("/heap")[0] == 200 and e.get("/metrics")[0] == 404,
          "the telemetry path")
    e.stop()


GO_REPLY = (b"HTTP/1.0 400 Bad Request\r\n\r\n"
            b"Client sent an HTTP request to an HTTPS server.\n")


def exchange(port, *pieces):
    """Sends each piece (bytes) on a new connection, then reads until the
    server closes it: what the server said."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as c:
        for piece in pieces:
            c.sendall(piece)
        got = b""
        try:
            while True:
                b = c.recv(4096)
                if not b:
                    return got
                got += b
        except ConnectionResetError:
            return got


def plain_http_at_tls(e):
    """Plain HTTP at a TLS port gets Go's 400 saying so; neither it nor a
    client that says nothing holds up anyone; what is neither HTTP nor TLS
    gets no HTTP answer."""
    for req in (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                b"HEAD / HTTP/1.0\r\n\r\n",
                b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
                b"PUT /x HTTP/1.1\r\n\r\n", b"OPTIONS * HTTP/1.1\r\n\r\n"):
        got = exchange(e.port, req)
        check(got == GO_REPLY, "%r at the TLS port: %r" % (req, got))
    # Byte by byte: the gate waits for five.
    got = exchange(e.port, b"G", b"E", b"T", b" ", b"/ HTTP/1.0\r\n\r\n")
    check(got == GO_REPLY, "byte by byte: %r" % got)
    # What a browser or curl shows.
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/metrics" % e.port,
                               timeout=TIMEOUT).read()
        raise Failure("plain HTTP was served on the TLS port")
    except urllib.error.HTTPError as err:
        body = err.read()
        check(err.code == 400 and body ==
              b"Client sent an HTTP request to an HTTPS server.\n",
              "urllib: %d %r" % (err.code, body))
    # A client that says nothing, one that has said "GE", and one whose
    # handshake stops midway hold up neither TLS nor plain HTTP clients.
    silent = socket.create_connection(("127.0.0.1", e.port), timeout=TIMEOUT)
    half = socket.create_connection(("127.0.0.1", e.port), timeout=TIMEOUT)
    half.sendall(b"GE")
    hello = socket.create_connection(("127.0.0.1", e.port), timeout=TIMEOUT)
    hello.sendall(b"\x16\x03\x01")
    check(e.get("/")[0] == 200, "TLS beside waiting clients")
    check(exchange(e.port, b"GET / HTTP/1.1\r\n\r\n") == GO_REPLY,
          "plain HTTP beside waiting clients")
    half.sendall(b"T / HTTP/1.1\r\n\r\n")
    got = b""
    while True:
        b = half.recv(4096)
        if not b:
            break
        got += b
    check(got == GO_REPLY, "the half request, finished: %r" % got)
    for c in (silent, half, hello):
        c.close()
    # Neither HTTP nor TLS: no HTTP answer (a TLS alert at most).
    got = exchange(e.port, b"XYZ / HTTP/1.1\r\n\r\n")
    check(not got.startswith(b"HTTP"), "XYZ: %r" % got)
    got = exchange(e.port, b"GEX / HTTP/1.1\r\n\r\n")
    check(got == b"", "GEX: %r" % got)


def test_tls():
    """The web configuration's TLS versions and headers are what a client
    meets: with min_version TLS13 a TLS 1.2 client is refused and a TLS
    1.3 one served, with the configured header; plain HTTP gets a 400
    saying the port speaks TLS."""
    d = tmpdir()
    certificates(d)
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n"
                "  key_file: server.key\n  min_version: TLS13\n"
                "http_server_config:\n  headers:\n"
                "    Strict-Transport-Security: max-age=600\n")
    e = Exporter("--web.config.file=" + os.path.join(d, "web.yml"),
                 scheme="https", ca=os.path.join(d, "ca.crt"))
    status, ctype, body, headers = e.get("/")
    check(status == 200 and headers.get("Strict-Transport-Security") ==
          "max-age=600", "TLS 1.3 with the header: %d %r" % (status, headers))
    old = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        urllib.request.urlopen(e.url("/"), timeout=TIMEOUT, context=old).read()
        raise Failure("a TLS 1.2 client was served")
    except (urllib.error.URLError, ssl.SSLError, ConnectionError):
        pass
    plain_http_at_tls(e)
    e.stop()
    # A key that is not the certificate's stops the start, with why.
    certificates_other = os.path.join(d, "other")
    os.mkdir(certificates_other)
    certificates(certificates_other)
    with open(os.path.join(d, "bad.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n"
                "  key_file: other/server.key\n")
    r = subprocess.run([EXPORTER, "--web.listen-address=127.0.0.1:%d" %
                        free_port(),
                        "--web.config.file=" + os.path.join(d, "bad.yml")],
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    err = r.stderr.decode()
    check(r.returncode == 1 and "bad.yml:2: cert_file server.crt and "
          "key_file other/server.key:" in err, "mismatched key: %r" % err)


def prom_get(port, path, **params):
    url = "http://127.0.0.1:%d%s" % (port, path)
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
        return json.loads(r.read().decode())


def test_prometheus():
    """A real Prometheus server scrapes the exporter every second over TLS
    with basic auth, with the rules of deploy/prometheus: the target is up,
    a live process's mstat_live_bytes is queried through /api/v1/query,
    its series are gone once it exits, every dashboard expression is one
    the server accepts, every rule evaluates without an error, and a
    process killed fires MstatProcessKilled, naming its post-mortem
    profile."""
    check(PROMETHEUS, "no prometheus (bash scripts/deps.sh unpacks it)")
    d = tmpdir()
    certificates(d)
    password = "s3cret %s" % TAG
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n"
                "  key_file: server.key\n  min_version: TLS12\n"
                "basic_auth_users:\n  prometheus: '%s'\n" % bcrypt(password))
    t = Target("fixed", TAG + "-prom")
    k = Target("fixed", TAG + "-killed")
    pm = os.path.join(d, "postmortem")
    os.mkdir(pm)
    e = Exporter("--web.config.file=" + os.path.join(d, "web.yml"),
                 "--collector.classes", "--collector.memory",
                 "--postmortem-dir=" + pm,
                 scheme="https", ca=os.path.join(d, "ca.crt"))
    # What Prometheus will meet: TLS, and a user first.
    check(e.get()[0] == 401, "no user: 401")
    check(e.get(auth=("prometheus", "wrong"))[0] == 401, "wrong password")
    check(e.get(auth=("root", password))[0] == 401, "unknown user")
    expect_fixed(of(e.metrics(auth=("prometheus", password)), t), "over TLS")

    port = free_port()
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ['%s']
scrape_configs:
  - job_name: mstat
    scheme: https
    tls_config:
      ca_file: %s
    basic_auth:
      username: prometheus
      password: '%s'
    static_configs:
      - targets: ['127.0.0.1:%d']
""" % (RULES, os.path.join(d, "ca.crt"), password, e.port))
    log = open(os.path.join(d, "prometheus.log"), "w")
    prom = subprocess.Popen(
        [PROMETHEUS, "--config.file=" + os.path.join(d, "prometheus.yml"),
         "--storage.tsdb.path=" + os.path.join(d, "data"),
         "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=log)
    children.append(prom)

    def ready():
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port,
                                        timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError):
            check(prom.poll() is None, "prometheus exited: %s" %
                  open(os.path.join(d, "prometheus.log")).read())
            return False
    wait_for(ready, "prometheus to be ready")

    def health():
        ts = prom_get(port, "/api/v1/targets")["data"]["activeTargets"]
        return ts and ts[0]["health"] == "up" and ts[0]
    target = wait_for(health, "the target to be up")
    check(target["lastError"] == "", "last error %r" % target["lastError"])
    q = 'mstat_live_bytes{pid="%d",name="%s"}' % (t.pid, t.name)

    def live():
        r = prom_get(port, "/api/v1/query", query=q)["data"]["result"]
        return r and r
    r = wait_for(live, q)
    check(len(r) == 1 and r[0]["metric"]["job"] == "mstat", "one series %r" % r)
    v = int(r[0]["value"][1])
    check(7 * B <= v < 7 * B + (1 << 36), "live bytes %d" % v)
    up = prom_get(port, "/api/v1/query", query='up{job="mstat"}')["data"]["result"]
    check(up and up[0]["value"][1] == "1", "up: %r" % up)
    # Prometheus asked for OpenMetrics and parsed it: units are known only
    # from its # UNIT lines.
    meta = prom_get(port, "/api/v1/targets/metadata",
                    metric="mstat_live_bytes")["data"]
    check(meta and meta[0].get("unit") == "bytes", "metadata %r" % meta)
    # The gap rule's two sides match, series for series: the share of its
    # RSS the allocator holds free, of the live process.
    gap = ('sum without (part) (mstat_memory_bytes{part="allocator_free",'
           'pid="%d"}) / mstat_resident_memory_bytes' % t.pid)
    r = wait_for(lambda: prom_get(port, "/api/v1/query",
                                  query=gap)["data"]["result"], gap)
    check(len(r) == 1 and 0 <= float(r[0]["value"][1]) <= 1,
          "allocator_free over RSS: %r" % r)
    # Killed: the alert names it, how and its post-mortem profile.
    os.kill(k.pid, signal.SIGKILL)
    k.p.wait(timeout=TIMEOUT)

    def killed():
        for a in prom_get(port, "/api/v1/alerts")["data"]["alerts"]:
            if (a["labels"]["alertname"] == "MstatProcessKilled" and
                    a["labels"]["pid"] == str(k.pid) and a["state"] == "firing"):
                return a
    a = wait_for(killed, "MstatProcessKilled to fire")
    files = [f for f in os.listdir(pm) if f.startswith(TAG + "-killed-")]
    check(len(files) == 1, "its post-mortem: %r" % os.listdir(pm))
    path = os.path.join(pm, files[0])
    check(a["labels"].get("how") == "killed" and
          a["labels"].get("postmortem") == path and
          a["labels"].get("severity") == "warning" and
          path in a["annotations"]["description"] and
          a["annotations"]["summary"].startswith(
              "%s (pid %d on 127.0.0.1:%d) was killed by a signal"
              % (k.name, k.pid, e.port)), "the alert: %r" % a)
    # Every rule is evaluated without an error.

    def evaluated():
        rules = [r for g in prom_get(port, "/api/v1/rules")["data"]["groups"]
                 for r in g["rules"]]
        bad = [(r["name"], r.get("lastError")) for r in rules
               if r["health"] != "ok"]
        check(not [b for b in bad if b[1]], "rules failing: %r" % bad)
        return len(rules) >= 10 and not bad
    wait_for(evaluated, "every rule evaluated")
    # Every dashboard expression is PromQL this server accepts, and shows
    # data once there are two scrapes to take a rate from.
    with open(DASHBOARD) as f:
        for where, expr in dashboard_queries(json.load(f)):
            def shows():
                res = prom_get(port, "/api/v1/query",
                               query=grafana_to_promql(expr))
                check(res["status"] == "success", "%s: %r" % (where, res))
                return res["data"]["result"]
            wait_for(shows, "%s to show data" % where)
    # The process exits: its series are gone (marked stale by the next
    # scrape, so an instant query no longer finds them).
    t.stop()
    wait_for(lambda: prom_get(port, "/api/v1/query", query=q)["data"]["result"]
             == [], "the exited process's series to go")
    check(health(), "still up")
    prom.send_signal(signal.SIGTERM)
    prom.wait(timeout=TIMEOUT)
    log.close()
    e.stop()


PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
WALL = 0x40000000  # __WALL: wait for a thread of another process


class StoppedThread:
    """A thread of another process stopped, alone, with ptrace
    (PTRACE_SEIZE and PTRACE_INTERRUPT): the rest of the process runs
    on.  It runs again on exit."""

    def __init__(self, tid):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long,
                                     ctypes.c_void_p, ctypes.c_void_p]
        self.libc.ptrace.restype = ctypes.c_long
        self.tid = tid

    def _ptrace(self, req):
        if self.libc.ptrace(req, self.tid, None, None) < 0:
            raise Failure("ptrace %#x of thread %d: %s" % (
                req, self.tid, os.strerror(ctypes.get_errno())))

    def __enter__(self):
        self._ptrace(PTRACE_SEIZE)
        self._ptrace(PTRACE_INTERRUPT)
        os.waitpid(self.tid, WALL)
        return self

    def __exit__(self, *exc):
        self._ptrace(PTRACE_DETACH)


def reader_thread(pid):
    """The exporter's reader thread (it is named)."""
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read() == "mstat-reader\n":
                return int(tid)
    raise Failure("no thread of %d is named mstat-reader" % pid)


STUCK = (r"the reader is stuck: scrapes have waited (\d+\.\d) s for it, "
         r"more than 10 s beyond its wait budget of 0\.01 s\n")


def http_once(port, path, timeout=TIMEOUT):
    """(status, {header: value}, body) of one GET on a connection of its
    own, closed by the server after it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Connection: close\r\n\r\n" % path.encode())
        data = b""
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            data += b
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in
               (ln.partition(":") for ln in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def crowd(port, clients, each, out, path="/metrics"):
    """`clients` threads, each asking `each` times, one connection a
    request (as ab does): their answers, or what was raised, into out."""
    def client():
        for _ in range(each):
            try:
                out.append(http_once(port, path))
            except OSError as x:
                out.append(x)
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for th in threads:
        th.start()
    return threads


def check_answers(answers, limit, what):
    """Every answer a 200 with the metrics or promhttp's 503: (200s, 503s)."""
    n = {200: 0, 503: 0}
    for a in answers:
        check(not isinstance(a, Exception), "%s: %r" % (what, a))
        status, headers, body = a
        check(status in n, "%s: %d %r" % (what, status, body))
        n[status] += 1
        if status == 200:
            check(b"mstat_exporter_build_info" in body, "%s: 200 %r"
                  % (what, body[:200]))
        else:
            check(body == b"Limit of concurrent requests reached (%d), try "
                  b"again later.\n" % limit and
                  headers.get("retry-after") == "1" and
                  headers.get("content-type") == "text/plain; charset=utf-8",
                  "%s: 503 %r %r" % (what, headers, body))
    return n[200], n[503]


def test_crowd():
    """A crowd past --web.max-requests: every answer a 200 or a 503 with
    Retry-After (promhttp's in-flight limit), no connection refused or
    reset, /-/healthy answered 200 all along, and served again at once.
    With the reader stopped, exactly the limit's scrapes wait and every
    other is answered 503 at once; then 200 clients (five times the
    default) ask 3000 times while the health endpoint is polled."""
    if VALGRIND:
        print("a crowd is not tested under valgrind (one thread at a time)")
        sys.exit(77)
    t = Target("fixed", TAG + "-crowd")
    limit, clients = 10, 100
    e = Exporter("--web.max-requests=%d" % limit)
    answers = []
    with StoppedThread(reader_thread(e.p.pid)):
        t0 = time.monotonic()
        threads = crowd(e.port, clients, 1, answers)
        wait_for(lambda: len(answers) >= clients - limit,
                 "the answers beyond the limit")
        health = http_once(e.port, "/-/healthy")
        # Until scrapes have waited 10 s the reader is not stuck (it will
        # not have, but on a machine stalled that long).
        if time.monotonic() - t0 < 10:
            check(health[:1] == (200,), "health beside %d waiting scrapes: "
                  "%r" % (limit, health))
        check(len(answers) == clients - limit and
              check_answers(answers, limit, "beyond the limit") ==
              (0, clients - limit),
              "%d answered while the reader was stopped, %d wait"
              % (len(answers), limit))
    for th in threads:
        th.join(timeout=TIMEOUT)
        check(not th.is_alive(), "a scrape hung")
    check(check_answers(answers, limit, "the reader stopped") ==
          (limit, clients - limit), "the %d waiting scrapes" % limit)
    e.stop()

    e = Exporter()
    answers, health, done = [], [], threading.Event()

    def probe():
        while not done.is_set():
            t1 = time.monotonic()
            try:
                r = http_once(e.port, "/-/healthy", timeout=5)
                health.append((r[0], time.monotonic() - t1))
            except OSError as x:
                health.append((x, time.monotonic() - t1))
            time.sleep(0.02)
    prober = threading.Thread(target=probe)
    prober.start()
    threads = crowd(e.port, 200, 15, answers)
    for th in threads:
        th.join(timeout=TIMEOUT)
        check(not th.is_alive(), "a client hung")
    done.set()
    prober.join(timeout=TIMEOUT)
    ok, busy = check_answers(answers, 40, "200 clients")
    check(ok + busy == 3000, "3000 answers, got %d" % (ok + busy))
    check(health and all(h[0] == 200 for h in health),
          "health during the crowd: %r" % [h for h in health if h[0] != 200])
    # At once: no wait, no retry.
    check(e.get()[0] == 200 and e.get("/-/healthy")[0] == 200,
          "served again at once")
    print("200 clients, 3000 requests: %d answered 200, %d 503; %d health "
          "checks meanwhile, all 200, the slowest in %.0f ms" % (
              ok, busy, len(health), 1000 * max(h[1] for h in health)))
    e.stop()
    t.stop()


def test_watch():
    """With --postmortem-dir the exporter reads every segment once a second
    of its own, scraped or not, and no more: over any stretch of time, its
    ticks are at most one a second, one at start and one a scrape, however
    busy the machine (a slow one only makes fewer).  That it watches at all
    is tested with the post-mortems it writes unscraped (tests/profile,
    oom-exporter)."""
    t = Target("fixed", TAG + "-watch")
    t0 = time.monotonic()
    e = Exporter("--postmortem-dir=" + tmpdir())
    time.sleep(2.5)  # a stretch of time to count ticks over, not a wait
    m = samples(e.metrics())
    elapsed = time.monotonic() - t0
    ticks, scrapes = (m["mstat_exporter_ticks_total"],
                      m["mstat_exporter_scrapes_total"])
    print("watch: %d ticks, %d scrapes, in %.1f s" % (ticks, scrapes, elapsed))
    check(scrapes == 1 and ticks <= elapsed + 1 + scrapes,
          "%d ticks and %d scrapes in %.1f s: the watch spins"
          % (ticks, scrapes, elapsed))
    t.stop()
    e.stop()


def test_health():
    """/-/healthy answers 200 "OK" without reading anything or waiting for
    the reader: a reader stopped while a scrape waits for it leaves it
    200 until the scrape has waited the wait budget and 10 s, then 503
    saying why, and 200 again once the reader runs; a profile answered
    between ticks leaves no wait behind.  Like every route it
    asks for a user when there are basic_auth_users (so does the
    exporter-toolkit: it exempts no path) and speaks TLS when configured."""
    t = Target("fixed", TAG + "-health")
    e = Exporter()
    status, ctype, body, _ = e.get("/-/healthy")
    check((status, ctype, body) == (200, "text/plain; charset=utf-8", "OK\n"),
          "healthy: %d %r %r" % (status, ctype, body))
    status, _, body, _ = e.get("/-/healthy", method="HEAD")
    check(status == 200 and body == "", "HEAD: %d %r" % (status, body))
    status, _, _, headers = e.get("/-/healthy", method="POST")
    check(status == 405 and headers.get("Allow") == "GET, HEAD", "POST: 405")
    check(e.get("/-/healthy?pid=1")[2] == "OK\n", "a query changes nothing")
    check(e.get("/-/healthy/")[0] == 404 and e.get("/-/ready")[0] == 404,
          "only the path itself")
    # A health check is no scrape: it reads nothing.
    before = samples(e.metrics())["mstat_exporter_scrapes_total"]
    for _ in range(5):
        check(e.get("/-/healthy")[0] == 200, "healthy")
    check(samples(e.metrics())["mstat_exporter_scrapes_total"] == before + 1,
          "health checks counted as scrapes")
    if VALGRIND:
        print("the stopped reader is not tested under valgrind")
    else:
        # A wait counted from the scrapes above, or from a profile
        # answered between ticks, not from the scrape below, would show
        # as a second too long.
        check(e.raw("/debug/pprof/heap?pid=%d" % t.pid)[0] == 200,
              "a profile between ticks")
        time.sleep(1)
        got = []
        with StoppedThread(reader_thread(e.p.pid)):
            t0 = time.monotonic()
            scrape = threading.Thread(target=lambda: got.append(e.get()))
            scrape.start()
            status, _, body, _ = e.get("/-/healthy")
            # Sooner than 10 s after the scrape began (it will be, but
            # for a machine stalled that long), the reader is not stuck
            # yet.
            if time.monotonic() - t0 < 10:
                check((status, body) == (200, "OK\n"),
                      "while the scrape waits: %d %r" % (status, body))

            def stuck():
                r = e.get("/-/healthy")
                return r[0] == 503 and r
            status, ctype, body, _ = wait_for(stuck, "503 from /-/healthy")
            waited = time.monotonic() - t0
            m = re.fullmatch(STUCK, body)
            check(m and ctype == "text/plain; charset=utf-8",
                  "stuck: %r %r" % (ctype, body))
            # The scrape began after t0, the answer came before `waited`.
            check(waited >= 10.01 and 10.0 <= float(m.group(1)) <= waited + 0.05,
                  "503 after %.2f s: %r" % (waited, body))
            check(not got, "the scrape was answered by a stopped reader")
        scrape.join(timeout=TIMEOUT)
        check(got and got[0][0] == 200, "the scrape, once the reader ran")
        expect_fixed(of(got[0][2], t), "the scrape that waited",
                     classes=False)
        check(e.get("/-/healthy")[:3:2] == (200, "OK\n"),
              "healthy once the reader ran")
    e.stop()
    # TLS, and basic auth.
    d = tmpdir()
    certificates(d)
    password = "probe %s" % TAG
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n"
                "  key_file: server.key\n"
                "basic_auth_users:\n  kubelet: '%s'\n" % bcrypt(password))
    e = Exporter("--web.config.file=" + os.path.join(d, "web.yml"),
                 scheme="https", ca=os.path.join(d, "ca.crt"))
    check(e.get("/-/healthy")[0] == 401, "no user: 401")
    check(e.get("/-/healthy", auth=("kubelet", "wrong"))[0] == 401,
          "a wrong password: 401")
    check(e.get("/-/healthy", auth=("kubelet", password))[:3:2] ==
          (200, "OK\n"), "over TLS, with a user")
    check(exchange(e.port, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
          == GO_REPLY, "plain HTTP at the TLS port")
    e.stop()
    t.stop()


# ---- heap profiles (exporter/pprof_http.c) ----

GO_TYPES = [("alloc_objects", "count"), ("alloc_space", "bytes"),
            ("inuse_objects", "count"), ("inuse_space", "bytes")]
SAMPLED = {"MSTAT_SAMPLE_BYTES": "1"}  # every allocation sampled: exact
KEPT = 100  # the blocks target.c's "sampled" mode keeps, from main()


def build_id(path):
    """The GNU build id in the notes of an ELF file (64-bit, little
    endian), as hex."""
    import struct
    with open(path, "rb") as f:
        elf = f.read()
    check(elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[5] == 1,
          "%s: not a 64-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    for i in range(shnum):
        sh = shoff + i * shentsize
        kind, = struct.unpack_from("<I", elf, sh + 4)
        off, size = struct.unpack_from("<QQ", elf, sh + 0x18)
        if kind != 7:  # SHT_NOTE
            continue
        at = off
        while at + 12 <= off + size:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, at)
            name = elf[at + 12:at + 12 + namesz]
            desc = at + 12 + ((namesz + 3) & ~3)
            if ntype == 3 and name == b"GNU\0":  # NT_GNU_BUILD_ID
                return elf[desc:desc + descsz].hex()
            at = desc + ((descsz + 3) & ~3)
    raise Failure("%s has no build id" % path)


def profile(e, path, **kw):
    """A profile the exporter serves: 200, application/octet-stream, read
    by pprofproto."""
    status, headers, body = e.raw(path, **kw)
    check(status == 200, "%s: %d %r" % (path, status, body[:300]))
    check(headers["Content-Type"] == "application/octet-stream",
          "%s: Content-Type %r" % (path, headers["Content-Type"]))
    try:
        return headers, pprofproto.Profile(body)
    except pprofproto.Malformed as x:
        raise Failure("%s: %s" % (path, x))


def expect_kept(p, what):
    """The sampled target's profile: every allocation sampled (interval
    1), so main()'s 100 blocks of 1 KiB, kept, are counted exactly; named,
    placed in target.c, in a mapping with the program's build id."""
    check(p.sample_types == GO_TYPES, "%s: types %r" % (what, p.sample_types))
    if not SAMPLES:
        check(p.period_type == ("space", "bytes") and p.samples == [],
              "%s: no samples: %r %r" % (what, p.period_type, p.samples))
        return
    check(p.period_type == ("space", "bytes") and p.period == 1,
          "%s: period %r %r" % (what, p.period_type, p.period))
    inuse = p.by_function("inuse_objects")
    alloc = p.by_function("alloc_objects")
    check(inuse["main"] == KEPT and alloc["main"] == KEPT,
          "%s: main holds %r of %r objects" % (what, inuse["main"],
                                               alloc["main"]))
    space = p.by_function("inuse_space")["main"]
    check(KEPT * 1024 <= space < KEPT * 1100, "%s: main's bytes %d" %
          (what, space))
    exe = os.path.realpath(TARGET)
    maps = [m for m in p.mappings.values() if m.filename == exe]
    check(len(maps) == 1 and maps[0].build_id == build_id(exe) and
          maps[0].has_functions, "%s: the program's mapping %r" % (what, maps))
    lines = [(p.functions[fn], line) for loc in p.locations.values()
             for fn, line in loc.lines if p.functions[fn].name == "main"]
    check(lines and all(f.filename.endswith("/tests/top/target.c") and
                        f.filename.startswith("/") and line > 0
                        for f, line in lines), "%s: main placed %r" %
          (what, lines))
    for smp in p.samples:
        check(smp.labels.get("bytes", ("", 0))[1] > 0,
              "%s: Go's bytes label %r" % (what, smp.labels))


def refused(e, path, status, reason, **kw):
    """`path` answers `status` with a line of plain text holding
    `reason`."""
    got, headers, body = e.raw(path, **kw)
    text = body.decode()
    check(got == status and reason in text and text.endswith("\n") and
          text.count("\n") == 1 and
          headers["Content-Type"] == "text/plain; charset=utf-8",
          "%s: %d %r, not %d %r" % (path, got, text, status, reason))
    return headers


def metric_labels(e, pid):
    """The labels of the process's mstat_live_bytes, as Prometheus's
    client parses them."""
    fams = parse_openmetrics(e.metrics(accept=PROMETHEUS_ACCEPT))
    got = [smp.labels for smp in fams["mstat_live_bytes"].samples
           if smp.labels["pid"] == str(pid)]
    check(len(got) == 1, "the metrics of %d: %r" % (pid, got))
    return got[0]


def targets_of(e, pids, **kw):
    """The target list, parsed: the entries of `pids`, by pid."""
    status, headers, body = e.raw("/debug/pprof/targets", **kw)
    check(status == 200 and headers["Content-Type"] ==
          "application/json; charset=utf-8", "targets: %d %r" %
          (status, headers["Content-Type"]))
    entries = json.loads(body.decode())
    check(isinstance(entries, list), "targets: %r" % entries)
    out = {}
    for t in entries:
        check(set(t) == {"targets", "labels"} and len(t["targets"]) == 1,
              "a target %r" % t)
        pid = int(t["labels"]["__param_pid"])
        if pid in pids:
            check(pid not in out, "two targets for %d" % pid)
            out[pid] = t
    check(set(out) == set(pids), "targets of %r: %r" % (pids, out))
    return out


def test_pprof():
    """/debug/pprof/heap and /allocs serve the process's profile, as Go's
    heap profile (exact here: every allocation sampled); the index and
    the target list show every process, with the labels its metrics
    have; what is not served is refused with a status and a reason."""
    t = Target("sampled", TAG + " pp <\"&'>", env=SAMPLED)
    f = Target("fixed", TAG + "-pp-fixed")
    e = Exporter()
    for name, default in (("heap", ""), ("allocs", "alloc_space")):
        path = "/debug/pprof/%s?pid=%d" % (name, t.pid)
        headers, p = profile(e, path)
        check(headers["Content-Disposition"] ==
              'attachment; filename="%s"' % name, "%s: %r" % (path, headers))
        check(p.default_sample_type == default, "%s: default %r" %
              (path, p.default_sample_type))
        check(abs(p.time_nanos / 1e9 - time.time()) < 600 and
              p.duration_nanos == 0, "%s: time %r" % (path, p.time_nanos))
        expect_kept(p, path)
        # gc is accepted and changes nothing; HEAD has no body.
        _, q = profile(e, path + "&gc=1&debug=0")
        check(q.by_function("inuse_space") == p.by_function("inuse_space"),
              "gc=1")
        status, headers, body = e.raw(path, method="HEAD")
        check(status == 200 and body == b"" and headers["Content-Type"] ==
              "application/octet-stream", "HEAD %s: %d" % (path, status))
    # A process without samples has an empty profile, all the same.
    _, p = profile(e, "/debug/pprof/heap?pid=%d" % f.pid)
    check(p.sample_types == GO_TYPES and p.samples == [], "empty: %r" %
          (p.samples,))
    # A delta over a second: nothing happened, nothing in it.
    headers, p = profile(e, "/debug/pprof/heap?pid=%d&seconds=1" % t.pid)
    check(headers["Content-Disposition"] == 'attachment; filename="heap-delta"'
          and p.samples == [] and p.duration_nanos >= 10 ** 9,
          "delta: %r %r %r" % (headers, p.samples, p.duration_nanos))

    # Bad requests: 400, saying what is allowed.
    base = "/debug/pprof/heap"
    refused(e, base, 400, "which process: /debug/pprof/heap?pid=N")
    for bad in ("abc", "0", "-1", "+5", "1e3", "4194305", "", "99999999999"):
        refused(e, base + "?pid=" + urllib.parse.quote(bad), 400,
                "pid=%s: a process id is a decimal number from 1 to 4194304"
                % bad)
    for bad in ("0", "301", "x", "-1"):
        refused(e, "%s?pid=%d&seconds=%s" % (base, t.pid, bad), 400,
                "seconds=%s: the length of a delta profile is a decimal "
                "number of seconds from 1 to 300" % bad)
    refused(e, "%s?pid=%d&debug=1" % (base, t.pid), 400,
            "debug=1: only the binary profile is served (debug=0)")
    refused(e, "%s?pid=%s" % (base, "9" * 100), 400, "pid=" + "9" * 36 + "...")
    # Processes it cannot serve: 404, saying why.
    refused(e, "%s?pid=%d" % (base, os.getpid()), 404,
            "pid %d: no segment: it does not count with libmstatshm"
            % os.getpid())
    refused(e, base + "?pid=4194304", 404, "pid 4194304: no such process")
    if os.geteuid() == 0 and shutil.which("setpriv"):
        other = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534",
                                  "--clear-groups", "sleep", "600"])
        children.append(other)
        wait_for(lambda: os.stat("/proc/%d" % other.pid).st_uid == 65534,
                 "the other user's process")
        refused(e, "%s?pid=%d" % (base, other.pid), 404,
                "pid %d: no segment of yours: it is a process of uid 65534"
                % other.pid)
        other.kill()
    else:
        print("not root: another user's process not tried")
    gone = Target("sampled", TAG + "-gone", env=SAMPLED)
    profile(e, "%s?pid=%d" % (base, gone.pid))
    gone.stop()
    refused(e, "%s?pid=%d" % (base, gone.pid), 404,
            "pid %d: no such process" % gone.pid)
    refused(e, "/debug/pprof/delta_heap?pid=%d" % t.pid, 404,
            "delta_heap (godeltaprof) is not served: /debug/pprof/allocs?pid=N "
            "counts alloc_* since the process started")
    for go_only in ("profile", "goroutine", "block", "mutex", "threadcreate",
                    "cmdline", "symbol", "trace"):
        refused(e, "/debug/pprof/%s?pid=%d" % (go_only, t.pid), 404,
                "Unknown profile: %s is one of Go's runtime" % go_only)
    refused(e, "/debug/pprof/heap/x", 404, "Unknown profile: only heap "
            "profiles are served here")
    status, _, _, headers = e.get("/debug/pprof/heap", method="POST")
    check(status == 405 and headers["Allow"] == "GET, HEAD", "POST: %d" % status)
    # /debug/pprof is the index's address without its slash, as in Go.
    conn = socket.create_connection(("127.0.0.1", e.port), timeout=TIMEOUT)
    conn.sendall(b"GET /debug/pprof HTTP/1.0\r\n\r\n")
    got = b""
    while True:
        b = conn.recv(4096)
        if not b:
            break
        got += b
    conn.close()
    check(re.match(rb"HTTP/1\.[01] 301 ", got) and
          b"\r\nLocation: /debug/pprof/\r\n" in got, "redirect: %r" % got[:200])

    # The index: each process with links to its profiles, its name
    # escaped.
    status, ctype, page, _ = e.get("/debug/pprof/")
    check(status == 200 and ctype == "text/html; charset=utf-8", "index")
    for pid in (t.pid, f.pid):
        for link in ('href="heap?pid=%d"', 'href="allocs?pid=%d"'):
            check(link % pid in page, "index: %s" % (link % pid))
    check(" pp &lt;&quot;&amp;&#39;&gt;" in page and "<\"&'>" not in page,
          "index: the name escaped")
    status, _, landing, _ = e.get("/")
    check('<a href="/debug/pprof/">' in landing, "the landing page links it")

    # The targets: the address the request came to, the parameter, and
    # the labels of the process's metrics, whatever they are, and
    # Pyroscope's service_name.
    ts = targets_of(e, [t.pid, f.pid])
    for x in (t, f):
        want = dict(metric_labels(e, x.pid), __param_pid=str(x.pid),
                    service_name=x.name)
        check(ts[x.pid]["labels"] == want, "labels %r, not %r" %
              (ts[x.pid]["labels"], want))
        check(ts[x.pid]["targets"] == ["127.0.0.1:%d" % e.port],
              "address %r" % ts[x.pid]["targets"])
    # The Host header is the address; without one (HTTP/1.0), the one
    # the connection came to; one that is not a host is refused.
    for host, want in (("node7.example:10415", "node7.example:10415"),
                       ("[::1]:99", "[::1]:99"), ("node7", "node7"),
                       (None, "127.0.0.1:%d" % e.port)):
        req = b"GET /debug/pprof/targets HTTP/1.0\r\n"
        if host:
            req += b"Host: " + host.encode() + b"\r\n"
        got = exchange(e.port, req + b"\r\n")
        head, _, body = got.partition(b"\r\n\r\n")
        check(re.match(rb"HTTP/1\.[01] 200 ", head), "Host %r: %r" % (host, head))
        mine = [x for x in json.loads(body.decode())
                if x["labels"]["__param_pid"] == str(t.pid)]
        check(mine and mine[0]["targets"] == [want], "Host %r: %r" % (host, mine))
    got = exchange(e.port, b"GET /debug/pprof/targets HTTP/1.0\r\n"
                   b"Host: a b\"\r\n\r\n")
    check(re.match(rb"HTTP/1\.[01] 400 ", got) and got.endswith(
        b"the Host header is not a host with an optional :port\n"),
          "a bad Host: %r" % got)
    e.stop()
    # --web.external-address: what the targets name, whatever the Host.
    e = Exporter("--web.external-address=node7.example:10415")
    ts = targets_of(e, [t.pid])
    check(ts[t.pid]["targets"] == ["node7.example:10415"], "external %r" % ts)
    e.stop()
    t.stop()
    f.stop()


def tls_exporter(d, *args):
    """An exporter with TLS and a user, "pprof", in directory d."""
    certificates(d)
    password = "pw-%s" % TAG
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n"
                "  key_file: server.key\n"
                "basic_auth_users:\n  pprof: '%s'\n" % bcrypt(password))
    e = Exporter("--web.config.file=" + os.path.join(d, "web.yml"), *args,
                 scheme="https", ca=os.path.join(d, "ca.crt"))
    return e, ("pprof", password)


def test_pprof_tls():
    """The profiles are behind the web configuration's TLS and users,
    as the metrics are: 401 without a user or with a wrong password, on
    every path; served over TLS to a user."""
    t = Target("sampled", TAG + "-pptls", env=SAMPLED)
    e, auth = tls_exporter(tmpdir())
    paths = ["/debug/pprof/", "/debug/pprof/targets",
             "/debug/pprof/heap?pid=%d" % t.pid,
             "/debug/pprof/allocs?pid=%d" % t.pid,
             "/debug/pprof/heap?pid=x", "/debug/pprof/goroutine",
             "/debug/pprof"]
    for path in paths:
        for who in (None, ("pprof", "wrong"), ("root", auth[1])):
            status, headers, _ = e.raw(path, auth=who)
            check(status == 401 and "Basic" in headers.get(
                "WWW-Authenticate", ""), "%s as %r: %d" % (path, who, status))
    _, p = profile(e, paths[2], auth=auth)
    expect_kept(p, "over TLS")
    targets_of(e, [t.pid], auth=auth)
    status, _, page = e.raw(paths[0], auth=auth)
    check(status == 200 and b"heap?pid=%d" % t.pid in page, "index over TLS")
    e.stop()
    t.stop()


def go_pprof(*args, ok=True, env=None):
    """go tool pprof ARGS: its output (it must succeed, or fail if not
    `ok`)."""
    d = tmpdir()
    r = subprocess.run([GO, "tool", "pprof"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT, cwd=d,
                       env=dict(os.environ, PPROF_TMPDIR=d, HOME=d,
                                **(env or {})))
    out, err = r.stdout.decode(), r.stderr.decode()
    check((r.returncode == 0) == ok, "go tool pprof %r: %d %s %s" %
          (args, r.returncode, out, err))
    return out + err


def top_flat(out, function):
    """The flat value go tool pprof -top gives `function`."""
    for line in out.splitlines():
        w = line.split()
        if len(w) >= 6 and w[5] == function:
            return w[0]
    raise Failure("no %s in:\n%s" % (function, out))


def expect_main_objects(out, what):
    """go tool pprof -top -sample_index=inuse_objects of the sampled
    target: main() holds KEPT objects (none where nothing is sampled)."""
    if SAMPLES:
        check(top_flat(out, "main") == str(KEPT), "%s:\n%s" % (what, out))
    else:
        check("Showing nodes accounting for 0, 0% of 0 total" in out,
              "%s, nothing sampled:\n%s" % (what, out))


def test_pprof_go():
    """go tool pprof, a client nobody here wrote, fetches the profiles
    over HTTP, and over HTTPS with basic auth (the user in the URL; the
    CA trusted through SSL_CERT_FILE, or nothing checked with
    https+insecure://: go tool pprof fetches URLs itself and ignores
    -tls_ca, which the standalone pprof takes); the default sample types
    are Go's: inuse_space for heap, alloc_space for allocs."""
    if not GO:
        print("SKIP: go is not installed (Debian: golang-go)")
        sys.exit(77)
    t = Target("sampled", TAG + "-ppgo", env=SAMPLED)
    e = Exporter()
    url = "http://127.0.0.1:%d/debug/pprof/%%s?pid=%d" % (e.port, t.pid)
    out = go_pprof("-top", url % "heap")
    check("Type: inuse_space" in out, "heap's default type:\n" + out)
    out = go_pprof("-top", url % "allocs")
    check("Type: alloc_space" in out, "allocs' default type:\n" + out)
    out = go_pprof("-top", "-sample_index=inuse_objects", url % "heap")
    expect_main_objects(out, "main's objects")
    out = go_pprof("-top", "-seconds=1", url % "heap")
    check("Duration: 1" in out, "a delta:\n" + out)
    e.stop()

    d = tmpdir()
    e, (user, password) = tls_exporter(d)
    path = "127.0.0.1:%d/debug/pprof/heap?pid=%d" % (e.port, t.pid)
    who = "%s:%s@" % (user, urllib.parse.quote(password, safe=""))
    ca = {"SSL_CERT_FILE": os.path.join(d, "ca.crt")}
    for url, env in (("https://" + who + path, ca),
                     ("https+insecure://" + who + path, None)):
        out = go_pprof("-top", "-sample_index=inuse_objects", url, env=env)
        expect_main_objects(out, url)
    out = go_pprof("-top", "https://" + path, ok=False, env=ca)
    check("401 Unauthorized" in out, "without a user:\n" + out)
    out = go_pprof("-top", "https://" + who + path, ok=False)
    check("certificate signed by unknown authority" in out,
          "the CA not trusted:\n" + out)
    e.stop()
    t.stop()


def test_pprof_concurrent():
    """A profile being built holds up no scrape: with the one place for a
    profile taken (a delta profile, holding its process's profile and
    waiting), a further profile gets 503 and Retry-After at once, and
    /metrics, the index and the targets are answered, exact; when the
    exporter stops, the delta ends at once, not 300 s later."""
    f = Target("fixed", TAG + "-ppc-fixed")
    t = Target("sampled", TAG + "-ppc", env=SAMPLED)
    e = Exporter("--web.max-profile-requests=1")
    path = "/debug/pprof/heap?pid=%d" % t.pid
    answers = []

    def delta():
        # Until it has the place (the poll below may hold it a moment).
        while True:
            try:
                a = e.raw(path + "&seconds=300")
            except (urllib.error.URLError, ConnectionError) as x:
                a = x
            if isinstance(a, Exception) or a[0] != 503 or b"shutting" in a[2]:
                answers.append(a)
                return
            time.sleep(0.01)
    waiting = threading.Thread(target=delta)
    waiting.start()
    # Turned away: the delta holds the place (a poll is only turned away
    # while the other request holds it, and the delta, turned away, holds
    # none).
    wait_for(lambda: e.raw(path)[0] == 503, "the delta to be under way")
    headers = refused(e, path, 503, "as many heap profiles as are built at "
                      "once (1, --web.max-profile-requests) are being built: "
                      "try again")
    check(headers["Retry-After"] == "1", "Retry-After %r" % headers)
    expect_fixed(of(e.metrics(), f), "beside the profile", classes=False)
    targets_of(e, [t.pid, f.pid])
    check(e.get("/debug/pprof/")[0] == 200, "the index")
    check(waiting.is_alive() and not answers,
          "the delta is still waiting: %r" % answers)
    e.p.send_signal(signal.SIGTERM)
    waiting.join(timeout=TIMEOUT)
    check(not waiting.is_alive(), "the delta went on after the exporter stopped")
    # It ends with 503, or with its connection closed if the server
    # closed it before that was sent.
    a = answers[0]
    check(isinstance(a, (urllib.error.URLError, ConnectionError)) or
          (a[0] == 503 and a[2] == b"shutting down\n"),
          "the delta at the stop: %r" % (a,))
    e.stop()
    t.stop()
    f.stop()


def test_pprof_prometheus():
    """A real Prometheus discovers the processes from /debug/pprof/targets
    (http_sd_configs over TLS with basic auth): /api/v1/targets shows one
    target per process, with its labels, and ?pid= in its scrape URL."""
    check(PROMETHEUS and PROMTOOL, "no prometheus (bash scripts/deps.sh "
          "unpacks it)")
    d = tmpdir()
    a = Target("sampled", TAG + "-sd-a", env=SAMPLED)
    b = Target("fixed", TAG + "-sd-b")
    e, (user, password) = tls_exporter(d)
    port = free_port()
    ca = os.path.join(d, "ca.crt")
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: mstat-heap
    metrics_path: /debug/pprof/allocs
    scheme: https
    tls_config:
      ca_file: %s
    basic_auth:
      username: %s
      password: '%s'
    http_sd_configs:
      - url: https://127.0.0.1:%d/debug/pprof/targets
        refresh_interval: 1s
        tls_config:
          ca_file: %s
        basic_auth:
          username: %s
          password: '%s'
""" % (ca, user, password, e.port, ca, user, password))
    r = subprocess.run([PROMTOOL, "check", "config",
                        os.path.join(d, "prometheus.yml")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "promtool check config: %s" % r.stdout.decode())
    log = open(os.path.join(d, "prometheus.log"), "w")
    prom = subprocess.Popen(
        [PROMETHEUS, "--config.file=" + os.path.join(d, "prometheus.yml"),
         "--storage.tsdb.path=" + os.path.join(d, "data"),
         "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=log)
    children.append(prom)

    def ours():
        try:
            ts = prom_get(port, "/api/v1/targets")["data"]["activeTargets"]
        except (urllib.error.URLError, ConnectionError):
            check(prom.poll() is None, "prometheus exited: %s" %
                  open(os.path.join(d, "prometheus.log")).read())
            return None
        mine = [x for x in ts if x["labels"].get("pid") in
                (str(a.pid), str(b.pid))]
        return len(mine) == 2 and mine
    for x in wait_for(ours, "prometheus to discover both processes"):
        t = a if x["labels"]["pid"] == str(a.pid) else b
        labels = x["labels"]
        want = {"job": "mstat-heap", "instance": "127.0.0.1:%d" % e.port,
                "pid": str(t.pid), "name": t.name, "service_name": t.name}
        check(labels == want, "labels %r, not %r" % (labels, want))
        check(x["discoveredLabels"]["__param_pid"] == str(t.pid),
              "discovered %r" % x["discoveredLabels"])
        url = "https://127.0.0.1:%d/debug/pprof/allocs?pid=%d" % (e.port, t.pid)
        check(x["scrapeUrl"] == url, "scrape URL %r, not %r" %
              (x["scrapeUrl"], url))
    prom.send_signal(signal.SIGTERM)
    prom.wait(timeout=TIMEOUT)
    log.close()
    e.stop()
    a.stop()
    b.stop()


def main():
    name = sys.argv[1]
    fn = globals().get("test_" + name)
    if not fn:
        print("no test %s" % name)
        return 2
    try:
        fn()
        print("ok %s" % name)
        return 0
    except Failure as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    finally:
        for p in children:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                    p.wait()
                except ProcessLookupError:
                    pass
        for d in tmpdirs:
            shutil.rmtree(d, ignore_errors=True)
        # Processes killed here leave their segments: remove ours.
        for p in children:
            if os.path.exists("/proc/%d" % p.pid):
                continue  # not ours any more: the pid was reused
            for n in segments_of(p.pid):
                try:
                    os.unlink("/dev/shm/" + n)
                except FileNotFoundError:
                    pass


if __name__ == "__main__":
    sys.exit(main())
