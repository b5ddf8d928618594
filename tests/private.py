"""A test script run again in a mount and pid namespace of its own, over a
/dev/shm of its own, so that what it finds there is exactly what its own
processes left (as root; skipped otherwise).

    import private
    rc = private.again("mstat-execs")
    if rc is not None:
        return rc      # outside: the run inside ended with rc
    ...                # inside
"""
import os
import subprocess
import sys

_INSIDE = "MSTAT_TEST_PRIVATE"


def again(name):
    """Outside, runs the calling script again inside and returns its exit
    status (77, skipped, where no namespace can be made); inside, mounts a
    tmpfs named `name` on /dev/shm and returns None."""
    if os.environ.get(_INSIDE):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777,size=256m",
                        name, "/dev/shm"], check=True)
        return None
    unshare = ["unshare", "-m", "-p", "--fork", "--mount-proc"]
    if subprocess.run(unshare + ["true"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("SKIP: needs root for a private /dev/shm and pid namespace")
        return 77
    return subprocess.run(unshare + ["--propagation", "private",
                                     sys.executable] + sys.argv,
                          env=dict(os.environ, **{_INSIDE: "1"})).returncode
