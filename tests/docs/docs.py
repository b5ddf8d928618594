#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The lists the docs keep by hand, against the code that keeps them.

    docs.py CHECK SOURCE_ROOT BUILD_ROOT

Each CHECK is a test of the suite `docs`; a failure says what the doc
lacks, or has too many, and where to add or remove it:

  options   every installed program has a man page (docs/NAME.1) whose
            OPTIONS has an entry for each option its --help lists (made
            from the program's list, core/cli.h) and no other: the same
            letter, a value or none, the range and the default --help says
  columns   the table's columns (core/fields.h, COL) in README.md's list
            and in docs/mstat-top.1 (THE SCREEN), in their order, and the
            order they give way on a narrow screen, in both
  sort      the names -s takes: mstat-top --help (made from the columns)
            and docs/mstat-top.1's -s entry
  metrics   the metric families (core/exposition.c) in
            docs/mstat-top-openmetrics.md's table (name, type, unit, in
            order), README.md's list and docs/mstat-exporter.1's METRICS;
            the segment format's version where the docs name it
  variables every MSTAT_* variable of lib/config.h has a row in one of
            README.md's tables of variables
  suites    the test suites of tests/ in README.md: all of them in the
            layout's row for tests/, the default ones in "Checking"
  summary   docs/mstat-run.1's example summary is what mstat-run writes:
            valid JSON with the same fields in the same order
  sections  every section one file cites in another (a doc's name, a
            comma and the section's name in double quotes; or a man
            page's name and section, mstat-exporter(1), PORT) is there

The code's lists come from the programs' --help and from lists.c (built
as mstat-test-docs-lists), which prints them from the code itself."""
import json
import os
import re
import subprocess
import sys

CHECK, SRC, BUILD = sys.argv[1], sys.argv[2], sys.argv[3]
problems = []


def problem(text):
    problems.append(text)


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def lists():
    out = subprocess.run([os.path.join(BUILD, "tests", "docs",
                                       "mstat-test-docs-lists")],
                         stdout=subprocess.PIPE, check=True, timeout=60)
    return json.loads(out.stdout)


def flat(text):
    """Whitespace, line breaks included, as one space."""
    return re.sub(r"\s+", " ", text).strip()


def words_list(text):
    """"A, B, C and D" (or "... or D") -> [A, B, C, D]."""
    text = re.sub(r",? (?:and|or) ", ", ", text.strip())
    return [w.strip() for w in text.split(",") if w.strip()]


# ---- man pages ----

def roff_text(s):
    """A line of roff as the reader sees its words."""
    s = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\c$", "", s)
    s = s.replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "\\")
    s = s.replace("\\[u2026]", "...").replace("\\ ", " ")
    return s


def roff_line(line):
    """A text line or a font macro's line (.B, .BR, .BI, ...) as words."""
    m = re.match(r"^\.(B|I|BR|RB|BI|IB|IR|RI|SM)\s+(.*)$", line)
    if not m:
        return "" if line.startswith((".", "'")) else roff_text(line)
    args = [a[1:-1] if a.startswith('"') else a
            for a in re.findall(r'"[^"]*"|\S+', m.group(2))]
    joined = "".join(args) if len(m.group(1)) == 2 else " ".join(args)
    return roff_text(joined)


def man_sections(rel):
    """{section name: its lines} of a man page."""
    sections, name = {}, None
    for line in read(rel).split("\n"):
        m = re.match(r'^\.SH\s+"?([^"]*)"?\s*$', line)
        if m:
            name = m.group(1)
            sections[name] = []
        elif name:
            sections[name].append(line)
    return sections


def man_entries(lines):
    """The .TP entries of a section: [(tag, text)], each as words."""
    entries, i = [], 0
    while i < len(lines):
        if lines[i].startswith(".TP") and i + 1 < len(lines):
            tag = roff_line(lines[i + 1])
            text = []
            i += 2
            while i < len(lines) and not lines[i].startswith((".TP", ".SH",
                                                              ".SS")):
                text.append(roff_line(lines[i]))
                i += 1
            entries.append((tag, flat(" ".join(text))))
        else:
            i += 1
    return entries


# ---- --help ----

def help_options(program):
    """{long name: {letter, value, negatable, text}} as --help lists them
    (core/cli.c's layout)."""
    out = subprocess.run([program, "--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=60)
    options, cur = {}, None
    for line in out.stdout.decode().split("\n"):
        m = re.match(r"^  (?:-(\w), |    |)--(\[no-\])?([\w.-]+)(?:=(\S+))?"
                     r"(?:\s+(.*))?$", line)
        if m:
            cur = {"letter": m.group(1), "negatable": bool(m.group(2)),
                   "value": m.group(4), "text": m.group(5) or ""}
            options[m.group(3)] = cur
        elif cur and re.match(r"^\s{6,}\S", line):
            cur["text"] += " " + line.strip()
        else:
            cur = None
    return options


def help_range(text):
    m = re.search(r"\((\S+ (?:to \S+?|or more))[;)]", text)
    return m.group(1) if m else None


def help_default(text):
    """A default that is a value ("default 60"), not words ("default:
    its MSTAT_KILLED_GRACE, or 300")."""
    m = re.search(r"[(;] ?default ([^:)\s][^)]*)\)", text)
    return m.group(1) if m else None


def programs():
    """The installed programs: {name: path in the build}."""
    with open(os.path.join(BUILD, "meson-info", "intro-installed.json")) as f:
        installed = json.load(f)
    return {os.path.basename(dst): src for src, dst in installed.items()
            if os.path.basename(os.path.dirname(dst)) == "bin"}


def check_options():
    progs = programs()
    if not progs:
        problem("meson installs no program: is %s a build directory?" % BUILD)
    for name, path in sorted(progs.items()):
        page = "docs/%s.1" % name
        if not os.path.exists(os.path.join(SRC, page)):
            problem("%s is installed, but %s does not exist: write its man "
                    "page (OPTIONS, EXIT STATUS, ...) and install_man() it"
                    % (name, page))
            continue
        opts = help_options(path)
        if not opts:
            problem("%s --help lists no option as core/cli.c writes them: "
                    "read its options with a list of core/cli.h" % name)
            continue
        entries = man_entries(man_sections(page).get("OPTIONS", []))
        documented = {}
        for tag, text in entries:
            for long in re.findall(r"--(?:\[no-\])?([\w][\w.-]*)", tag):
                letter = re.search(r"(?:^|[\s,])-(\w)(?:[\s,=]|$)", tag)
                documented[long] = {"tag": tag, "text": text,
                                    "letter": letter.group(1) if letter
                                    else None,
                                    "value": "=" in tag or " " in
                                    tag.split("--" + long, 1)[1].strip()[:1]}
        for long, o in opts.items():
            d = documented.get(long)
            where = "%s, OPTIONS" % page
            if not d:
                problem("%s has no entry for --%s, which %s --help lists "
                        "(%r): add a .TP for it" % (where, long, name,
                                                    o["text"]))
                continue
            if d["letter"] != o["letter"]:
                problem("%s: --%s is %s in %s --help, %s in the man page's "
                        "tag %r" % (where, long, "-" + o["letter"] if
                                    o["letter"] else "without a letter",
                                    name, "-" + d["letter"] if d["letter"]
                                    else "without a letter", d["tag"]))
            if bool(o["value"]) != bool(d["value"]):
                problem("%s: --%s %s a value (%s --help), but its tag %r "
                        "says otherwise" % (where, long, "takes" if o["value"]
                                            else "takes no", name, d["tag"]))
            if o["negatable"] and "--no-" + long not in d["tag"] + d["text"] \
                    and "[no-]" not in d["tag"]:
                problem("%s: --%s has a --no-%s (%s --help), which its entry "
                        "does not say" % (where, long, long, name))
            r = help_range(o["text"])
            if r and r not in d["text"]:
                problem("%s: --%s takes %s (%s --help), which its entry does "
                        "not say: write %r in it" % (where, long, r, name, r))
            dflt = help_default(o["text"])
            if dflt and not any(f in d["text"] for f in (
                    "default %s" % dflt, "default: %s" % dflt,
                    "%s (default" % dflt)):
                problem("%s: --%s's default is %s (%s --help), which its "
                        "entry does not say: write 'default %s' in it"
                        % (where, long, dflt, name, dflt))
        for long in documented:
            if long not in opts:
                problem("%s, OPTIONS documents --%s, which %s --help does "
                        "not list: remove the entry, or add the option to "
                        "the program's list" % (page, long, name))


# ---- columns ----

def code_columns():
    return lists()["columns"]


def drop_sentence(text, doc):
    """(dropped in order, kept) from "X goes first, then A, ... and Z; the
    sorted column stays, and so do P, N and S"."""
    m = re.search(r"(\S+) goes first, then (.*?); the sorted column stays, "
                  r"and so do ([^.;]*?)(?:,? as |[.;])", flat(text))
    if not m:
        problem("%s: no sentence says the order columns give way on a "
                "narrow screen (\"On a screen too narrow for all of them, X "
                "goes first, then ...; the sorted column stays, and so do "
                "...\"): add it" % doc)
        return None
    return [m.group(1)] + words_list(m.group(2)), words_list(m.group(3))


def check_drop(cols, text, doc):
    got = drop_sentence(text, doc)
    if got is None:
        return
    want = [c["title"] for c in sorted((c for c in cols if c["drop"]),
                                       key=lambda c: -c["drop"])]
    kept = [c["title"] for c in cols if not c["drop"]]
    if got[0] != want:
        problem("%s: the columns give way in the order %s; core/fields.h "
                "(COL, drop) makes it %s: write \"%s goes first, then %s\""
                % (doc, ", ".join(got[0]), ", ".join(want), want[0],
                   ", ".join(want[1:-1]) + " and " + want[-1]))
    if got[1] != kept:
        problem("%s: the columns that stay are said to be %s; core/fields.h "
                "keeps %s (drop 0)" % (doc, ", ".join(got[1]),
                                       ", ".join(kept)))


def missing_after(want, got):
    """What `got` lacks of `want`, each with the column it follows."""
    out = []
    for i, w in enumerate(want):
        if w not in got:
            out.append("%s (after %s)" % (w, want[i - 1]) if i else
                       "%s (first)" % w)
    return out


def check_columns():
    cols = code_columns()
    titles = [c["title"] for c in cols]
    readme = read("README.md")
    m = re.search(r"a table of (.*?), each column defined once", flat(readme))
    if not m:
        problem("README.md: no sentence lists the columns (\"a table of "
                "PID, NAME, ..., each column defined once\"): add it")
    elif words_list(m.group(1)) != titles:
        problem("README.md: the table is said to be %s; core/fields.h (COL) "
                "makes it %s: add %s, in that order" % (
                    ", ".join(words_list(m.group(1))), ", ".join(titles),
                    ", ".join(missing_after(titles, words_list(m.group(1))))
                    or "nothing, but put them"))
    check_drop(cols, readme, "README.md")

    screen = man_sections("docs/mstat-top.1").get("THE SCREEN", [])
    text = "\n".join(screen)
    table = text.split(".PP")[0]
    got = [w for tag, _ in man_entries(table.split("\n"))
           for w in tag.split()]
    if got != titles:
        problem("docs/mstat-top.1, THE SCREEN: its entries of the columns "
                "are %s; core/fields.h (COL) makes %s: add a .TP for %s, "
                "in that order" % (", ".join(got), ", ".join(titles),
                                   ", ".join(missing_after(titles, got))
                                   or "none, but order them"))
    check_drop(cols, " ".join(roff_line(l) for l in screen),
               "docs/mstat-top.1, THE SCREEN")


def check_sort():
    names = [c["name"] for c in code_columns()]
    top = programs().get("mstat-top")
    if top:
        s = help_options(top).get("sort", {}).get("text", "")
        m = re.search(r":\s*(.*?)\s*\(default", s)
        if not m or words_list(m.group(1)) != names:
            problem("mstat-top --help: -s lists %r; the columns are %s: "
                    "its list comes from mstat_columns_at() (top/main.c, "
                    "sort_names())" % (m.group(1) if m else s,
                                       ", ".join(names)))
    entries = man_entries(man_sections("docs/mstat-top.1")["OPTIONS"])
    text = next((t for tag, t in entries if "--sort" in tag), "")
    m = re.search(r"Sort by (.*?) \(or by a column's title\)", text)
    got = words_list(re.sub(r" \(default\)", "", m.group(1))) if m else []
    if got != names:
        problem("docs/mstat-top.1, OPTIONS, -s: \"Sort by %s\"; the columns "
                "are %s (core/fields.h, COL): add %s, in that order"
                % (", ".join(got), ", ".join(names),
                   ", ".join(missing_after(names, got)) or "none"))


# ---- metrics ----

def code_families():
    """[(sample name, type, unit)] in the exposition's order."""
    fams, unit = [], {}
    for line in lists()["exposition"].split("\n"):
        m = re.match(r"^# TYPE (\S+) (\S+)$", line)
        if m:
            name, t = m.groups()
            sample = name + ("_total" if t == "counter" else
                             "_info" if t == "info" else "")
            fams.append([sample, t, ""])
        m = re.match(r"^# UNIT (\S+) (\S+)$", line)
        if m:
            fams[-1][2] = m.group(2)
    return [tuple(f) for f in fams]


def check_metrics():
    fams = code_families()
    names = [f[0] for f in fams]
    layout = lists()["layout"]
    doc = read("docs/mstat-top-openmetrics.md")
    section = doc.split("\n## Metrics", 1)[-1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(mstat_\w+)` \| (\w+) \|\s*(\w*)\s*\|", section,
                      re.M)
    if rows != fams:
        for f in fams:
            if f not in rows:
                i = fams.index(f)
                problem("docs/mstat-top-openmetrics.md, Metrics: no row `%s` "
                        "| %s | %s |: add it %s" % (
                            f[0], f[1], f[2], "after `%s`" % fams[i - 1][0]
                            if i else "first"))
        for r in rows:
            if r not in fams:
                problem("docs/mstat-top-openmetrics.md, Metrics: the row "
                        "`%s` | %s | %s | is not a family core/exposition.c "
                        "writes: remove or correct it" % r)
        if set(rows) == set(fams):
            problem("docs/mstat-top-openmetrics.md, Metrics: the rows are "
                    "not in the exposition's order %s" % ", ".join(names))
    for v in re.findall(r'layout="([\d.]+)"|`([\d.]+)` today', doc):
        got = v[0] or v[1]
        if got != layout:
            problem("docs/mstat-top-openmetrics.md says the layout is %s; "
                    "the segment format is %s (shm/layout.h): write %s"
                    % (got, layout, layout))

    readme = flat(read("README.md"))
    m = re.search(r"\*\*Metrics\*\*(.*?)Its own:", readme)
    if not m:
        problem("README.md: no **Metrics** item listing the metrics")
    else:
        got = set(re.findall(r"`(mstat_\w+)`", m.group(1)))
        for n in names:
            if n not in got and not n.startswith("mstat_class_"):
                problem("README.md, **Metrics**: `%s` is not listed: add it"
                        % n)
        for n in got - set(names):
            problem("README.md, **Metrics**: `%s` is not a metric "
                    "core/exposition.c writes" % n)

    metrics = man_sections("docs/mstat-exporter.1").get("METRICS", [])
    own = next((i for i, l in enumerate(metrics) if "exporter's own" in l),
               len(metrics))
    got = [n for tag, _ in man_entries(metrics[:own])
           for n in re.findall(r"mstat_\w+", tag)]
    for n in names:
        if n not in got:
            problem("docs/mstat-exporter.1, METRICS: `%s` has no entry "
                    "(before \"The exporter's own\"): add it to a .TP" % n)
    for n in got:
        if n not in names:
            problem("docs/mstat-exporter.1, METRICS: `%s` is not a metric "
                    "core/exposition.c writes" % n)


# ---- variables, suites ----

def check_variables():
    readme = read("README.md")
    rows = set()
    for line in readme.split("\n"):
        m = re.match(r"^\| ([^|]*`MSTAT_[^|]*)\|", line)
        if m:
            rows |= set(re.findall(r"`(MSTAT_\w+)", m.group(1)))
    for v in lists()["variables"]:
        if v not in rows:
            problem("README.md: no row of its tables of variables names %s, "
                    "which the library reads (lib/config.h): add one to the "
                    "table under \"Using the library\", as "
                    "docs/libmstatshm.3 documents it" % v)


def suites():
    """(every suite of tests/, the default ones)."""
    found = set()
    for d, _, files in os.walk(os.path.join(SRC, "tests")):
        if "meson.build" in files:
            with open(os.path.join(d, "meson.build")) as f:
                found |= set(re.findall(r"suite:\s*'([\w-]+)'", f.read()))
    m = re.search(r"add_test_setup\('default', exclude_suites: \[([^\]]*)\]",
                  read("meson.build"))
    excluded = set(re.findall(r"'([\w-]+)'", m.group(1))) if m else set()
    return found, found - excluded


def check_suites():
    every, default = suites()
    readme = read("README.md")
    m = re.search(r"^\| `tests/` \|.*?by suite: (.*?) \|$", readme, re.M)
    if not m:
        problem("README.md, Layout: the row of `tests/` does not list the "
                "suites (\"by suite: `unit`, ...\")")
    else:
        got = set(re.findall(r"`([\w-]+)`", m.group(1)))
        for s in sorted(every - got):
            problem("README.md, Layout: the row of `tests/` lacks the suite "
                    "`%s` (tests/): add it" % s)
        for s in sorted(got - every):
            problem("README.md, Layout: the row of `tests/` names a suite "
                    "`%s` that no meson.build of tests/ has" % s)
    section = readme.split("\n## Checking", 1)[-1].split("\n## ", 1)[0]
    got = set(re.findall(r"^\| `([\w-]+)` \|", section, re.M))
    for s in sorted(default - got):
        problem("README.md, Checking: the table has no row for the suite "
                "`%s`, which `meson test` runs: add one saying what it "
                "proves" % s)
    for s in sorted(got - default):
        problem("README.md, Checking: the row `%s` is not a suite of the "
                "default run" % s)


# ---- mstat-run's summary ----

def structure(doc, real, path, out):
    """What `doc` lacks of `real`'s fields, or has more, or in another
    order, by path."""
    if isinstance(real, dict):
        if not isinstance(doc, dict):
            out.append("%s is not an object" % path)
            return
        if list(doc) != list(real):
            for i, k in enumerate(real):
                if k not in doc:
                    out.append("%s lacks \"%s\" (after \"%s\")" % (
                        path, k, list(real)[i - 1] if i else "{"))
            for k in doc:
                if k not in real:
                    out.append("%s has \"%s\", which mstat-run does not "
                               "write" % (path, k))
            if set(doc) == set(real):
                out.append("%s has its fields in another order: %s" % (
                    path, ", ".join(real)))
        for k in real:
            if k in doc:
                structure(doc[k], real[k], path + "." + k, out)
    elif isinstance(real, list) and real and isinstance(real[0], dict):
        if not isinstance(doc, list) or not doc:
            out.append("%s is not a list of objects" % path)
            return
        structure(doc[0], real[0], path + "[0]", out)


def check_summary():
    run = programs().get("mstat-run")
    if os.environ.get("MSTAT_SANITIZED") or \
            "vgpreload" in os.environ.get("LD_PRELOAD", ""):
        print("SKIP: a sanitizer's or valgrind's malloc beside the "
              "interposer")
        sys.exit(77)
    sections = man_sections("docs/mstat-run.1")
    text = "\n".join(sections.get("SUMMARY", []))
    m = re.search(r"^\.EX\n(\{.*?)^\.EE", text, re.M | re.S)
    if not m:
        problem("docs/mstat-run.1, SUMMARY: no example (.EX ... .EE)")
        return
    example = roff_text(m.group(1))
    try:
        doc = json.loads(example)
    except ValueError as e:
        problem("docs/mstat-run.1, SUMMARY: the example is not JSON (%s): "
                "paste what `mstat-run --summary - -- sh -c 'echo ok >/dev/"
                "null'` writes" % e)
        return
    out = subprocess.run([run, "--summary", "-", "--", "sh", "-c",
                          "echo ok >/dev/null"], stdout=subprocess.PIPE,
                         timeout=60, check=True)
    real = json.loads(out.stdout)
    if not real["process"]["classes"]:
        problem("mstat-run's summary of sh has no size class: cannot compare")
    diffs = []
    structure(doc, real, "summary", diffs)
    for d in diffs:
        problem("docs/mstat-run.1, SUMMARY, the example: %s: make it what "
                "`mstat-run --summary - -- sh -c 'echo ok >/dev/null'` "
                "writes" % d)


# ---- sections cited ----

SOURCES = (".md", ".c", ".h", ".cc", ".py", ".sh", ".js", ".1", ".3",
           ".build", ".yaml", ".service", ".conf")


def headings(rel):
    if rel.endswith(".md"):
        return [m.group(1) for m in
                re.finditer(r"^#{1,6}\s+(.*?)\s*$", read(rel), re.M)]
    return [re.sub(r'"', "", m.group(2)) for m in
            re.finditer(r"^\.(SH|SS)\s+(.*?)\s*$", read(rel), re.M)]


def cites(heading, name):
    """A citation names a heading, or its start ("Fencing modes" for
    "Fencing modes, and the default")."""
    return heading == name or re.match(re.escape(name) + r"[:,]", heading)


def check_sections():
    for d, dirs, files in os.walk(SRC):
        dirs[:] = [x for x in dirs if not x.startswith((".", "build")) and
                   x != "node_modules"]
        for f in files:
            if not f.endswith(SOURCES):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, SRC)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read().replace('\\"', '"')
            text = re.sub(r"\n\s*(?:\*|#|//|;)?\s*", " ", text)
            for m in re.finditer(r"((?:docs/)?[\w-]+\.md),? (?:section )?"
                                 r"\"([^\"]{2,80})\"", text):
                doc, name = m.groups()
                target = doc if doc.startswith("docs/") or \
                    doc == "README.md" else "docs/" + doc
                if not os.path.exists(os.path.join(SRC, target)):
                    problem("%s cites %s, \"%s\": there is no %s" % (
                        rel, doc, name, target))
                elif not any(cites(h, name) for h in headings(target)):
                    problem("%s cites %s, \"%s\", a section %s does not "
                            "have (its sections: %s)" % (
                                rel, doc, name, target,
                                "; ".join(headings(target))))
            for m in re.finditer(r"\b(mstat-[\w-]+|libmstatshm)\((\d)\),? "
                                 r"([A-Z][A-Z ]*[A-Z])\b", text):
                page = "docs/%s.%s" % (m.group(1), m.group(2))
                if os.path.exists(os.path.join(SRC, page)) and not any(
                        cites(h, m.group(3)) for h in headings(page)):
                    problem("%s cites %s(%s), %s, a section %s does not "
                            "have" % (rel, m.group(1), m.group(2),
                                      m.group(3), page))


CHECKS = {
    "options": check_options,
    "columns": check_columns,
    "sort": check_sort,
    "metrics": check_metrics,
    "variables": check_variables,
    "suites": check_suites,
    "summary": check_summary,
    "sections": check_sections,
}

CHECKS[CHECK]()
for p in problems:
    print(p)
print("docs %s: %s" % (CHECK, "FAIL" if problems else "ok"))
sys.exit(1 if problems else 0)
