#!/usr/bin/env python3
"""CI: the runner's environment switches are one table (runner/config.c,
config.h). Every CUGRADE_* name in what cugrade-runner is built from
(runner/, common/) is a row of `cugrade-runner --help-env`; nothing but
config.c calls getenv on one; every field of struct runner_config is read
outside config.c; docs/runner.md's "Environment switches" block is the
table (`--help-env markdown`), word for word; a value out of range stops
the runner at start with the switch, its range and the value; and the
toggles deleted with the table (docs/log/2026-11-28-runner-config.md) are
set nowhere any more. Header guards (CUGRADE_..._H) are not switches, nor
is a name written with its '=' into a child's environment ("CUGRADE_X=").
Prints TAP lines."""
import functools, glob, os, re, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import ROOT, RUNNER, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None)

# Switches deleted with the table: their question is answered (the log).
DELETED = ["CUGRADE_TIME_GATE", "CUGRADE_INTERLEAVE", "CUGRADE_FRONT_HUGETLB",
           "CUGRADE_PROFILE_METRICS", "CUGRADE_PROFILE_FILTER", "CUGRADE_PROFILE_PYTHON",
           # merged into another switch's value (docs/log/2026-12-01-switches.md)
           "CUGRADE_PROFILE", "CUGRADE_FRONT", "CUGRADE_GPU_PROBE_LIMIT",
           # nothing set it (the same log)
           "CUGRADE_SANDBOX_BOXES",
           # a constant, a flag, one hook, or derived (docs/log/2026-12-01-switches.md)
           "CUGRADE_RETIME", "CUGRADE_KEEP_JOBS", "CUGRADE_GPU_HOLD", "CUGRADE_PY_SIM",
           "CUGRADE_PYTHON_ROOT"]

SOURCES = sorted(glob.glob(os.path.join(ROOT, "runner", "**", "*.[ch]"), recursive=True) +
                 glob.glob(os.path.join(ROOT, "common", "*.[ch]")))
NAME = re.compile(r"CUGRADE_[A-Z0-9_]+")
GUARD = re.compile(r"^\s*#\s*(ifndef|define|endif)\b.*CUGRADE_[A-Z0-9_]+_H\b")


def run(args, env=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("CUGRADE_") and k not in ("CUGRADE_ROOT", "CUGRADE_BUILD"):
            del e[k]
    e.update(env or {})
    return subprocess.run([RUNNER] + args, env=e, capture_output=True, text=True, timeout=60)


def names_in(path):
    """The CUGRADE_* names path mentions, less guards and child-env writes."""
    found = {}
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if GUARD.match(line):
                continue
            for m in NAME.finditer(line):
                if line[m.end():m.end() + 1] == "=" and line[m.start() - 1:m.start()] == '"':
                    continue  # "CUGRADE_X=..." written into a child's environment
                found.setdefault(m.group(0), f"{os.path.relpath(path, ROOT)}:{no}")
    return found


help_env = run(["--help-env"])
ok(help_env.returncode == 0 and "CUGRADE_NCU" in help_env.stdout,
   "cugrade-runner --help-env prints the table", help_env.stderr)
table = set(NAME.findall(help_env.stdout))
print(f"# {len(table)} switches in the table")

# 1. Every name in the sources is in the table.
missing = {}
for p in SOURCES:
    for n, where in names_in(p).items():
        if n not in table:
            missing.setdefault(n, where)
ok(not missing, "every CUGRADE_* name in runner/ and common/ is a row of the table",
   "\n".join(f"{n} ({w}) is not in runner/config.c's table" for n, w in sorted(missing.items())))

# 2. Only config.c reads the environment for a switch.
bad = []
for p in SOURCES:
    if os.path.basename(p) == "config.c":
        continue
    with open(p, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            for m in re.finditer(r"\b(secure_)?getenv\s*\(\s*([^)]*)\)", line):
                arg = m.group(2).strip()
                if "CUGRADE_" in arg or not arg.startswith('"'):
                    bad.append(f"{os.path.relpath(p, ROOT)}:{no}: {line.strip()}")
ok(not bad, "no getenv of a CUGRADE_* switch (nor of a computed name) outside runner/config.c",
   "\n".join(bad))

# 3. Every field of the configuration is read by the runner.
with open(os.path.join(ROOT, "runner/config.h"), encoding="utf-8") as f:
    h = f.read()
body = h[h.index("struct runner_config {"):h.index("};", h.index("struct runner_config {"))]
fields = re.findall(r"^\s*(?:char|long|double)\s+(\w+)", body, re.M)
users = ""
for p in SOURCES:
    if os.path.basename(p) not in ("config.c", "config.h"):
        with open(p, encoding="utf-8") as f:
            users += f.read()
unread = [x for x in fields if not re.search(r"(->|\.)" + x + r"\b", users)]
ok(len(fields) == len(table) and not unread,
   f"each of the {len(fields)} fields is read outside config.c (one per switch)",
   f"fields {len(fields)}, switches {len(table)}; never read: {unread}")

# 4. docs/runner.md's reference block is the table.
md = run(["--help-env", "markdown"])
with open(os.path.join(ROOT, "docs/runner.md"), encoding="utf-8") as f:
    doc = f.read()
m = re.search(r"<!-- switches:begin[^>]*-->\n(.*?)<!-- switches:end -->", doc, re.S)
ok(m is not None and m.group(1).strip() == md.stdout.strip(),
   "docs/runner.md's \"Environment switches\" block is `cugrade-runner --help-env markdown`",
   "regenerate it: build/cugrade-runner --help-env markdown\n" +
   ("no <!-- switches:begin --> ... <!-- switches:end --> block" if not m else
    "\n".join(l for l in set(m.group(1).strip().splitlines()) ^ set(md.stdout.strip().splitlines()))))

# 5. A bad value refuses the start, naming the switch, its range and the value.
for env, want in (({"CUGRADE_COMPILE_NICE": "99"}, ["CUGRADE_COMPILE_NICE=99", "0..19"]),
                  ({"CUGRADE_NO_GPU": "yes"}, ["CUGRADE_NO_GPU=yes", "0|1"]),
                  ({"CUGRADE_PYTHON": "/opt/python3"}, ["CUGRADE_PYTHON=/opt/python3", "PREFIX/bin/NAME"]),
                  ({"CUGRADE_NCU": "off"}, ["CUGRADE_NCU=off", "an absolute path|none"]),
                  ({"CUGRADE_SANDBOX_USER": "admin"}, ["CUGRADE_SANDBOX_USER=admin", "auto|root|nobody|box"]),
                  ({"CUGRADE_BWRAP": "bwrap"}, ["CUGRADE_BWRAP=bwrap", "absolute path"]),
                  ({"CUGRADE_FRONT_SECONDS": "ten"}, ["CUGRADE_FRONT_SECONDS=ten", "0..3600"])):
    r = run(["prepare", "--root", "/nonexistent"], env)
    ok(r.returncode == 2 and all(w in r.stderr for w in want),
       f"{list(env.items())[0][0]}={list(env.values())[0]}: the runner refuses to start and says "
       f"{' and '.join(want)}", f"rc {r.returncode}\n{r.stderr}")
r = run(["grade", "--help"], {"CUGRADE_COMPILE_NICE": "3", "CUGRADE_NCU": "none"})
ok("CUGRADE_" not in r.stderr, "values in range start it", r.stderr)

# 6. The deleted toggles are set or read nowhere.
left = []
for base in ("runner", "common", "tests", "deploy", "labs", "Makefile"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, base)) if base != "Makefile" else [(ROOT, 0, ["Makefile"])]:
        for fn in files:
            p = os.path.join(dirpath, fn)
            if p == os.path.abspath(__file__) or "/fixtures/" in p:
                continue
            try:
                with open(p, encoding="utf-8") as f:
                    t = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            left += [f"{os.path.relpath(p, ROOT)}: {n}" for n in DELETED if re.search(n + r"\b", t)]
ok(not left, "the deleted toggles are used nowhere (runner, tests, deploy, labs)", "\n".join(left))

sys.exit(1 if failures() else 0)
