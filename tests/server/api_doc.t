#!/usr/bin/env python3
# docs/api.md lists every route the server answers: its "Every route" table
# must hold each (method, path) of the route tables in server/*.c (the
# `{HTTP_GET, "/path", ...}` rows and the web pages' PAGE_ROUTE and
# PAGE_ROUTE_READ rows), and
# no row for a route that no table has (a removed route leaves no stale
# line). Each row's link names a doc that exists. Reads sources only.
#
#   tests/server/api_doc.t [ROOT]
import functools
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else (os.environ.get("CUGRADE_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROUTE = re.compile(r'(?:\{|PAGE_ROUTE(?:_READ)?\()\s*HTTP_([A-Z]+)\s*,\s*"(/[^"]*)"')
ROW = re.compile(r"^\|\s*([A-Z]+) (/\S*)\s*\|\s*(.*?)\s*\|\s*$")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../runner/fakelab"))
from suite import failures, ok as suite_ok  # noqa: E402  (TAP lines, counted)

ok = functools.partial(suite_ok, lines=None)   # every line of a failure's detail


def code_routes():
    out = set()
    sdir = os.path.join(ROOT, "server")
    for name in sorted(os.listdir(sdir)):
        if name.endswith(".c"):
            with open(os.path.join(sdir, name)) as f:
                out.update(ROUTE.findall(f.read()))
    return out


def doc_rows():
    rows, links = set(), []
    with open(os.path.join(ROOT, "docs", "api.md")) as f:
        text = f.read()
    part = text.split("\n## Every route\n", 1)
    if len(part) < 2:
        return None, []
    for line in part[1].split("\n## ", 1)[0].splitlines():
        m = ROW.match(line)
        if m:
            rows.add((m.group(1), m.group(2)))
            links += re.findall(r"\]\(([^)#]+)", m.group(3))
    return rows, links


code = code_routes()
ok(len(code) > 40, "the route tables of server/*.c were read (%d routes)" % len(code))
rows, links = doc_rows()
ok(rows is not None, 'docs/api.md has an "## Every route" section')
rows = rows or set()
missing = sorted(code - rows, key=lambda r: (r[1], r[0]))
ok(not missing, "every route of server/*.c has a row in docs/api.md's route index",
   "\n".join("%s %s" % r for r in missing))
stale = sorted(rows - code, key=lambda r: (r[1], r[0]))
ok(not stale, "every row of the index is a route of server/*.c",
   "\n".join("%s %s" % r for r in stale))
bad = sorted(set(x for x in links if not os.path.exists(os.path.join(ROOT, "docs", x))))
ok(not bad, "every doc the index links to exists", "\n".join(bad))
sys.exit(1 if failures() else 0)
