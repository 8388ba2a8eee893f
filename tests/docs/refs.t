#!/usr/bin/env python3
# docs/*.md are references: how the system works now and why (HELPERS and
# docs/contributing.md); the history of what was tried lives in docs/log/.
# For every docs/*.md (not docs/log/):
#  - every relative link [text](path) names a file of the repo (resolved
#    from docs/), and every `dir/file` mention under one of the tree's top
#    folders names one that exists (from the repo root, or from docs/);
#    mentions with a placeholder (LAB, {lab}, N, a glob, <...>) and build
#    outputs are not checked;
#  - no session-history marker: "stop NN", "the second session", "this
#    session", "last week", a commit id ("at 91aab3b", "commit 0b6121c",
#    "fails on 1b280f8"),
#    a pointer to DESIGN.md (it is not in the repo), a source line number
#    ("bwrap.c:341": it drifts with every edit; name the function);
#  - no "three labs" where labs/ has another number of labs.
#
#   tests/docs/refs.t [ROOT]
import functools
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else (os.environ.get("CUGRADE_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOCS = os.path.join(ROOT, "docs")
TOP = ("server", "runner", "common", "labs", "client", "tests", "deploy", "docs", "reference",
       "rubrics")
LINK = re.compile(r"\]\(([^)\s]+)\)")
MENTION = re.compile(r"(?<![\w./~$-])((?:%s)/[\w./+-]*[\w/])" % "|".join(TOP))
PLACEHOLDER = re.compile(r"[A-Z]{2,}|\*|\.\.\.|\bN\b|/[A-Z]\b")
GENERATED = re.compile(r"(^|/)(cases\.generated\.h|cases\.h|[^/]*\.o|build[^/]*)$|^tests/gpu/out")
MARKERS = [
    (re.compile(r"\bstops? \d+\b|\bstop-\d+\b", re.I), "a stop number"),
    (re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh|this|last|next|previous|"
                r"earlier|same|that) session\b", re.I), "a session"),
    (re.compile(r"\blast week\b|\bthis week\b", re.I), "last/this week"),
    (re.compile(r"\b(?:at|commit|from|before|after|on) \(?(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])"
                r"[0-9a-f]{7,12}\b"), "a commit id"),
    (re.compile(r"\bDESIGN(\.md| steps?\b)"), "DESIGN.md (not in the repo)"),
    (re.compile(r"(?:\b(?:%s)/[\w/.-]+|\b[\w-]+\.[ch]):\d+\b" % "|".join(TOP)),
     "a source line number of ours (it drifts: name the function)"),
]
NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../runner/fakelab"))
from suite import failures, ok as suite_ok  # noqa: E402  (TAP lines, counted)

ok = functools.partial(suite_ok, lines=None)   # every line of a failure's detail


def exists(path, base):
    path = path.rstrip("/")
    return any(os.path.exists(os.path.join(b, path)) for b in (base, ROOT))


def expand(path, rest):
    """path as written, with a brace list after it expanded
    (`runner/sandbox/sandbox.{c,h}`); [] when a glob or placeholder follows."""
    m = re.match(r"([-._]?)\{([^}]*)\}([\w./-]*)", rest)
    if m:
        if re.match(r"[*<\[{]", rest[m.end():]):
            return []
        return [path + m.group(1) + alt + m.group(3) for alt in m.group(2).split(",")]
    if rest[:1] in ("*", "<", "[", "{") or rest[:2] in ("_*", "-*", ".*"):
        return []
    return [path]


def check_doc(name, text):
    bad_links, bad_paths, marks = [], [], []
    in_code = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:|#", target):
                continue
            if not exists(target.split("#", 1)[0], DOCS):
                bad_links.append("%s:%d: (%s)" % (name, no, target))
        for m in MENTION.finditer(line):
            for path in expand(m.group(1), line[m.end():]):
                path = path.rstrip(".")
                if PLACEHOLDER.search(path) or GENERATED.search(path):
                    continue
                if not exists(path, DOCS):
                    bad_paths.append("%s:%d: %s" % (name, no, path))
        for rx, what in MARKERS:
            for m in rx.finditer(line):
                marks.append("%s:%d: %s: %s" % (name, no, what, line.strip()[:100]))
    return bad_links, bad_paths, marks


docs = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))
ok(len(docs) > 5, "docs/*.md found (%d)" % len(docs))
labs = [d for d in os.listdir(os.path.join(ROOT, "labs"))
        if os.path.exists(os.path.join(ROOT, "labs", d, "lab.json"))]
links, paths, marks, counts = [], [], [], []
for name in docs:
    with open(os.path.join(DOCS, name)) as f:
        text = f.read()
    a, b, c = check_doc(name, text)
    links += a
    paths += b
    marks += c
    for k, word in NUMBERS.items():
        if k != len(labs):
            for m in re.finditer(r"\b(?:the|all|course's) (?:course's )?%s labs\b" % word,
                                 text, re.I):
                counts.append("%s: \"%s\" (labs/ has %d: %s)" % (
                    name, m.group(0), len(labs), ", ".join(sorted(labs))))
ok(not links, "every relative link of docs/*.md names a file of the repo", "\n".join(links))
ok(not paths, "every path mentioned in docs/*.md exists", "\n".join(paths))
ok(not marks, "no session history in docs/*.md (it goes to docs/log/)", "\n".join(marks))
ok(not counts, "docs/*.md count the labs right", "\n".join(counts))
sys.exit(1 if failures() else 0)
