# SPDX-License-Identifier: MIT
# walk.py - the walk of one tick, or of one malloc+free: the source files
# its calls go through, in order, and how often the walk comes back to a
# file it had left.
#
# A gdb script (bench/walk.sh runs it): a breakpoint on every function
# defined in a file of the directories WALK_DIRS names (default:
# core,top,shm, plus observer for the layout before core/ and top/),
# recording only from the WALK_NTH-th entry (default 2) of WALK_TICK
# until the return of the first WALK_END (default WALK_TICK itself)
# entered after it.  Run on a -O0 build, so that every function is a
# call of its own: the walk is the code's, not the optimiser's.
# WALK_EXT lists the files' endings (default "c": functions of headers,
# static inline, are their caller's part of the walk; "c,h" counts a
# header's functions as rooms of their own).  Functions forced inline
# (always_inline) are their caller's part in any case.
#
# With WALK_KILL (a pid), that process is killed (SIGKILL) just before
# the walked tick: the walk of a tick that finds its target gone.
# With WALK_PRELOAD (a library), the program runs with it preloaded, and
# the breakpoints are set once the program reaches main, when it is
# loaded.
#
# Writes WALK_OUT: the files, one a line, as the walk enters them (a run
# of calls in one file is one line), then a summary: per file, how many
# times the walk is in it; in all, how many times it comes back to a file
# it had left.
import os
import re
import signal
import time

import gdb

dirs = os.environ.get("WALK_DIRS", "core,top,shm,observer").split(",")
tick_fn = os.environ["WALK_TICK"]
end_fn = os.environ.get("WALK_END", tick_fn)
nth = int(os.environ.get("WALK_NTH", "2"))
exts = tuple("." + e for e in os.environ.get("WALK_EXT", "c").split(","))
preload = os.environ.get("WALK_PRELOAD")
out_path = os.environ["WALK_OUT"]

state = {"ticks": 0, "on": False, "ending": False}
seq = []


def under(path):
    parts = path.split("/")
    return len(parts) >= 2 and parts[-2] in dirs and path.endswith(exts)


class Enter(gdb.Breakpoint):
    def __init__(self, path, fn):
        super().__init__(source=path, function=fn, internal=True)
        self.file = "/".join(path.split("/")[-2:])
        self.fn = fn

    def stop(self):
        if self.fn == tick_fn and not state["on"]:
            state["ticks"] += 1
            if state["ticks"] == nth:
                state["on"] = True
                seq.append((self.file, self.fn))
                return end_fn == tick_fn  # to set its return's breakpoint
            return False
        if state["on"]:
            seq.append((self.file, self.fn))
            if self.fn == end_fn and not state["ending"]:
                state["ending"] = True
                return True  # to set the breakpoint of its return
        return False


class Return(gdb.Breakpoint):
    def stop(self):
        state["on"] = False
        return True


def functions():
    text = gdb.execute("info functions", to_string=True)
    path = None
    for line in text.splitlines():
        m = re.match(r"File (.*):$", line)
        if m:
            path = m.group(1)
            continue
        m = re.match(r"\d+:\s+(.*?)(\w+)\(", line)
        if not path or not m:
            continue
        if under(path):
            yield path, m.group(2)
        elif path.startswith("/usr/include/"):
            # Declared first in a system header (malloc, free): gdb files
            # the definition there; its code says where it lives.
            for sal in gdb.decode_line(m.group(2))[1] or ():
                if sal.symtab and under(sal.symtab.filename):
                    yield sal.symtab.filename, m.group(2)


def break_all():
    seen = set()
    for path, fn in functions():
        if (path, fn) in seen:
            continue
        seen.add((path, fn))
        try:
            Enter(path, fn)
        except gdb.error:
            pass  # optimised away


gdb.execute("set pagination off")
gdb.execute("set breakpoint pending off")
if preload:
    gdb.execute("set environment LD_PRELOAD=%s" % preload)
    gdb.execute("tbreak main")
    gdb.execute("run")
    break_all()
    gdb.execute("continue")
else:
    break_all()
    gdb.execute("run")
if os.environ.get("WALK_KILL"):
    os.kill(int(os.environ["WALK_KILL"]), signal.SIGKILL)
    time.sleep(0.5)  # the kernel drops its lock
Return("*%#x" % gdb.newest_frame().older().pc(), internal=True)
gdb.execute("continue")

runs = []
for f, fn in seq:
    if not runs or runs[-1][0] != f:
        runs.append([f, fn])
visits = {}
for f, _ in runs:
    visits[f] = visits.get(f, 0) + 1
with open(out_path, "w") as o:
    for f, fn in runs:
        o.write("%s %s\n" % (f, fn))
    o.write("--\n")
    for f in sorted(visits, key=lambda k: (-visits[k], k)):
        o.write("%4d %s\n" % (visits[f], f))
    o.write("calls %d, files entered %d, returns to a file left %d\n"
            % (len(seq), len(runs), len(runs) - len(visits)))
gdb.execute("kill")
