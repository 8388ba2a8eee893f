#!/usr/bin/env python3
# The shape of server/ (docs/server.md, "Files"), checked so that it stays:
#  - no #include cycle among server/*.h (the course state at the bottom,
#    nouns above it, views above them, server.c on top);
#  - no SQL statement written twice: every string literal (adjacent literals
#    and the macros between them joined) that starts a statement appears in
#    one place only, in the file of the noun that owns the table;
#  - the views (server/*_api.c, *_page.c, page.c, api.c) run no SQL of
#    their own.
# File and function sizes are the whole tree's rule: tests/layout/shape.t.
#
#   tests/server/layout.t [DIR]     check DIR (default: the tree's server/)
import os
import re
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "server")
SQL_START = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|CREATE|DROP|ALTER)\b", re.I)

n = 0
failed = 0


def ok(cond, name, why=""):
    global n, failed
    n += 1
    if cond:
        print("ok %d - %s" % (n, name))
    else:
        failed += 1
        print("not ok %d - %s" % (n, name))
        for line in why.splitlines():
            print("#   " + line)


def read(name):
    with open(os.path.join(DIR, name), encoding="utf-8", errors="replace") as f:
        return f.read()


def strip_comments(text):
    """C source with comments blanked (newlines kept), strings kept."""
    out, i, n_ = [], 0, len(text)
    while i < n_:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n_ if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n_ if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n_ and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


files = sorted(f for f in os.listdir(DIR) if f.endswith((".c", ".h")))
headers = [f for f in files if f.endswith(".h")]
sources = [f for f in files if f.endswith(".c")]
ok(len(sources) > 5 and "app.h" in headers, "server/ has its files (%d .c, %d .h)" %
   (len(sources), len(headers)))

# ---- include cycles among server/*.h -----------------------------------
INCLUDE = re.compile(r'^\s*#\s*include\s+"server/([A-Za-z0-9_]+\.h)"', re.M)
graph = {h: sorted(set(INCLUDE.findall(strip_comments(read(h))))) for h in headers}
cycles = []
state = {}


def visit(h, path):
    state[h] = 1
    for d in graph.get(h, []):
        if state.get(d) == 1:
            cycles.append(" -> ".join(path[path.index(d):] + [d]) if d in path else h + " -> " + d)
        elif d not in state and d in graph:
            visit(d, path + [d])
    state[h] = 2


for h in headers:
    if h not in state:
        visit(h, [h])
ok(not cycles, "no #include cycle among server/*.h", "\n".join(cycles))

# The bottom of the graph: app.h includes no noun, view or server header.
low = {"auth.h", "db.h", "http.h", "queue.h", "router.h"}
above = [d for d in graph.get("app.h", []) if d not in low]
ok(not above, "app.h (the course state) includes only the layers below it", " ".join(above))

# ---- SQL written once ---------------------------------------------------
STRING = r'"(?:[^"\\\n]|\\.)*"'
RUN = re.compile(r'(?:%s|\b[A-Z][A-Z0-9_]*\b)(?:\s*(?:%s|\b[A-Z][A-Z0-9_]*\b))*' % (STRING, STRING))


def sql_statements(text):
    """(statement, line) for each run of literals that starts SQL."""
    for m in RUN.finditer(text):
        parts = re.findall(r'%s|\b[A-Z][A-Z0-9_]*\b' % STRING, m.group(0))
        if not any(p.startswith('"') for p in parts):
            continue
        joined = "".join(p[1:-1] if p.startswith('"') else "<%s>" % p for p in parts)
        joined = " ".join(joined.split())
        if SQL_START.match(joined) and len(joined) >= 12:
            yield joined, text.count("\n", 0, m.start()) + 1


seen = {}
for f in sources:
    for stmt, line in sql_statements(strip_comments(read(f))):
        seen.setdefault(stmt, []).append("%s:%d" % (f, line))
dups = ["%s\n  in %s" % (s, ", ".join(w)) for s, w in sorted(seen.items()) if len(w) > 1]
ok(len(seen) > 10, "found the server's SQL (%d statements)" % len(seen))
ok(not dups, "no SQL statement written twice", "\n".join(dups))

VIEW = re.compile(r"(_api|_page)\.c$|^(api|page)\.c$")
in_views = sorted({w.split(":")[0] for ws in seen.values() for w in ws if VIEW.search(w.split(":")[0])})
ok(not in_views, "the views run no SQL (it belongs to the nouns)", " ".join(in_views))

print("1..%d" % n)
sys.exit(1 if failed else 0)
