# SPDX-License-Identifier: MIT
"""What docs/mstat-top-json.md documents: the tests that compare mstat-top's
JSON with its documentation read the field names from here."""
import re


def documented_fields(doc):
    """Field names from the tables of docs/mstat-top-json.md, by section."""
    fields = {}
    section = None
    for line in open(doc):
        m = re.match(r"^## (\S+)", line)
        if m:
            section = m.group(1)
        m = re.match(r"^\| `([a-z_]+)` \|", line)
        if m and section:
            fields.setdefault(section, []).append(m.group(1))
    return fields
