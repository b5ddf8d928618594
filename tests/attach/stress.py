#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Many attaches, several at once, over programs that allocate from every
thread, while a reader reads all along.

    stress.py ATTACHES [AT_ONCE]

Each job starts a program, attaches it at some moment of its work, lets it
finish, and compares what it did with what it does unattached: target.c
churning from every thread, one of them inside realloc() of hundreds of
MiB, one getting real-time signals all along, one forking; python3,
sqlite3 and the C++ program of e2e.py's programs test; nginx (master and
workers in one mstat-attach) under load.  A reader (mstat-top, batch,
JSON) reads every segment meanwhile: no count of any row may be negative.

Counted and printed: attaches, processes attached, refusals by reason,
crashes (a program killed by a signal, or exiting otherwise than it
would), hangs (a program or mstat-attach not done within e2e.TIMEOUT),
changed outputs; and the time the taken thread was held, at its p50,
p99 and max.  It fails unless crashes, hangs and changed outputs are 0,
and every attach either attached or gave up with a reason that leaves
the process as it was.
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import ATTACH, CXX, NGINX, TARGET, TIMEOUT, TOP  # noqa: E402

WORK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "work.py")
# What may stop an attach and leave the process as it was, on a busy
# machine: no thread found idle in time.  Anything else is a failure.
GAVE_UP = ("no thread could run the attach",)

lock = threading.Lock()
tally = {"attaches": 0, "attached": 0, "crashes": 0, "hangs": 0, "changed": 0,
         "refused": {}, "failures": [], "held_ms": []}


def note(key, what=None):
    with lock:
        tally[key] += 1
        if what:
            tally["failures"].append(what)


def attach(pids):
    """mstat-attach of pids: how many were attached; refusals noted."""
    try:
        r = subprocess.run([ATTACH] + [str(p) for p in pids], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        note("hangs", "mstat-attach %r hung" % pids)
        return 0
    out, err = r.stdout.decode(), r.stderr.decode()
    held = [float(m) for m in re.findall(r"taken for ([0-9.]+) ms", out)]
    with lock:
        tally["attaches"] += len(pids)
        tally["attached"] += len(held)
        tally["held_ms"] += held
        for line in err.splitlines():
            why = line.split(": ", 2)[-1]
            tally["refused"][why] = tally["refused"].get(why, 0) + 1
            if not any(g in why for g in GAVE_UP):
                tally["failures"].append("refused: %s" % line)
    return len(held)


def ended(what, p, out, want_rc=0):
    """Program p ended as it would have: exit status and output."""
    if p.returncode < 0:
        note("crashes", "%s: killed by signal %d" % (what, -p.returncode))
    elif p.returncode != want_rc:
        note("crashes", "%s: exit status %d" % (what, p.returncode))
    elif out is not None:
        note("changed", "%s: output %r" % (what, out[:200]))


def communicate(what, p, data=None):
    try:
        out, _ = p.communicate(data, timeout=TIMEOUT)
        return out.decode()
    except subprocess.TimeoutExpired:
        note("hangs", "%s (pid %d) hung" % (what, p.pid))
        p.kill()
        p.communicate()
        return None


def start(cmd):
    """cmd, its stdout unbuffered, as e2e.Target says why."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, bufsize=0)
    e2e.children.append(p)
    return p


def job_target(mode, n, rng):
    """target.c in `mode`: attached after a random moment of churn."""
    p = start([TARGET, mode, str(n)])
    if p.stdout.readline() != b"ready\n":
        note("crashes", "%s did not start" % mode)
        return
    sent = [0]
    stop = threading.Event()

    def signals():  # real-time signals all along the attach
        while not stop.is_set() or sent[0] < 50:
            try:
                os.kill(p.pid, signal.SIGRTMIN)
                sent[0] += 1
            except OSError:
                time.sleep(0.001)  # its queue is full: nothing lost
    s = threading.Thread(target=signals) if mode == "signals" else None
    if s:
        s.start()
    time.sleep(rng.random() * 0.05)
    attach([p.pid])
    time.sleep(rng.random() * 0.05)
    stop.set()
    if s:
        s.join()
    out = communicate(mode, p)
    want = "changed 0" + (" signals %d" % sent[0] if s else "") + "\n"
    if out is not None:
        ended(mode, p, None if out == want else "%r, not %r" % (out, want))


def job_program(name, cmd, steps, plain, at, rng):
    """A program fed `steps` (a line, or None: read one), attached before
    step `at`; its output compared with its output unattached."""
    p = start(cmd)
    got = []
    for i, s in enumerate(steps):
        if i == at:
            time.sleep(rng.random() * 0.02)
            attach([p.pid])
        if s is None:
            got.append(p.stdout.readline().decode())
        else:
            p.stdin.write(s.encode())
            p.stdin.flush()
    out = communicate(name, p)
    if out is not None:
        out = "".join(got) + out
        ended(name, p, None if out == plain else out)


def job_nginx(rng):
    """nginx, master and two workers attached in one mstat-attach under
    load; its answers checked, its stop graceful."""
    try:
        n = e2e.Nginx()
        time.sleep(rng.random() * 0.05)
        attach([n.master.pid] + n.workers)
        n.serve(300)
        n.stop()
    except e2e.Failure as f:
        note("changed", "nginx: %s" % f)
    except subprocess.TimeoutExpired:
        note("hangs", "nginx hung")


def plain_run(cmd, steps):
    p = start(cmd)
    got = []
    for s in steps:
        if s is None:
            got.append(p.stdout.readline().decode())
        else:
            p.stdin.write(s.encode())
            p.stdin.flush()
    out, _ = p.communicate(timeout=TIMEOUT)
    return "".join(got) + out.decode()


def programs():
    """The programs and the output each gives unattached."""
    # python3: "ready", its digests, "held", "freed"; cxx: no digests
    # until its end.
    steps = [None, "go\n", None, None, "x\n", None, "x\n"]
    cxx = [None, "go\n", None, "x\n", None, "x\n"]
    sql = [("create table t(a integer, b text);\n"
            "with recursive c(i) as (select 1 union all select i + 1 from c "
            "where i < 20000) insert into t select i, hex(i % 251) || "
            "printf('%08d', (i * 7919) % 20011) from c;\n.print ready\n"), None,
           ("select count(*), sum(a), max(b) from t;\n"
            "create index i on t(b); select a from t where b > '00010000' "
            "order by b limit 3;\n"), None]
    out = {}
    for name, cmd, st, at in (("python3", ["python3", WORK], steps, 2),
                              ("cxx", [CXX], cxx, 1),
                              ("sqlite3", ["sqlite3"], sql, 2)):
        out[name] = (cmd, st, plain_run(cmd, st), at)
    return out


def reader(stop):
    """mstat-top reads every segment all along: no negative count."""
    while not stop.is_set():
        r = subprocess.run([TOP, "-b", "-n", "1", "-o", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        for row in json.loads(r.stdout.decode())["processes"]:
            bad = {k: v for k, v in row.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0}
            if bad:
                note("changed", "pid %d read negative: %r" % (row["pid"], bad))
        time.sleep(0.1)


def main():
    want = int(sys.argv[1])
    at_once = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    progs = programs()
    kinds = [("target", "churn", 4), ("target", "huge", 2), ("target", "signals", 3),
             ("target", "fork", 2), ("program", "python3"), ("program", "cxx"),
             ("program", "sqlite3"), ("target", "churn", 8)]
    if os.path.exists(NGINX):
        kinds.append(("nginx",))
    issued = [0]

    def worker(seed):
        rng = random.Random(seed)
        while True:
            with lock:
                if issued[0] >= want:
                    return
                k = kinds[issued[0] % len(kinds)]
                issued[0] += 3 if k[0] == "nginx" else 1
            if k[0] == "target":
                job_target(k[1], k[2], rng)
            elif k[0] == "program":
                cmd, st, plain, at = progs[k[1]]
                job_program(k[1], cmd, st, plain, at, rng)
            else:
                job_nginx(rng)

    stop = threading.Event()
    r = threading.Thread(target=reader, args=(stop,))
    r.start()
    began = time.monotonic()
    try:
        ws = [threading.Thread(target=worker, args=(i,)) for i in range(at_once)]
        for w in ws:
            w.start()
        for w in ws:
            w.join()
    finally:
        stop.set()
        r.join()
        for c in e2e.children:
            if c.poll() is None:
                c.kill()
                c.wait()
        for g in e2e.groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except OSError:
                pass
    held = sorted(tally["held_ms"]) or [0.0]
    print("%d attaches (%d at once) in %.0f s: %d attached, %d crashes, %d hangs, "
          "%d changed outputs" % (tally["attaches"], at_once, time.monotonic() - began,
                                  tally["attached"], tally["crashes"], tally["hangs"],
                                  tally["changed"]))
    print("thread held: p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
        held[len(held) // 2], held[min(len(held) - 1, len(held) * 99 // 100)],
        held[-1]))
    for why, n in sorted(tally["refused"].items(), key=lambda x: -x[1]):
        print("refused %d: %s" % (n, why))
    for f in tally["failures"][:20]:
        print("FAIL", f)
    return 1 if tally["failures"] or tally["attaches"] < want else 0


if __name__ == "__main__":
    sys.exit(main())
