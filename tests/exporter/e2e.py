#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of mstat-exporter against real instrumented processes.

    e2e.py TEST     TEST: flags http formats gone concurrent busy stalled
                          tls dashboard prometheus health

Environment (set by meson): MSTAT_EXPORTER, MSTAT_TOP, MSTAT_TARGET
(tests/observer/target.c), PROMTOOL, PROMETHEUS (as scripts/deps.sh
unpacks them), OPENSSL (empty when not found), DASHBOARD
(docs/mstat-grafana.json).

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

EXPORTER = os.environ["MSTAT_EXPORTER"]
TOP = os.environ["MSTAT_TOP"]
TARGET = os.environ["MSTAT_TARGET"]
PROMTOOL = os.environ.get("PROMTOOL", "")
PROMETHEUS = os.environ.get("PROMETHEUS", "")
OPENSSL = os.environ.get("OPENSSL", "")
DASHBOARD = os.environ["DASHBOARD"]
TAG = "exp%d" % os.getpid()  # unique names for this run
VALGRIND = "vgpreload" in os.environ.get("LD_PRELOAD", "")
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

    def __init__(self, mode, name):
        self.name = name
        self.p = subprocess.Popen([TARGET, mode], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  env=dict(os.environ, MSTAT_NAME=name))
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
    # Without --collector.classes: no per-class series.
    e.stop()
    e = Exporter()
    s = of(e.metrics(), f)
    expect_fixed(s, "without classes", classes=False)
    check(not [k for k in s if "class" in k], "no class series: %r" % s)
    e.stop()
    f.stop()
    g.stop()


def test_gone():
    """A process that exits, or is killed, is gone from the next scrape;
    the killed one's segment is removed."""
    a = Target("fixed", TAG + "-exit")
    k = Target("fixed", TAG + "-kill")
    e = Exporter()
    text = e.metrics()
    expect_fixed(of(text, a), "before", classes=False)
    expect_fixed(of(text, k), "before", classes=False)
    a.stop()
    os.kill(k.pid, signal.SIGKILL)
    k.p.wait(timeout=TIMEOUT)
    check(segments_of(k.pid), "a killed process leaves its segment")
    text = e.metrics()
    check(of(text, a) == {} and of(text, k) == {},
          "gone from the next scrape: %r %r" % (of(text, a), of(text, k)))
    check(not segments_of(k.pid), "the killed process's segment removed")
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
    """Every sample name the exporter serves, classes included."""
    t = Target("fixed", TAG + "-names")
    e = Exporter("--collector.classes")
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
    for want in ("Live bytes", "Growth", "Allocation rate", "heat map"):
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


def refused_start(args, status, line):
    """mstat-exporter with args stops at once, never listening, with the
    status and one line on stderr (`line` whole, or in it if it does not
    begin "mstat-exporter: ")."""
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
    whole = line.startswith("mstat-exporter: ")
    check((got == line + "\n") if whole else
          (line in got and got.count("\n") == 1),
          "%r said %r, not %r" % (args, got, line))


FORMS = ("; the forms are host:port, [ipv6]:port and :port (every "
         "interface), with a port from 1 to 65535")


def test_flags():
    """What the exporter is given is checked before it starts: every port
    outside 1-65535, every malformed listen address and a telemetry path
    without its / stop the start with a line saying what is allowed."""
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
                      'mstat-exporter: --web.listen-address "%s": %s%s' %
                      (addr, why, FORMS))
    # A bad address after a good one: nothing is bound.
    refused_start(["--web.listen-address=127.0.0.1:%d" % free_port(),
                   "--web.listen-address=:99999"], 2,
                  "the port 99999 is out of range")
    refused_start(["--web.telemetry-path=nometrics"], 2,
                  'mstat-exporter: --web.telemetry-path "nometrics": it must '
                  'start with /, as /metrics does')
    refused_start(["--web.telemetry-path=/"], 2,
                  'mstat-exporter: --web.telemetry-path "/": / is the landing '
                  'page: the metrics need a path of their own, such as '
                  '/metrics')
    refused_start(["--web.telemetry-path=/-/healthy"], 2,
                  'mstat-exporter: --web.telemetry-path "/-/healthy": '
                  '/-/healthy is the health endpoint: the metrics need a '
                  'path of their own')
    refused_start(["--web.telemetry-path=/metrics?x"], 2,
                  "a path is / and printable ASCII but for space, ?, # and %")
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
    with basic auth: the target is up, a live process's mstat_live_bytes
    is queried through /api/v1/query, its series are gone once it exits,
    and every dashboard expression is one the server accepts."""
    check(PROMETHEUS, "no prometheus (bash scripts/deps.sh unpacks it)")
    d = tmpdir()
    certificates(d)
    password = "s3cret %s" % TAG
    with open(os.path.join(d, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: server.crt\n"
                "  key_file: server.key\n  min_version: TLS12\n"
                "basic_auth_users:\n  prometheus: '%s'\n" % bcrypt(password))
    t = Target("fixed", TAG + "-prom")
    e = Exporter("--web.config.file=" + os.path.join(d, "web.yml"),
                 "--collector.classes",
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
""" % (os.path.join(d, "ca.crt"), password, e.port))
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


def test_health():
    """/-/healthy answers 200 "OK" without reading anything or waiting for
    the reader: a reader stopped while a scrape waits for it leaves it
    200 until the scrape has waited the wait budget and 10 s, then 503
    saying why, and 200 again once the reader runs.  Like every route it
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
        # A wait counted from the scrapes above, not from the one below,
        # would show as a second too long.
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
