# SPDX-License-Identifier: MIT
"""mstat-top in a terminal of its own, driven through tmux: the view's
end-to-end tests (tests/top/e2e.py, tests/profile/e2e.py) share it."""
import subprocess
import time


class ScreenTimeout(Exception):
    """The screen never showed what was waited for."""


class Tmux:
    """`cmd` in a w x h terminal of tmux server `sock`; every tmux call
    and every wait gives up after `timeout` seconds."""

    def __init__(self, tmux, sock, cmd, w, h, timeout):
        self.bin, self.sock, self.timeout = tmux, sock, timeout
        self.tmux("new-session", "-d", "-x", str(w), "-y", str(h), "-s", "t",
                  cmd)

    def tmux(self, *args):
        return subprocess.run([self.bin, "-L", self.sock, "-f", "/dev/null"] +
                              list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=self.timeout)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "t").stdout.decode()

    def keys(self, *k):
        self.tmux("send-keys", "-t", "t", *k)

    def wait(self, pred, what):
        """The screen once pred holds on it twice in a row: a capture can
        catch ncurses half way through writing a screen."""
        deadline = time.monotonic() + self.timeout
        while True:
            s = self.screen()
            if pred(s):
                time.sleep(0.05)
                s = self.screen()
                if pred(s):
                    return s
            if time.monotonic() > deadline:
                raise ScreenTimeout("screen never showed %s:\n%s" % (what, s))
            time.sleep(0.1)

    def alive(self):
        return self.tmux("has-session", "-t", "t").returncode == 0

    def kill(self):
        self.tmux("kill-server")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
