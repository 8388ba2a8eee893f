#!/usr/bin/env python3
"""CI (no GPU): `cugrade-runner prepare` compiles the Python root's
bytecode where it is missing (runner/grade/python.c python_bytecode_start,
docs/python.md "Bytecode"). The GPU image's venv was installed with
PYTHONDONTWRITEBYTECODE: no .pyc for torch, numpy or sympy, and every
process of ours runs -B, so each one compiled those modules' source at
every import (on an H200 host `import torch` took 5.8-7.0 s of CPU).

A made-up root (PREFIX/bin/python3, a link to Debian's, as a venv's is)
with a package that has no bytecode and a module that does not compile:
after prepare each module that compiles has its .pyc, which an isolated
-B interpreter then loads instead of the source; the broken one is skipped
and prepare still ends; a second prepare rewrites nothing. Prints TAP."""
import functools, importlib.util, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None)

tmp = tempfile.mkdtemp(prefix="cugrade-pyc-")
try:
    os.makedirs(os.path.join(tmp, "root/labs"))
    pyroot = os.path.join(tmp, "pyroot")
    os.makedirs(os.path.join(pyroot, "bin"))
    os.symlink("/usr/bin/python3", os.path.join(pyroot, "bin", "python3"))
    site = os.path.join(pyroot, "lib", "python3", "site-packages")
    pkg = os.path.join(site, "cgpkg")
    os.makedirs(pkg)
    src = {"__init__.py": "VALUE = 1\n", "sub.py": "def f():\n    return 2\n",
           "bad.py": "def f(:\n"}
    for name, text in src.items():
        with open(os.path.join(pkg, name), "w") as f:
            f.write(text)
    pyc = {n: importlib.util.cache_from_source(os.path.join(pkg, n)) for n in src}
    ok(not any(os.path.exists(p) for p in pyc.values()), "the made-up root has no bytecode", str(pyc))

    def prepare():
        env = dict(os.environ, PATH="/usr/bin:/bin", CUGRADE_PYTHON=os.path.join(pyroot, "bin", "python3"))
        p = subprocess.run([RUNNER, "prepare", "--root", os.path.join(tmp, "root"), "--cache",
                            os.path.join(tmp, "cache")], capture_output=True, text=True, env=env,
                           timeout=300)
        return p.returncode, p.stderr

    rc, err = prepare()
    ok(rc == 0 and ("bytecode (%s/lib): compiled where it was missing, but for modules that do "
                    "not compile" % pyroot) in err,
       "prepare compiles the root's bytecode and says so, and that a module did not compile",
       "rc %d\n%s" % (rc, err[-2000:]))
    ok(os.path.exists(pyc["__init__.py"]) and os.path.exists(pyc["sub.py"]),
       "every module that compiles has its .pyc", str(pyc))
    ok(not os.path.exists(pyc["bad.py"]), "a module that does not compile is skipped, and prepare ends",
       err[-1500:])
    v = subprocess.run([os.path.join(pyroot, "bin", "python3"), "-I", "-B", "-v", "-c",
                        "import sys; sys.path.insert(0, %r); import cgpkg.sub; print(cgpkg.sub.f())" % site],
                       capture_output=True, text=True, timeout=60)
    ok(v.stdout.strip() == "2" and ("code object from '%s'" % pyc["sub.py"]) in v.stderr,
       "an isolated -B interpreter (an owner, a tenant) loads the .pyc, not the source",
       v.stdout + "\n".join(l for l in v.stderr.splitlines() if "cgpkg" in l))
    before = os.stat(pyc["sub.py"]).st_mtime_ns
    rc, err = prepare()
    ok(rc == 0 and os.stat(pyc["sub.py"]).st_mtime_ns == before,
       "a second prepare rewrites nothing (the bytecode is up to date)", err[-1000:])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
