#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/systemd checked offline, by systemd's own tools.

    systemd.py ROOT      (MSTAT_EXPORTER: the built mstat-exporter)

The unit alone (per user) and with the drop-in host-wide.conf:
  1. `systemd-analyze verify` says nothing of it: there a misspelt key or
     a bad value is a warning only, here any word fails (ExecStart points
     at the built exporter, which verify wants to find);
  2. `systemd-analyze security --offline`: the per-user unit keeps no
     capability, ambient or bounding, and does not run as root; the
     host-wide one keeps CAP_SYS_PTRACE and the CAP_DAC_* group and no
     other, and names exactly CAP_SYS_PTRACE and CAP_DAC_OVERRIDE, in
     its bounding and its ambient sets (docs/deploy.md says why);
  3. its system call filter allows every call the exporter made under
     strace (serving scrapes of a counting process, the health endpoint
     and the landing page), membarrier among them, and openat2;
  4. /dev/shm stays the host's and writable, and systemd does not remove
     the user's segments (no PrivateDevices=, no RemoveIPC=).
Then each broken variant below, one change of one file, must fail with
the words it names.

Skips (77) where systemd-analyze is missing: scripts/deps.sh does not
install Debian's systemd package, which ships services.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
EXPORTER = os.environ["MSTAT_EXPORTER"]
UNIT = os.path.join(ROOT, "deploy", "systemd", "mstat-exporter.service")
DROPIN = os.path.join(ROOT, "deploy", "systemd", "host-wide.conf")

# What mstat-exporter called under strace -f, serving scrapes of a
# counting process, /-/healthy and /; and openat2, with which a reader
# resolves a path inside a container's root.
CALLED = """accept4 access arch_prctl bind brk clone3 close eventfd2 execve
exit exit_group fcntl flock futex getdents64 geteuid getrandom getsockname
getsockopt listen lseek madvise membarrier mmap mprotect munmap newfstatat
openat poll prctl pread64 prlimit64 read readlink recvfrom rseq
rt_sigaction rt_sigprocmask rt_sigtimedwait sendmsg set_robust_list
set_tid_address setsockopt shutdown socket write openat2""".split()

HOST_WIDE_CAPS = {"CAP_SYS_PTRACE", "CAP_DAC_OVERRIDE"}

# Broken variants: (what, file, text replaced, by, what the refusal says).
BROKEN = [
    ("a misspelt key", "unit", "NoNewPrivileges=yes", "NoNewPrivilegs=yes",
     "Unknown key 'NoNewPrivilegs'"),
    ("a bad value", "unit", "ProtectHome=yes", "ProtectHome=maybe",
     "ignoring: maybe"),
    ("a capability in the per-user unit", "unit", "CapabilityBoundingSet=\n",
     "CapabilityBoundingSet=CAP_DAC_OVERRIDE\n",
     "per user: keeps capabilities"),
    ("an ambient capability in the per-user unit", "unit",
     "CapabilityBoundingSet=\n",
     "CapabilityBoundingSet=\nAmbientCapabilities=CAP_SYS_PTRACE\n",
     "per user: keeps capabilities"),
    ("root in the per-user unit", "unit", "User=svc", "User=root",
     "per user: runs as root"),
    ("one capability more, host-wide", "dropin",
     "CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_OVERRIDE",
     "CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_OVERRIDE CAP_SYS_ADMIN",
     "host-wide: keeps"),
    ("DAC_READ_SEARCH host-wide, which opens for reading only", "dropin",
     "CAP_SYS_PTRACE CAP_DAC_OVERRIDE\nAmbientCapabilities=CAP_SYS_PTRACE "
     "CAP_DAC_OVERRIDE",
     "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH\nAmbientCapabilities=CAP_SYS_PTRACE "
     "CAP_DAC_READ_SEARCH",
     "host-wide: bounding set"),
    ("membarrier filtered out", "unit", "SystemCallFilter=~@privileged "
     "@resources", "SystemCallFilter=~@privileged @resources membarrier",
     "refuses membarrier"),
    ("a private /dev", "unit", "PrivateTmp=yes", "PrivateTmp=yes\n"
     "PrivateDevices=yes", "PrivateDevices="),
    ("systemd removing the user's segments", "unit", "PrivateTmp=yes",
     "PrivateTmp=yes\nRemoveIPC=yes", "RemoveIPC="),
]


class Failure(Exception):
    pass


def run(*args):
    r = subprocess.run(["systemd-analyze"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120, env=dict(os.environ, SYSTEMD_COLORS="0",
                                             SYSTEMD_PAGER=""))
    return r.returncode, r.stdout.decode()


def expand(group, seen=None):
    """The system calls of a group of systemd-analyze syscall-filter."""
    rc, out = run("syscall-filter", group)
    if rc != 0:
        raise Failure("syscall-filter %s: %s" % (group, out))
    calls = set()
    for line in out.splitlines()[1:]:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        calls |= expand(word) if word.startswith("@") else {word}
    return calls


def allowed_calls(text):
    """What a unit's SystemCallFilter= lines allow: the first that is no
    deny list starts an allow list, ~ lines take from it."""
    allowed = None
    for line in re.findall(r"^SystemCallFilter=(.*)$", text, re.M):
        deny = line.startswith("~")
        names = set()
        for word in line.lstrip("~").split():
            names |= expand(word) if word.startswith("@") else {word}
        if allowed is None:
            if deny:
                raise Failure("the filter starts with a deny list")
            allowed = names
        elif deny:
            allowed -= names
        else:
            allowed |= names
    return allowed


def check_variant(d, text, host_wide):
    """Every check of the unit in directory d (text: the unit and its
    drop-in, concatenated)."""
    where = "host-wide" if host_wide else "per user"
    unit = os.path.join(d, "mstat-exporter.service")
    rc, out = run("verify", "--man=no", unit)
    if rc != 0 or out:
        raise Failure("%s: systemd-analyze verify said: %s" %
                      (where, out.strip()))
    rc, out = run("security", "--offline=true", "--json=short", "--no-pager",
                  unit)
    if rc != 0:
        raise Failure("%s: systemd-analyze security: %s" % (where, out))
    report = {e["name"]: e["set"] for e in json.loads(out)}
    kept = {n for n, ok in report.items()
            if n.startswith("CapabilityBoundingSet=") and not ok}
    if not host_wide:
        if kept or not report.get("AmbientCapabilities="):
            raise Failure("per user: keeps capabilities: bounding %s, "
                          "ambient %s" % (sorted(kept), "none" if report.get(
                              "AmbientCapabilities=") else "some"))
        if not report.get("User=/DynamicUser="):
            raise Failure("per user: runs as root")
    else:
        want = {"CapabilityBoundingSet=~CAP_(DAC_*|FOWNER|IPC_OWNER)",
                "CapabilityBoundingSet=~CAP_SYS_PTRACE"}
        if kept != want:
            raise Failure("host-wide: keeps %s, not %s" % (sorted(kept),
                                                            sorted(want)))
        for key in ("CapabilityBoundingSet", "AmbientCapabilities"):
            got = [set(v.split()) for v in
                   re.findall(r"^%s=(.*)$" % key, text, re.M) if v]
            if got != [HOST_WIDE_CAPS]:
                raise Failure("host-wide: bounding set and ambient set: %s=%s, "
                              "not %s" % (key, got, sorted(HOST_WIDE_CAPS)))
    allowed = allowed_calls(text)
    if allowed is not None:
        refused = [c for c in CALLED if c not in allowed]
        if refused:
            raise Failure("%s: the system call filter refuses %s" %
                          (where, " ".join(refused)))
    for key in ("PrivateDevices=", "RemoveIPC="):
        if re.search(r"^%s(yes|true|on|1)\s*$" % key, text, re.M):
            raise Failure("%s: %s: the segments in /dev/shm must stay "
                          "the host's" % (where, key))
    if not re.search(r"^ReadWritePaths=(.*\s)?/dev/shm(\s|$)", text, re.M):
        raise Failure("%s: /dev/shm not in ReadWritePaths=" % where)


def check(unit_text, dropin_text):
    """Both variants; raises Failure."""
    d = tempfile.mkdtemp(prefix="mstat-systemd-")
    try:
        unit_text = unit_text.replace("/usr/local/bin/mstat-exporter",
                                      EXPORTER)
        with open(os.path.join(d, "mstat-exporter.service"), "w") as f:
            f.write(unit_text)
        check_variant(d, unit_text, False)
        os.mkdir(os.path.join(d, "mstat-exporter.service.d"))
        with open(os.path.join(d, "mstat-exporter.service.d",
                               "host-wide.conf"), "w") as f:
            f.write(dropin_text)
        check_variant(d, unit_text + dropin_text, True)
    finally:
        shutil.rmtree(d)


def main():
    if not shutil.which("systemd-analyze"):
        print("skipped: no systemd-analyze (Debian's systemd package, which "
              "ships services, is not installed by scripts/deps.sh)")
        return 77
    if "--offline" not in run("--help")[1]:
        print("skipped: this systemd-analyze has no --offline (systemd 250+)")
        return 77
    with open(UNIT) as f:
        unit = f.read()
    with open(DROPIN) as f:
        dropin = f.read()
    bad = 0
    try:
        check(unit, dropin)
        print("ok deploy/systemd: the unit, and with host-wide.conf")
    except Failure as e:
        print("FAIL deploy/systemd: %s" % e)
        bad += 1
    for what, which, old, new, says in BROKEN:
        u, dr = unit, dropin
        text = u if which == "unit" else dr
        if old not in text:
            print("FAIL broken variant %r: %r is not in the %s" %
                  (what, old, which))
            bad += 1
            continue
        text = text.replace(old, new, 1)
        u, dr = (text, dr) if which == "unit" else (u, text)
        try:
            check(u, dr)
            print("FAIL broken variant %r passed" % what)
            bad += 1
        except Failure as e:
            if says in str(e):
                print("ok broken variant %r: %s" % (what, e))
            else:
                print("FAIL broken variant %r: %s, not %r" % (what, e, says))
                bad += 1
    print("%d failed" % bad if bad else "all passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
