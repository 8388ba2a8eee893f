#!/usr/bin/env python3
# The shape rules of tests/server/layout.t for the rest of the tree's code:
# no file over 1000 lines, no function over 100 lines (from its signature to
# its closing brace; a Python def to its last line), in the C, CUDA and
# Python of common/, runner/, client/, labs/common/ (and each lab's own
# harness and Python, reference/, which are code the same people read).
# server/ keeps its own, stricter test (layout.t: include cycles, SQL once).
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
DIRS = ["common", "runner", "client", "labs", "reference"]
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
ok(len(files) > 50 and "runner/grade/inspect.c" in files and "client/cugrade.py" in files,
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
stale = sorted(set(EXCEPTIONS) - used)
ok(not stale, "every listed exception is still over the line (else drop it)", "\n".join(stale))
for key in sorted(used):
    print("# exception %s: %s" % (key, EXCEPTIONS[key]))
print("1..%d" % n)
sys.exit(1 if failed else 0)
