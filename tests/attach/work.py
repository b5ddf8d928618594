# SPDX-License-Identifier: MIT
"""A python3 workload for mstat-attach's tests (e2e.py programs): work,
"ready", a line on stdin, more work, and what it computed; its output is
the same whether it was attached or not.  Then, attached, blocks of a size
nothing else has, held ("held N"), and freed at the next line ("freed")."""
import hashlib
import json
import re
import sys


def work(seed, n):
    d = {}
    for i in range(n):
        k = "k%d" % ((i * 7919 + seed) % (n // 2))
        d.setdefault(k, []).append(str(i) * (i % 13))
    text = json.dumps(sorted((k, len(v), "".join(v)[:40]) for k, v in d.items()))
    words = re.findall(r"[0-9]{3,}", text)
    return hashlib.sha256((text + "".join(words)).encode()).hexdigest()


first = work(1, 5000)
print("ready", flush=True)
sys.stdin.readline()
print(first, work(2, 10000), flush=True)
held = [bytearray(3333333) for _ in range(7)]
print("held %d" % len(held), flush=True)
sys.stdin.readline()
del held
print("freed", flush=True)
sys.stdin.readline()
