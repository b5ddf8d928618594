# SPDX-License-Identifier: MIT
"""What the hostile tests compare files by: a segment header's field
offsets, as the library builds them (header_offsets.c), and a file's
identity and bytes."""
import hashlib
import os
import subprocess


def offsets():
    """{field: byte offset} of the segment header."""
    out = subprocess.run([os.environ["HEADER_OFFSETS"]],
                         stdout=subprocess.PIPE, check=True).stdout.split()
    return {out[i].decode(): int(out[i + 1]) for i in range(0, len(out), 2)}


def digest(path):
    """What a file is: its inode, mode, owner, size and every byte."""
    st = os.lstat(path)
    with open(path, "rb") as f:
        return (st.st_ino, st.st_mode, st.st_uid, st.st_size,
                hashlib.sha256(f.read()).digest())
