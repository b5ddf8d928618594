# SPDX-License-Identifier: MIT
"""Containers made of the kernel objects a runtime makes, with unshare(1):
a mount, pid, IPC and UTS namespace of their own, a tmpfs of their own
on /dev/shm, and a cgroup of their own, named as podman's cgroupfs
manager names a container's (<parent>/libpod-<64 hex>), so that where a
process runs reads as it would under podman.  For the tests that need
a container where no runtime can start one, and for the hostile suite,
whose containers plant what a hostile one would.

As root only (unshare --mount needs CAP_SYS_ADMIN; a cgroup, writing
cgroupfs)."""
import os
import secrets
import signal
import subprocess
import time


def usable():
    """Why boxes cannot be made here, or None."""
    if os.geteuid() != 0:
        return "not root"
    r = subprocess.run(["unshare", "--mount", "--pid", "--ipc", "--uts",
                        "--fork", "--mount-proc", "--propagation", "private",
                        "true"], stderr=subprocess.PIPE)
    if r.returncode != 0:
        return "unshare: %s" % r.stderr.decode().strip()
    return None


def cgroup_parent():
    """Where a box's cgroup is made: cgroup v2's root, or v1's memory
    controller (as on hybrid machines)."""
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "/sys/fs/cgroup"
    return "/sys/fs/cgroup/memory"


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def nspid(pid):
    """pid's pids, from ours to its own namespace's (NSpid)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return []


class Box:
    """A container: `script` (bash) runs as its pid 1, after /dev/shm got
    a tmpfs of its own and `setup` (bash, run first) ran.  The script's
    stdout is read line by line with line()."""

    def __init__(self, tag, script, setup="", env=None):
        self.id = secrets.token_hex(32)
        self.cgroup = os.path.join(cgroup_parent(), tag, "libpod-" + self.id)
        os.makedirs(self.cgroup)
        body = ("set -e\n"
                "echo $$ > %s/cgroup.procs\n"
                "%s\n"
                "mount -t tmpfs -o size=64m,mode=1777 shm /dev/shm\n"
                "%s\n" % (self.cgroup, setup, script))
        self.p = subprocess.Popen(
            ["unshare", "--mount", "--pid", "--ipc", "--uts", "--fork",
             "--mount-proc", "--propagation", "private", "--kill-child",
             "bash", "-c", body],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=dict(os.environ, **(env or {})))
        # A hang, not a slow machine: a busy one takes seconds to start
        # a shell and mount a tmpfs.
        deadline = time.monotonic() + 120
        self.init = None
        while not self.init and time.monotonic() < deadline:
            kids = children(self.p.pid)
            self.init = kids[0] if kids else None
            time.sleep(0.01)
        if not self.init:
            raise RuntimeError("the box did not start")
        # Started once its /dev/shm is its own: until its tmpfs is
        # mounted, the host's shows through.
        ours = os.stat("/dev/shm").st_dev
        while time.monotonic() < deadline:
            try:
                if os.stat(self.shm()).st_dev != ours:
                    return
            except OSError:
                pass  # not there yet
            time.sleep(0.01)
        raise RuntimeError("the box's /dev/shm was not mounted")

    def line(self):
        return self.p.stdout.readline().decode().rstrip("\n")

    def shm(self):
        """Its /dev/shm, as the host sees it (for the test only)."""
        return "/proc/%d/root/dev/shm" % self.init

    def pids(self):
        """Every process of it, host pids, pid 1 first."""
        out, todo = [], [self.init]
        while todo:
            p = todo.pop(0)
            out.append(p)
            todo += children(p)
        return out

    def close(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)  # --kill-child: pid 1 too
            self.p.wait()
        deadline = time.monotonic() + 10
        while os.path.exists(self.cgroup) and time.monotonic() < deadline:
            try:
                os.rmdir(self.cgroup)
            except OSError:
                time.sleep(0.05)  # its processes are still dying
        try:
            os.rmdir(os.path.dirname(self.cgroup))
        except OSError:
            pass  # another box's too
