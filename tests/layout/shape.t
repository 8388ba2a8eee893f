#!/usr/bin/env python3
# The shape rules of the tree's code: no file over 1000 lines, no function
# over 100 lines (from its signature to its closing brace; a Python def to
# its last line), in the C, CUDA and Python of server/, common/, runner/,
# client/, labs/ (labs/common/ and each lab's own harness and Python) and
# reference/, which are code the same people read. This test owns those
# two rules; server/ keeps the rules of its own in tests/server/layout.t
# (include order, SQL written once, none in a view).
# And the runner's rooms (runner/README.md): its code sits in runner/ROOM/,
# directly in runner/ only RUNNER_TOP; every room is on README.md's map;
# a runner header is included by its path (runner/ROOM/x.h) and exists;
# a room includes only rooms below it on README.md's map (so no ring of
# rooms, of two or more), and two rooms that include each other would be
# listed in ROOM_CIRCLES, which only shrinks (it is empty).
#
# A file or function that may stay over the line is listed in EXCEPTIONS
# below with the reason; an exception that no longer applies fails too, so
# the list only shrinks.
#
#   tests/layout/shape.t [ROOT]     check the tree at ROOT (default: this one)
import ast
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else (os.environ.get("CUGRADE_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DIRS = ["server", "common", "runner", "client", "labs", "reference"]
SKIP_DIRS = {"__pycache__"}
SKIP_FILES = re.compile(r"\.generated\.|^cases\.h$")   # written by tools, not people
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 100

# "path" (a file's size) or "path:function" -> why it may stay over the line.
EXCEPTIONS = {
    "client/cugrade.py":
        "served as one file: GET /client/cugrade.py hands it out byte for byte (a student "
        "copies it anywhere and runs it) and server/wheel.c packs it as the wheel's one module "
        "(tests/server/bundle.t, tests/client/served_install.t); a package first needs the "
        "server to join or pack several files",
}

# What may sit directly in runner/ (the binaries' entries, the switches' table).
RUNNER_TOP = {"main.c", "launch.c", "config.c", "config.h"}
# "room<->room" (sorted) -> why the two rooms still include each other.
# Empty since the shared part of a job (its environment, runs, channel,
# limits and verdicts) became runner/run/ and the timings' types and
# metrics runner/timing/metric.h: a new circle fails.
ROOM_CIRCLES = {}

n = 0
failed = 0


def ok(cond, name, why=""):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, name))
    if not cond:
        failed += 1
        for line in why.splitlines():
            print("#   " + line)


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
        elif c == '"' or (c == "'" and not text[i - 1:i].isalnum()):
            j = i + 1
            while j < n_ and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


FUNC = re.compile(r"^[A-Za-z_][^;{}()]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)[^;{}()]*\{", re.M)
KEYWORDS = {"if", "for", "while", "switch", "sizeof", "return", "__launch_bounds__"}


def c_functions(text):
    """(name, first line, lines) of each function defined in C/CUDA text."""
    text = strip_comments(text)
    for m in FUNC.finditer(text):
        name = m.group(1)
        if name in KEYWORDS:
            continue
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            elif text[i] in "\"'":
                q, i = text[i], i + 1
                while i < len(text) and text[i] != q and text[i] != "\n":
                    i += 2 if text[i] == "\\" else 1
            i += 1
        yield name, text.count("\n", 0, m.start()) + 1, text.count("\n", m.start(), i) + 1


def py_functions(text, path):
    """(name, first line, lines) of each def (methods and nested ones too)."""
    try:
        tree = ast.parse(text, path)
    except SyntaxError as e:
        yield "<syntax error %s>" % e, 1, MAX_FUNCTION_LINES + 1
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def sources():
    for d in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = sorted(x for x in dirnames if x not in SKIP_DIRS)
            for f in sorted(filenames):
                if f.endswith((".c", ".h", ".cu", ".cuh", ".py")) and not SKIP_FILES.search(f):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


files = list(sources())
ok(len(files) > 50 and "runner/grade/inspect.c" in files and "server/app.c" in files
   and "client/cugrade.py" in files,
   "found the code (%d files under %s)" % (len(files), ", ".join(DIRS)))

big, long_fns, used = [], [], set()
for path in files:
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = text.count("\n")
    if lines > MAX_FILE_LINES:
        if path in EXCEPTIONS:
            used.add(path)
        else:
            big.append("%s: %d lines" % (path, lines))
    fns = py_functions(text, path) if path.endswith(".py") else c_functions(text)
    for name, line, length in fns:
        key = "%s:%s" % (path, name)
        if length > MAX_FUNCTION_LINES:
            if key in EXCEPTIONS:
                used.add(key)
            else:
                long_fns.append("%s:%d: %s() is %d lines" % (path, line, name, length))

ok(not big, "no file over %d lines" % MAX_FILE_LINES, "\n".join(big))
ok(not long_fns, "no function over %d lines" % MAX_FUNCTION_LINES, "\n".join(long_fns))


def runner_rooms():
    """Check the runner's rooms (see the header)."""
    top = os.path.join(ROOT, "runner")
    loose = sorted(f for f in os.listdir(top) if f.endswith((".c", ".h")) and f not in RUNNER_TOP)
    ok(not loose, "runner/ holds rooms: no .c/.h directly in it but %s" % ", ".join(sorted(RUNNER_TOP)),
       "move into a room (runner/README.md): " + " ".join(loose))
    rooms = sorted(d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))
                   and any(f.endswith((".c", ".h")) for f in os.listdir(os.path.join(top, d))))
    readme = os.path.join(top, "README.md")
    text = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    order = re.findall(r"^- `([a-z_]+)/`", text, re.M)  # the map, top room first
    listed = sorted(set(order))
    ok(rooms and rooms == listed, "runner/README.md's map lists the rooms (%s)" % ", ".join(rooms),
       "folders: %s\nREADME.md: %s" % (" ".join(rooms), " ".join(listed)))
    bad, edges = [], {}
    for path in files:
        parts = path.split(os.sep)
        if parts[0] != "runner" or not path.endswith((".c", ".h")):
            continue
        room = parts[1] if len(parts) == 3 else "."
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            for i, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if inc.startswith("runner/"):
                    if not os.path.isfile(os.path.join(ROOT, inc)):
                        bad.append("%s:%d: %s does not exist" % (path, i, inc))
                    p = inc.split("/")
                    if len(p) == 3 and room != "." and p[1] != room:
                        edges.setdefault((room, p[1]), []).append("%s:%d" % (path, i))
                elif os.path.isfile(os.path.join(ROOT, "runner", inc)) or any(
                        os.path.isfile(os.path.join(top, r, inc)) for r in rooms):
                    bad.append('%s:%d: #include "%s": name it runner/ROOM/%s' % (path, i, inc, inc))
    ok(not bad, "runner headers are included by their path from the root (runner/ROOM/x.h)",
       "\n".join(bad))
    circles = sorted({"%s<->%s" % tuple(sorted(e)) for e in edges if e[::-1] in edges})
    new = ["%s: %s" % (c, " ".join(edges[tuple(c.split("<->"))][:3] + edges[tuple(c.split("<->")[::-1])][:3]))
           for c in circles if c not in ROOM_CIRCLES]
    ok(not new, "no two rooms of runner/ include each other (but ROOM_CIRCLES)", "\n".join(new))
    up = ["%s -> %s: %s" % (a, b, " ".join(w[:3])) for (a, b), w in sorted(edges.items())
          if a in order and b in order and order.index(a) > order.index(b)
          and "%s<->%s" % tuple(sorted((a, b))) not in ROOM_CIRCLES]
    ok(not up, "a room includes only rooms below it on runner/README.md's map (no ring of rooms)",
       "\n".join(up))
    gone = sorted(set(ROOM_CIRCLES) - set(circles))
    ok(not gone, "every listed room circle is still there (else drop it)", "\n".join(gone))
    for c in circles:
        if c in ROOM_CIRCLES:
            print("# room circle %s: %s" % (c, ROOM_CIRCLES[c]))


runner_rooms()
stale = sorted(set(EXCEPTIONS) - used)
ok(not stale, "every listed exception is still over the line (else drop it)", "\n".join(stale))
for key in sorted(used):
    print("# exception %s: %s" % (key, EXCEPTIONS[key]))
print("1..%d" % n)
sys.exit(1 if failed else 0)
