#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""mstat-top and mstat-exporter on a host with containers: real ones
where podman can start them (Debian's podman, with a configuration and
storage of this test's own, never the machine's), else the same kernel
objects made with unshare(1) (tests/containers/nsbox.py); each run says
which.

    e2e.py hosts
    e2e.py unseen
    e2e.py runtime   which runtime a run would use, and nothing more

Two containers, each with its own mount, pid and IPC namespaces, its own
tmpfs /dev/shm and its own cgroup, run the same instrumented process
under the same pid, one as root and one as another user (nobody).  A
third runs on the host.
A host mstat-top in a terminal (tmux) and a host mstat-exporter scraped
by a real Prometheus show all three, each once, under its host pid, with
its pid in its namespace, its container's id and its counts.  Then one
container's process is killed: its row turns killed and its segment is
kept in its container's /dev/shm for its grace, removed by a tick with a
grace of 0; the other container's stays.
Then the other's ends cleanly: its row turns exited, its segment is
gone.  In the exporter's next scrapes the exited one's series are gone,
the killed one's stay (mstat_running 0, and mstat_killed_info with how
it died) for the exporter's grace.

unseen: a container's process (tests/containers/nsbox.py) killed before
any host reader saw it, as the OOM killer kills one between two ticks.
Its claim can no longer be checked, so a host reader does not show it;
but a reader in the container does, so the host's tick keeps its segment
for its grace like any killed process's, and says so.  So does a host
reader that refused a segment while its owner lock was held by a process
it could not find, once the lock goes.  A tick of a reader in the
container then shows it killed, and --gc with a grace of 0 through the
container removes them.

The observers read this test's namespaces only (--namespaces with the
containers' pids), not every one on the machine: other test runs live
in mount namespaces of their own there.  As root (else 77).

Environment (set by meson): MSTAT_TOP, MSTAT_EXPORTER, MSTAT_TARGET,
PROMETHEUS, TMUX_BIN, PODMAN (empty: use unshare), WORKDIR (a directory
of the build tree for podman's configuration and storage).  A tool the
build found and the machine no longer has (removed since) is taken as
never found.
"""
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "top"))
import nsbox  # noqa: E402
import tmuxview  # noqa: E402

TOP = os.environ["MSTAT_TOP"]
EXPORTER = os.environ["MSTAT_EXPORTER"]
TARGET = os.environ["MSTAT_TARGET"]


def tool(var):
    """The program the build found for `var`, if the machine still has
    it; else "", as if it had never been found."""
    path = os.environ.get(var, "")
    if path and not os.access(path, os.X_OK):
        print("containers: %s=%s is gone since the build was configured"
              % (var, path))
        return ""
    return path


PROMETHEUS = tool("PROMETHEUS")
TMUX = tool("TMUX_BIN")
PODMAN = tool("PODMAN")
WORK = os.environ.get("WORKDIR", "")
TAG = "ctr%d" % os.getpid()
TIMEOUT = 60
NOBODY = 65534

# The instrumented process, with the same pid in every container: its
# shell first spends pids up to 19 (the runtime spends a few of the
# first ones, not always as many).  Its stdin is a pipe from `sleep
# 600`, its feeder: it exits when that is killed.  The shell lives on
# once it is gone.
SCRIPT = ('while :; do true & p=$!; wait $p; [ $p -lt 19 ] || break; done; '
          'sleep 600 | %s fixed & wait; exec sleep 600' % TARGET)
# Its counts ("fixed" mode, tests/top/target.c).
FIXED = {"alloc_count": 10, "free_count": 3, "live_objects": 7}

cleanup = []


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_for(cond, what, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(time.monotonic() < deadline, "timed out waiting for " + what)
        time.sleep(0.1)


class Podman:
    """podman with a configuration and storage of this test's own: the
    machine's (/etc/containers) is neither read nor changed.  podman 4.3
    needs default_ulimits = [] where the shell may not raise its limits,
    and runc (crun refuses hybrid cgroups); --rootfs runs the host's
    /usr, read-only, in an empty root."""

    def __init__(self):
        self.dir = os.path.join(WORK, "podman")
        shutil.rmtree(self.dir, ignore_errors=True)
        rootfs = os.path.join(self.dir, "rootfs")
        for d in ("dev", "proc", "sys", "tmp", "etc", "run", "usr"):
            os.makedirs(os.path.join(rootfs, d))
        for l in ("lib", "lib64", "bin", "sbin"):
            os.symlink("usr/" + l, os.path.join(rootfs, l))
        with open(os.path.join(rootfs, "etc", "passwd"), "w") as f:
            f.write("root:x:0:0::/:/bin/sh\n")
        with open(os.path.join(self.dir, "containers.conf"), "w") as f:
            f.write('[containers]\ndefault_ulimits = []\nnetns = "none"\n\n'
                    '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n'
                    'events_logger = "none"\n')
        with open(os.path.join(self.dir, "storage.conf"), "w") as f:
            f.write('[storage]\ndriver = "vfs"\nrunroot = "%s/run"\n'
                    'graphroot = "%s/root"\n' % (self.dir, self.dir))
        self.env = dict(os.environ,
                        CONTAINERS_CONF=self.dir + "/containers.conf",
                        CONTAINERS_STORAGE_CONF=self.dir + "/storage.conf",
                        CONTAINERS_REGISTRIES_CONF="/dev/null")
        self.rootfs = rootfs
        self.build = os.path.dirname(os.path.dirname(os.path.dirname(TARGET)))

    def podman(self, *args, **kw):
        return subprocess.run([PODMAN, "--tmpdir", self.dir + "/tmp"] +
                              list(args), env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT, **kw)

    def run(self, name, script, uid=0):
        """A container running `script` (sh) as `uid`: its id and its
        pid 1."""
        r = self.podman("run", "-d", "-i", "--name", name,
                        "--user", "%d:%d" % (uid, uid),
                        "-e", "MSTAT_NAME=" + name,
                        "-v", "/usr:/usr:ro",
                        "-v", "%s:%s:ro" % (self.build, self.build),
                        "--rootfs", self.rootfs, "/bin/sh", "-c", script)
        check(r.returncode == 0, "podman run: %s" % r.stderr.decode())
        cid = r.stdout.decode().split()[-1]
        cleanup.append(lambda: self.podman("rm", "-f", "-t", "0", cid))
        r = self.podman("inspect", "-f", "{{.State.Pid}}", cid)
        return cid, int(r.stdout.decode())

    def usable(self):
        """Why podman cannot start a container here, or None."""
        r = self.podman("run", "--rm", "-v", "/usr:/usr:ro",
                        "--rootfs", self.rootfs, "/bin/true")
        if r.returncode != 0:
            return r.stderr.decode().strip().splitlines()[-1:]
        return None


class Boxes:
    """The same kernel objects, made with unshare(1)."""

    def run(self, name, script, uid=0):
        # Its stdin a pipe that stays open, as podman's -i keeps it.
        box = nsbox.Box(TAG, 'exec 3< <(exec sleep 600)\n'
                        'export MSTAT_NAME=%s\n'
                        'setpriv --reuid=%d --regid=%d --clear-groups '
                        '%s fixed <&3 &\n'
                        'wait || true\n'
                        'exec sleep 600\n' % (name, uid, uid, TARGET))
        cleanup.append(box.close)
        return box.id, box.init


def runtime():
    """podman if it can start a container, else unshare; or skip."""
    if os.geteuid() != 0:
        print("SKIP: containers need root")
        sys.exit(77)
    if PODMAN and WORK:
        p = Podman()
        why = p.usable()
        if not why:
            print("containers: podman (%s)" % PODMAN)
            return p
        print("containers: podman cannot start one here: %s" % why)
    why = nsbox.usable()
    if why:
        print("SKIP: neither podman nor unshare(1) can make a container: %s"
              % why)
        sys.exit(77)
    print("containers: made with unshare(1), a tmpfs /dev/shm and a cgroup "
          "each")
    return Boxes()


def children_of(pid):
    return nsbox.children(pid)


def segments(shm):
    return sorted(n for n in os.listdir(shm) if n.startswith("mstat."))


class Container:
    def __init__(self, rt, name, uid=0):
        self.name = name
        self.id, self.init = rt.run(name, SCRIPT, uid)
        # Its instrumented process: pid 1's child with a segment.
        self.shm = "/proc/%d/root/dev/shm" % self.init
        self.seg = wait_for(lambda: segments(self.shm),
                            "%s's segment" % name)[0]
        there = int(self.seg.split(".")[1])
        self.pid = wait_for(lambda: [p for p in all_pids(self.init)
                                     if nsbox.nspid(p)[-1] == there],
                            "%s's process" % name)[0]
        self.nspid = there

    def end(self):
        """Ends its process cleanly: its feeder killed, its stdin ends."""
        feeders = [p for p in all_pids(self.init)
                   if cmdline(p) == ["sleep", "600"]]
        check(len(feeders) == 1, "%s's feeder: %r" % (self.name, feeders))
        os.kill(feeders[0], signal.SIGTERM)


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().decode().split("\0")[:-1]
    except FileNotFoundError:
        return None


def all_pids(root):
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children_of(p)
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def prom_query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        port, urllib.parse.urlencode({"query": q}))
    with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
        return json.loads(r.read().decode())["data"]["result"]


def test_hosts():
    rt = runtime()
    host = subprocess.Popen([TARGET, "fixed"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            env=dict(os.environ, MSTAT_NAME=TAG + "-host"))
    cleanup.append(lambda: host.kill())
    check(host.stdout.readline() == b"ready\n", "the host's process started")
    a = Container(rt, TAG + "-a")
    # b's process is another user's: root reads every user's.
    b = Container(rt, TAG + "-b", NOBODY)
    check(os.stat(os.path.join(b.shm, b.seg)).st_uid == NOBODY,
          "b's segment is uid %d's" % NOBODY)
    check(a.nspid == b.nspid and a.pid != b.pid,
          "the same pid in both containers: %d, %d (host %d, %d)"
          % (a.nspid, b.nspid, a.pid, b.pid))
    want = {host.pid: (host.pid, TAG + "-host", None),
            a.pid: (a.nspid, a.name, a.id),
            b.pid: (b.nspid, b.name, b.id)}
    which = "--namespaces=%d,%d" % (a.init, b.init)

    # Batch JSON: every field.
    r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", which, "-F", TAG],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "mstat-top: %r" % r.stderr)
    rows = json.loads(r.stdout.decode())["processes"]
    check(sorted(p["pid"] for p in rows) == sorted(want),
          "each process once, by its host pid: %r" % rows)
    for p in rows:
        nspid, name, cid = want[p["pid"]]
        check(p["nspid"] == nspid and p["name"] == name and
              p["container_id"] == cid and p["state"] == "running" and
              all(p[k] == v for k, v in FIXED.items()),
              "pid %d: %r" % (p["pid"], p))

    # Only the namespaces asked for: its own, and one container's.
    def shown(ns):
        r = subprocess.run([TOP, "-b", "-o", "json", "-n", "1", ns, "-F", TAG],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        check(r.returncode == 0, "mstat-top %s: %r" % (ns, r.stderr))
        return sorted(p["pid"] for p in
                      json.loads(r.stdout.decode())["processes"])
    check(shown("--namespaces=own") == [host.pid], "own: the host's only")
    check(shown("--namespaces=%d" % a.init) == sorted([host.pid, a.pid]),
          "a's namespace and its own")

    # Without the capabilities, its own namespace only, and how many it
    # could not read said.
    r = subprocess.run(["setpriv", "--inh-caps=-all", "--ambient-caps=-all",
                        "--bounding-set=-all", TOP, "-b", "-o", "json", "-n",
                        "1", which, "-F", TAG],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0 and
          [p["pid"] for p in json.loads(r.stdout.decode())["processes"]] ==
          [host.pid] and "mstat-top: 2 namespaces not read: permission "
          "denied" in r.stderr.decode(), "without capabilities: %r %r"
          % (r.stdout, r.stderr))
    port = start_exporter(which, ["setpriv", "--inh-caps=-all",
                                  "--ambient-caps=-all", "--bounding-set=-all"])
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=TIMEOUT) as r:
        text = r.read().decode()
    check("\nmstat_exporter_namespaces_unreadable 2\n" in text and
          'name="%s-a"' % TAG not in text, "the exporter without "
          "capabilities: %s" % [l for l in text.splitlines() if TAG in l or
                                "unreadable" in l])

    # The exporter, scraped by Prometheus every second.
    port = start_exporter(which)
    prom = start_prometheus(port)
    q = 'mstat_live_objects{name=~"%s-.*"}' % TAG

    def all_three():
        res = prom_query(prom, q)
        return len(res) == 3 and res
    res = wait_for(all_three, "Prometheus to have the three processes")
    for s in res:
        m = s["metric"]
        nspid, name, cid = want[int(m["pid"])]
        check(m["name"] == name and m.get("container_id") == cid and
              s["value"][1] == str(FIXED["live_objects"]),
              "series %r" % s)
    # Joined on the container id as kube-state-metrics has it.
    join = prom_query(prom, 'count by (container_id) (%s)' % q)
    check(sorted(s["metric"].get("container_id", "") for s in join) ==
          sorted(["", a.id, b.id]), "one series per container: %r" % join)
    unread = prom_query(prom, "mstat_exporter_namespaces_unreadable")
    check(unread and unread[0]["value"][1] == "0", "every namespace read")
    # Heap profiles by host pid, and targets that say where each runs.
    for pid in want:
        url = "http://127.0.0.1:%d/debug/pprof/heap?pid=%d" % (port, pid)
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
        check(status == 200 and body[:2] == b"\x1f\x8b",
              "the heap profile of pid %d: %d, %r" % (pid, status, body[:200]))
    with urllib.request.urlopen("http://127.0.0.1:%d/debug/pprof/targets"
                                % port, timeout=TIMEOUT) as r:
        targets = [t for t in json.loads(r.read().decode())
                   if t["labels"].get("name", "").startswith(TAG)]
    check(sorted((int(t["labels"]["pid"]), t["labels"].get("container_id"))
                 for t in targets) ==
          sorted((pid, w[2]) for pid, w in want.items()),
          "one profile target per process, by host pid, with its "
          "container: %r" % targets)

    # The view, in a terminal wide enough for WHERE.
    check(TMUX, "no tmux")
    sock = "mstat-%s" % TAG
    with tmuxview.Tmux(TMUX, sock, "%s -d 0.3 %s -F %s" % (TOP, which, TAG),
                       160, 20, TIMEOUT) as t:
        def row(s, pid):
            return [l for l in s.splitlines() if l.split()[:1] == [str(pid)]]

        def state(s, pid):
            return row(s, pid)[0].split()[-1] if row(s, pid) else None
        s = t.wait(lambda s: all(row(s, p) for p in want), "three rows")
        check(a.id[:12] in row(s, a.pid)[0] and b.id[:12] in row(s, b.pid)[0]
              and a.id[:12] not in row(s, host.pid)[0] and
              b.id[:12] not in row(s, host.pid)[0], "WHERE: %s" % s)
        # One container's process killed.
        os.kill(a.pid, signal.SIGKILL)
        s = t.wait(lambda s: state(s, a.pid) == "killed" and
                   state(s, b.pid) == "running", "a killed, b not")
        # Kept for its grace (MSTAT_KILLED_GRACE), for readers started
        # later; a tick with a grace of 0 removes it.
        check(a.seg in segments(a.shm), "its segment kept for its grace")
        subprocess.run("%s -b -n 1 --killed-grace=0 %s -F %s" % (TOP, which,
                                                                TAG),
                       shell=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=TIMEOUT)
        wait_for(lambda: a.seg not in segments(a.shm),
                 "its segment to be removed from its container's /dev/shm")
        check(b.seg in segments(b.shm), "the other container's stays")
        check(state(s, host.pid) == "running", "the host's runs on")
        # The other's ends cleanly: exited, its segment gone with it.
        b.end()
        s = t.wait(lambda s: state(s, b.pid) == "exited", "b exited")
        wait_for(lambda: b.seg not in segments(b.shm),
                 "b's segment to be gone from its container's /dev/shm")
        check(state(s, a.pid) == "killed" and
              state(s, host.pid) == "running", "a killed, the host's runs "
              "on: %s" % s)
    # The exited one gone from the exporter's next scrapes; the killed
    # one there for the exporter's grace, saying how it died.
    def ended():
        res = prom_query(prom, q)
        return sorted(int(s["metric"]["pid"]) for s in res) == \
            sorted([host.pid, a.pid]) and res
    wait_for(ended, "the exited process's series to go")
    running = {int(s["metric"]["pid"]): s["value"][1] for s in prom_query(
        prom, 'mstat_running{name=~"%s-.*"}' % TAG)}
    killed = prom_query(prom, 'mstat_killed_info{name=~"%s-.*"}' % TAG)
    check(running == {host.pid: "1", a.pid: "0"} and len(killed) == 1 and
          killed[0]["metric"]["pid"] == str(a.pid) and
          killed[0]["metric"]["how"] == "killed" and
          killed[0]["metric"].get("container_id") == a.id,
          "running %r, killed %r" % (running, killed))


def test_unseen():
    why = nsbox.usable()
    if why:
        print("SKIP: needs containers of unshare(1): %s" % why)
        sys.exit(77)
    name = TAG + "-unseen"
    # Killed in the container as soon as it has its segment ("ready"),
    # before any reader of this test looks.
    box = nsbox.Box(TAG, 'export MSTAT_NAME=%s\n'
                    'coproc T { exec %s fixed < <(exec sleep 600); }\n'
                    'read -r ready <&"${T[0]}"\n'
                    'kill -KILL "$T_PID"\n'
                    'wait "$T_PID" || true\n'
                    'echo "$ready, killed"\n'
                    'exec sleep 600\n' % (name, TARGET))
    cleanup.append(box.close)
    check(box.line() == "ready, killed", "the container's process killed")
    shm = box.shm()
    segs = segments(shm)
    check(len(segs) == 1, "the killed process's segment: %r" % segs)
    seg = segs[0]
    nspid = int(seg.split(".")[1])
    which = "--namespaces=%d" % box.init

    # The host's tick: not shown, kept for its grace, said once.
    r = subprocess.run([TOP, "-b", "-o", "json", "-n", "2", "-d", "0.2",
                        which], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "mstat-top: %r" % r.stderr)
    said = [l for l in r.stderr.decode().splitlines() if seg in l]
    check(len(said) == 1 and re.fullmatch(
        r"mstat-top: kept %s in mnt:\[\d+\]: its process \(pid %d of pid "
        r"namespace \d+\) is gone, killed \d+ s ago \(MSTAT_KILLED_GRACE "
        r"is 300 s\)" % (re.escape(seg), nspid), said[0]),
          "the host's tick says it kept it: %r" % said)
    for line in r.stdout.decode().splitlines():
        check(not [p for p in json.loads(line)["processes"]
                   if p["name"] == name], "shown by the host: %s" % line)
    check(segments(shm) == [seg], "kept in its container's /dev/shm: %r"
          % segments(shm))

    # A copy of it under its next name, whose owner lock this test holds:
    # a process the host's reader cannot find, alive, is refused (twice:
    # it may have started after the reader looked), then looked at each
    # tick; once let go, kept for its grace like the other.
    copy = seg + ".1"
    with open(os.path.join(shm, seg), "rb") as f:
        head, size = f.read(65536), os.fstat(f.fileno()).st_size
    fd = os.open(os.path.join(shm, copy), os.O_RDWR | os.O_CREAT | os.O_EXCL,
                 0o600)
    os.write(fd, head)
    os.ftruncate(fd, size)
    # struct flock: a read lock on byte 0 (MSTAT_OWNER_LOCK_BYTE).
    fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37),
                struct.pack("hh4xqqi4x", fcntl.F_RDLCK, os.SEEK_SET, 0, 1, 0))
    top = subprocess.Popen([TOP, "-b", "-o", "json", "-n", "6", "-d", "0.2",
                            which], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, bufsize=0)
    cleanup.append(top.kill)
    for _ in range(3):
        if not top.stdout.readline():
            raise Failure("mstat-top ended: %r" % top.stderr.read())
    os.close(fd)
    out, err = top.communicate(timeout=TIMEOUT)
    said = [l for l in err.decode().splitlines() if copy in l]
    check(len(said) == 2 and "no process this reader can see" in said[0] and
          re.fullmatch(r"mstat-top: kept %s in mnt:\[\d+\]: its process is "
                       r"gone, killed \d+ s ago \(MSTAT_KILLED_GRACE is 300 "
                       r"s\)" % re.escape(copy), said[1]),
          "refused while held, then kept: %r" % said)
    check(segments(shm) == [seg, copy], "kept, the copy too: %r"
          % segments(shm))

    # A reader in the container shows it, killed.
    r = subprocess.run(["nsenter", "-t", str(box.init), "-m", "-p", TOP,
                        "-b", "-o", "json", "-n", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "mstat-top in the container: %r" % r.stderr)
    rows = [(p["pid"], p["state"]) for p in
            json.loads(r.stdout.decode())["processes"] if p["name"] == name]
    check(rows == [(nspid, "killed")], "in the container: %r" % rows)

    # Removed once its grace is over: here, a grace of 0.
    r = subprocess.run([TOP, "--gc", "--killed-grace=0", which],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0 and segments(shm) == [],
          "--gc with a grace of 0: %r left: %r" % (segments(shm), r.stderr))


def start_exporter(which, prefix=()):
    for attempt in range(20):
        port = free_port()
        err = open(os.path.join(WORK, "exporter.log"), "w")
        p = subprocess.Popen(list(prefix) + [
            EXPORTER, "--web.listen-address=127.0.0.1:%d" % port,
            "--reader." + which[2:]], stdout=subprocess.DEVNULL, stderr=err)
        cleanup.append(p.kill)

        def up():
            if p.poll() is not None:
                return "exited"
            return "listening" in open(err.name).read()
        wait_for(up, "the exporter to listen")
        if p.poll() is None:
            return port
    raise Failure("no port for the exporter")


def start_prometheus(target):
    check(PROMETHEUS, "no prometheus (bash scripts/deps.sh unpacks it)")
    d = os.path.join(WORK, "prometheus")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: mstat\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % target)
    port = free_port()
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen([PROMETHEUS, "--config.file=" + d + "/prometheus.yml",
                          "--storage.tsdb.path=" + d + "/data",
                          "--web.listen-address=127.0.0.1:%d" % port],
                         stdout=log, stderr=log)
    cleanup.append(p.kill)

    def ready():
        check(p.poll() is None, "prometheus exited: %s" %
              open(log.name).read())
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port,
                                        timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError):
            return False
    wait_for(ready, "prometheus to be ready")
    return port


def test_runtime():
    """The runtime a run would use, said; with podman gone since the
    build was configured, unshare, as if it had never been there."""
    rt = runtime()
    if os.environ.get("PODMAN") and not PODMAN:
        check(isinstance(rt, Boxes), "podman gone, yet %r" % rt)


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "hosts"
    try:
        globals()["test_" + name]()
        print("ok %s" % name)
        return 0
    except (Failure, tmuxview.ScreenTimeout) as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    finally:
        for fn in reversed(cleanup):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - cleanup goes on
                print("cleanup: %s" % e)


if __name__ == "__main__":
    sys.exit(main())
