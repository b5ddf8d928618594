#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A container is an untrusted neighbour.  Its /dev/shm is its own to
fill, and a host-wide mstat-top reads it: what it plants there must not
make the host's reader open, follow, lock or remove anything outside
that /dev/shm, nor block it, nor show a process that is not what its
segment claims; each is refused, with why.

    namespaces.py container

The container (tests/containers/nsbox.py: mount, pid, IPC namespaces,
its own tmpfs /dev/shm, a cgroup) runs a real instrumented process, and
beside its segment holds:

  a symbolic link to a host file (absolute: a plain open() through
    /proc/PID/root would resolve it against the host's root), which the
    container's own view hides under a tmpfs;
  a FIFO (opened for reading, it would block until a writer came);
  a host file bind-mounted over a segment's name;
  a directory;
  a copy of a host process's segment under that process's name (it
    claims a process whose /dev/shm is elsewhere);
  a copy of its process's segment owned by another user;
  a copy whose header says another uid;
  a copy claiming a pid that runs nowhere, whose owner lock is free: a
    killed process's, to any reader (a reader in the container shows
    it), kept for its grace, and then the one thing removed, from the
    container's /dev/shm, through it.

As root (else skipped, 77); the environment is e2e.py's (MSTAT_TOP,
MSTAT_TARGET), HEADER_OFFSETS where a header's fields are.
"""
import os
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "top"))
sys.path.append(os.path.join(HERE, "..", "containers"))
import e2e  # noqa: E402
from files import digest, offsets  # noqa: E402
import nsbox  # noqa: E402
from e2e import (TAG, TARGET, TIMEOUT, TOP, Target, check,  # noqa: E402
                 segments_of, ticks, wait_for)

NOBODY = 65534


def copy(src, dst, uid=None, patch=()):
    """A copy of segment src at dst (mode 0600): its first pages (header,
    classes, the first slots), the rest a hole; header fields patched:
    (offset, bytes)."""
    with open(src, "rb") as f:
        data = bytearray(f.read(65536))
        size = os.fstat(f.fileno()).st_size
    for at, b in patch:
        data[at:at + len(b)] = b
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, bytes(data))
    os.ftruncate(fd, size)
    if uid is not None:
        os.fchown(fd, uid, -1)
    os.close(fd)


def test_container():
    why = nsbox.usable()
    if why:
        print("needs containers of unshare(1): %s" % why)
        sys.exit(77)
    off = offsets()
    host = Target("fixed", TAG + "-host")
    hseg = "/dev/shm/" + segments_of(host.pid)[0]
    # Host files a follower would reach: a dead segment (a reader that
    # opened it would find its owner gone and remove it), and another
    # for the bind mount.
    hostdir = "/tmp/%s-host" % TAG
    os.mkdir(hostdir)
    e2e.planted += [hostdir + "/bait", hostdir + "/bindsrc", hostdir]
    copy(hseg, hostdir + "/bait")
    copy(hseg, hostdir + "/bindsrc")
    before = {p: digest(hostdir + "/" + p) for p in ("bait", "bindsrc")}

    box = nsbox.Box(
        TAG,
        # pid 1 a shell, its first child the instrumented process.
        'MSTAT_NAME=%s-ctr %s fixed < <(exec sleep 600) &\n'
        'echo started\n'
        'wait\n' % (TAG, TARGET))
    try:
        run(box, host, hseg, hostdir, before, off)
    finally:
        box.close()
        host.stop()


def run(box, host, hseg, hostdir, before, off):
    check(box.line() == "started", "the container started")
    # Its /dev/shm, through its pid 1, for planting (the test's own
    # doing: the container could make all of it itself).
    shm = box.shm()
    wait_for(lambda: [n for n in os.listdir(shm) if n.startswith("mstat.")],
             "the container's process's segment")
    legit = [n for n in os.listdir(shm) if n.startswith("mstat.")][0]
    there, start = int(legit.split(".")[1]), int(legit.split(".")[2])
    inner = [p for p in box.pids() if nsbox.nspid(p)[-1] == there][0]
    # In its mount namespace: the host's file bind-mounted over a name,
    # then the host's files hidden from its view.
    subprocess.run(["nsenter", "-t", str(box.init), "-m", "sh", "-c",
                    "touch /dev/shm/mstat.9.9 && "
                    "mount --bind %s/bindsrc /dev/shm/mstat.9.9 && "
                    "mount -t tmpfs -o size=1m hide %s" % (hostdir, hostdir)],
                   check=True)

    def plant(name, how):
        how(shm + "/" + name)
        return name

    hname = os.path.basename(hseg)
    planted = {
        "link": plant("mstat.7.1", lambda p: os.symlink(hostdir + "/bait", p)),
        "fifo": plant("mstat.7.2", os.mkfifo),
        "bind": "mstat.9.9",
        "dir": plant("mstat.7.4", os.mkdir),
        "claims": plant(hname, lambda p: copy(hseg, p)),
        "owner": plant(legit + ".3",
                       lambda p: copy(shm + "/" + legit, p, uid=NOBODY)),
        "uid": plant(legit + ".4", lambda p: copy(
            shm + "/" + legit, p,
            patch=[(off["uid"], (4242).to_bytes(4, "little"))])),
        "nobody": plant("mstat.77.%d" % start, lambda p: copy(
            shm + "/" + legit, p,
            patch=[(off["pid"], (77).to_bytes(4, "little"))])),
    }
    why = {
        "link": "is a symbolic link",
        "fifo": "is not a regular file",
        "bind": "is a mount point: something is mounted over it",
        "dir": "is not a regular file",
        "claims": "claims pid %d, whose /dev/shm is another directory"
                  % host.pid,
        "owner": "is owned by uid %d, but pid %d runs as uid 0"
                 % (NOBODY, inner),
        "uid": "says uid 4242, but pid %d runs as uid 0 there" % inner,
    }
    # The host's reader, in its own namespace and the container's.  A
    # FIFO opened for reading would hang it: the run has a timeout.
    r = subprocess.run([TOP, "-b", "-o", "json", "-n", "3", "-d", "0.2",
                        "--namespaces=%d" % box.init],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(r.returncode == 0, "mstat-top: %r" % r.stderr)
    err = r.stderr.decode().splitlines()
    for k, n in planted.items():
        mine = [l for l in err if " %s in mnt:[" % n in l]
        if k == "nobody":
            check(len(mine) == 1 and mine[0].startswith("mstat-top: kept ")
                  and "its process (pid 77 of pid namespace" in mine[0]
                  and mine[0].endswith("(MSTAT_KILLED_GRACE is 300 s)"),
                  "a dead copy claiming no process: kept for its grace: %r"
                  % mine)
            continue
        check(len(mine) == 1 and mine[0].startswith("mstat-top: skipped ")
              and mine[0].endswith(why[k]), "%s: %r" % (k, mine))
    for tick in ticks(r.stdout.decode()):
        rows = [p for p in tick["processes"] if p["name"].startswith(TAG)]
        rows.sort(key=lambda p: p["name"])
        check([(p["pid"], p["nspid"], p["name"], p["state"]) for p in rows] ==
              [(inner, there, TAG + "-ctr", "running"),
               (host.pid, host.pid, TAG + "-host", "running")],
              "the container's process and the host's, once each: %r" % rows)
        ctr = rows[0]
        check(ctr["container_id"] == box.id, "its container: %r" % ctr)
    # Nothing outside its /dev/shm was touched, nor anything in it.
    for p, d in before.items():
        check(digest(hostdir + "/" + p) == d, "the host's %s unchanged" % p)
    left = set(os.listdir(shm))
    check(left == {legit} | set(planted.values()),
          "in the container's /dev/shm: %r" % sorted(left))
    check(stat.S_ISLNK(os.lstat(shm + "/mstat.7.1").st_mode) and
          stat.S_ISFIFO(os.lstat(shm + "/mstat.7.2").st_mode),
          "the link and the FIFO are there as planted")
    # --gc through the container: the copies of this user whose owner
    # lock is free are dead segments to it, removed there as in its own
    # /dev/shm; nothing else, and nothing outside.  (Whole segments whose
    # owner is gone without exiting: killed, kept for a grace but with
    # --killed-grace=0.)
    r = subprocess.run([TOP, "--gc", "--killed-grace=0",
                        "--namespaces=%d" % box.init],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    dead = {planted["claims"], planted["uid"], planted["nobody"]}
    check(r.returncode == 0 and
          sorted(l.split()[2] for l in r.stderr.decode().splitlines()
                 if "in mnt:[" in l and l.startswith("mstat-top: removed "))
          == sorted(dead),
          "--gc removed the dead copies there: %r" % r.stderr)
    for p, d in before.items():
        check(digest(hostdir + "/" + p) == d, "the host's %s unchanged" % p)
    check(set(os.listdir(shm)) == left - dead, "--gc left the rest alone")


if __name__ == "__main__":
    e2e.test_container = test_container
    sys.exit(e2e.main())
