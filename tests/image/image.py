#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The image deploy/kubernetes/*.yaml name, built from deploy/Containerfile
and used as the manifests use it.

    image.py

A Debian 12 base image is made here, from the Debian archive through
this machine's apt sources, with mmdebstrap (kept in WORKDIR for the
next run); the tree `meson install` makes of this build goes into the
build context as image-root/, and buildah builds deploy/Containerfile on
that base, as `podman build` would (buildah is the code podman builds
with; storage of this test's own, never the machine's).  Then:

- the image runs its entrypoint as nobody, and holds the files the
  manifests name: libmstatshm.so.0 and libunwind.so.8 where
  pod-shared-shm.yaml's init container copies them from;
- those two, copied out as that init container copies them, preload a
  program on the host (heapsites, as nobody): libunwind is loaded from
  beside the library, not from the host, and the program samples;
- the image's exporter, run in a container of it sharing the host's
  /dev/shm, as the same user, serves the program's live bytes and its
  heap profile, the leak in it.

Skipped (77), saying why, unless run as root with buildah and mmdebstrap
(bash scripts/deps.sh buildah netavark mmdebstrap installs them).

Environment (set by meson): MESON_BUILD_ROOT, MESON_SOURCE_ROOT,
WORKDIR (a directory of the build tree), HEAPSITES
(tests/profile/heapsites.c), PPROFPROTO (tests/exporter).
"""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SRC = os.environ["MESON_SOURCE_ROOT"]
BUILD = os.environ["MESON_BUILD_ROOT"]
WORK = os.environ["WORKDIR"]
HEAPSITES = os.environ["HEAPSITES"]
sys.path.insert(0, os.path.join(SRC, "tests", "exporter"))
import pprofproto  # noqa: E402

NOBODY = 65534
TAG = "img%d" % os.getpid()
IMAGE = "localhost/mstat-exporter-test"
BASE = "localhost/mstat-image-base"
TIMEOUT = 600  # a build on a slow mirror, not a hang
# The runtime's: what the base needs to make a Debian 12 system from.
SOURCES = ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def run(*cmd, **kw):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TIMEOUT, text=True,
                       **kw)
    if r.returncode != 0:
        fail("%s: exit %d:\n%s" % (" ".join(cmd), r.returncode, r.stdout))
    return r.stdout


STORAGE = ["--root", os.path.join(WORK, "storage"), "--runroot",
           os.path.join(WORK, "run"), "--storage-driver", "vfs"]


def buildah(*args):
    return run("buildah", *STORAGE, *args)


def base_image():
    """A Debian 12 base image in this test's storage, made once."""
    if subprocess.run(["buildah", *STORAGE, "inspect", BASE],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      timeout=TIMEOUT).returncode == 0:
        return
    tar = os.path.join(WORK, "base-bookworm.tar")
    if not os.path.exists(tar):
        sources = next((f for f in SOURCES if os.path.exists(f) and
                        os.path.getsize(f)), None)
        t0 = time.monotonic()
        with open(sources or os.devnull) as stdin:
            run("mmdebstrap", "--variant=minbase", "--mode=root", "bookworm",
                tar + ".new", *(["-"] if sources else []), stdin=stdin)
        os.rename(tar + ".new", tar)
        print("base made with mmdebstrap from %s in %.0f s" % (
            sources or "deb.debian.org", time.monotonic() - t0))
    c = buildah("from", "scratch").strip()
    buildah("add", c, tar, "/")
    buildah("commit", "-q", c, BASE)
    buildah("rm", c)


def init_copies():
    """What pod-shared-shm.yaml's init container copies: the files of its
    cp command."""
    text = open(os.path.join(SRC, "deploy", "kubernetes",
                             "pod-shared-shm.yaml")).read()
    init = text.split("initContainers:", 1)[1].split("containers:", 1)[0]
    cmd = re.search(r"command:\n((?:\s+- .*\n)+)", init).group(1)
    words = [w.strip()[2:] for w in cmd.splitlines()]
    if words[0] != "cp" or words[-1] != "/opt/mstat/":
        fail("the init container's command: %r" % words)
    return words[1:-1]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_for(cond, what, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            fail("timed out waiting for " + what)
        time.sleep(0.1)


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def main():
    if os.geteuid() != 0:
        skip("not root: buildah's storage and mmdebstrap's chroot are root's")
    if not shutil.which("buildah"):
        skip("no buildah (podman builds with it): bash scripts/deps.sh "
             "buildah netavark mmdebstrap")
    if not shutil.which("mmdebstrap"):
        skip("no mmdebstrap to make a Debian 12 base image with: bash "
             "scripts/deps.sh buildah netavark mmdebstrap")
    os.makedirs(WORK, exist_ok=True)
    base_image()

    ctx = tempfile.mkdtemp(prefix="mstat-image.", dir=WORK)
    ctr = None
    exporter = None
    program = None
    try:
        run("meson", "install", "-C", BUILD, "--no-rebuild", "--quiet",
            "--destdir", os.path.join(ctx, "image-root"))
        t0 = time.monotonic()
        buildah("bud", "--isolation", "chroot", "--pull=never", "--build-arg",
                "BASE=" + BASE, "-f", os.path.join(SRC, "deploy",
                                                    "Containerfile"),
                "-t", IMAGE, ctx)
        print("deploy/Containerfile built in %.0f s" % (time.monotonic() - t0))
        cfg = buildah("inspect", "--format",
                      "{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}}",
                      IMAGE).strip()
        if cfg != "65534 [/usr/local/bin/mstat-exporter]":
            fail("the image's user and entrypoint: %r" % cfg)
        ctr = buildah("from", "--pull=never", "--name", TAG, IMAGE).strip()
        root = buildah("mount", ctr).strip()

        # The init container's copy, and a program it preloads.
        lib = tempfile.mkdtemp(prefix="mstat-lib.", dir=WORK)
        os.chmod(lib, 0o755)
        copies = init_copies()
        for f in copies:
            if not os.path.exists(root + f):
                fail("the image has no %s, which the init container copies"
                     % f)
            shutil.copy(root + f, lib)
        names = sorted(os.path.basename(f) for f in copies)
        if names != ["libmstatshm.so.0", "libunwind.so.8"]:
            fail("the init container copies %r" % names)
        program = subprocess.Popen(
            [HEAPSITES], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, preexec_fn=as_nobody,
            env=dict(os.environ, LD_PRELOAD=os.path.join(
                lib, "libmstatshm.so.0"), MSTAT_EAGER="1",
                MSTAT_NAME=TAG, MSTAT_SAMPLE_BYTES="65536"))
        ready = program.stdout.readline().split()
        if ready[:1] != ["ready"]:
            fail("heapsites said %r" % ready)
        maps = open("/proc/%d/maps" % program.pid).read()
        unwind = sorted({ln.split()[-1] for ln in maps.splitlines()
                         if "libunwind.so" in ln})
        if unwind != [os.path.join(lib, "libunwind.so.8")]:
            fail("libunwind loaded from %r, not from beside the library"
                 % unwind)

        # The image's exporter, as the manifests run it, on the host's
        # /dev/shm, as the program's user.
        port = free_port()
        err = open(os.path.join(ctx, "exporter.err"), "w")
        exporter = subprocess.Popen(
            ["buildah", *STORAGE, "run", "--isolation", "chroot", "-v", "/dev/shm:/dev/shm", ctr, "--",
             "/usr/local/bin/mstat-exporter",
             "--web.listen-address=127.0.0.1:%d" % port],
            stdout=err, stderr=err, start_new_session=True)

        def scraped():
            if exporter.poll() is not None:
                fail("the exporter exited %d: %s" % (
                    exporter.returncode,
                    open(os.path.join(ctx, "exporter.err")).read()))
            try:
                status, body = get("http://127.0.0.1:%d/metrics" % port)
            except OSError:
                return None
            m = re.search(r'^mstat_live_bytes\{pid="%d",name="%s"[^}]*\} '
                          r'(\S+)$' % (program.pid, TAG), body.decode(), re.M)
            return m and float(m.group(1))
        live = wait_for(scraped, "the program in a scrape")
        if live < 64 << 20:
            fail("live bytes %d: heapsites holds 64 MiB" % live)
        status, body = get("http://127.0.0.1:%d/debug/pprof/heap?pid=%d" %
                           (port, program.pid))
        if status != 200:
            fail("the heap profile: %d %r" % (status, body[:200]))
        p = pprofproto.Profile(body)
        k = [t for t, _ in p.sample_types].index("inuse_space")
        held = sum(s.values[k] for s in p.samples)
        print("in the image: the exporter serves pid %d, %d bytes live, a "
              "profile of %d samples holding %d bytes; libunwind from %s" %
              (program.pid, live, len(p.samples), held, unwind[0]))
        if not p.samples or not 32 << 20 < held < 128 << 20:
            fail("the profile holds %d bytes in %d samples: the leak is 64 "
                 "MiB" % (held, len(p.samples)))
    finally:
        if program:
            program.stdin.close()
            program.wait(timeout=60)
        if exporter:
            os.killpg(exporter.pid, signal.SIGTERM)
            exporter.wait(timeout=60)
        if ctr:
            buildah("umount", ctr)
            buildah("rm", ctr)
        shutil.rmtree(ctx, ignore_errors=True)
        for d in glob.glob(os.path.join(WORK, "mstat-lib.*")):
            shutil.rmtree(d, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
