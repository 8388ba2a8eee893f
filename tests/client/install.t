#!/usr/bin/env python3
# The student client installs the two documented ways and needs nothing but
# the standard library: `pip install ./client` (here offline: a venv that
# sees Debian's python3-setuptools and python3-wheel, --no-build-isolation
# --no-index, so nothing is downloaded) gives a `cugrade` command that signs
# in and lists against the real server; copying the one file and running it
# with `python3 -S` (no site-packages at all) works too; every module-level
# import of client/cugrade.py is in the standard library, and IPython is
# imported only inside the notebook functions.
import ast
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_test import Tap, require_binary, open_server, Cli, CLIENT, CLIENT_DIR  # noqa: E402

DEBIAN_PY = "/usr/bin/python3"


def check_imports(t):
    with open(CLIENT) as f:
        tree = ast.parse(f.read())
    top, inner = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            (top if node.col_offset == 0 else inner).update(n.split(".")[0] for n in names)
    std = getattr(sys, "stdlib_module_names", None)
    if std is None:
        t.skip("module-level imports are in the standard library", "Python < 3.10")
    else:
        t.eq(sorted(top - set(std)), [], "every module-level import is in the standard library",
             sorted(top))
    t.eq(sorted(inner - set(std or top)), ["IPython"],
         "IPython is the only other import, inside the notebook functions")


def main(t):
    check_imports(t)
    tmp = tempfile.mkdtemp(prefix="cugrade-install-")
    try:
        one = os.path.join(tmp, "one")
        os.makedirs(one)
        shutil.copy(CLIENT, one)
        r = subprocess.run([DEBIAN_PY, "-S", "-I", os.path.join(one, "cugrade.py"), "--help"],
                           capture_output=True, text=True, cwd=one)
        t.ok(r.returncode == 0 and "submit" in r.stdout and "scoreboard" in r.stdout,
             "the copied file runs with python3 -S -I (no site-packages)", r.stdout + r.stderr)

        src = os.path.join(tmp, "client")
        shutil.copytree(CLIENT_DIR, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                       "__pycache__"))
        venv = os.path.join(tmp, "venv")
        r = subprocess.run([DEBIAN_PY, "-m", "venv", "--system-site-packages", venv],
                           capture_output=True, text=True)
        t.eq(r.returncode, 0, "python3 -m venv --system-site-packages", r.stderr)
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation",
                            "--no-index", "--no-deps", src], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        t.eq(r.returncode, 0, "pip install --no-build-isolation --no-index ./client",
             r.stdout[-1500:] + r.stderr[-1500:])
        exe = os.path.join(venv, "bin", "cugrade")
        t.ok(os.access(exe, os.X_OK), "the package installs a `cugrade` command")
        r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import cugrade; print(cugrade.__file__); "
                            "print(callable(cugrade.load_ipython_extension))"],
                           capture_output=True, text=True, cwd=tmp)
        lines = r.stdout.split()
        t.ok(len(lines) == 2 and lines[0].startswith(venv) and lines[1] == "True",
             "`import cugrade` finds the installed module and its %load_ext hook",
             r.stdout + r.stderr)

        s = open_server(t)
        cli = Cli()
        r = subprocess.run([exe, "login", "--server", s.url, "--token-stdin"],
                           input=s.tok["bob_z3"] + "\n", capture_output=True, text=True,
                           env=cli.env, cwd=cli.home)
        t.ok(r.returncode == 0 and "as bob_z3" in r.stdout,
             "the installed command signs in against the real server", r.stdout + r.stderr)
        s.submit("open", b"__global__ void k() {}\n", token="bob_z3")
        r = subprocess.run([exe, "list"], capture_output=True, text=True, env=cli.env,
                           cwd=cli.home)
        t.ok(r.returncode == 0 and " open " in r.stdout and "queued" in r.stdout,
             "...and lists bob's queued submission", r.stdout + r.stderr)
        cli.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
