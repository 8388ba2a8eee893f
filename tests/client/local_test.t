#!/usr/bin/env python3
# The student's loop on their own machine, against the real server with the
# repo's labs and labs/bundle.json:
#   - the served client (GET /client/cugrade.py) in a fresh venv signs in
#     with `python3 cugrade.py login URL`; an older copy is told that the
#     server has a newer client and how to get it;
#   - `cugrade test` on tests/gpu/solutions-py/reduction files in Numba's
#     simulator gives, case for case, the verdict the real runner gives the
#     same file in the simulator (tests/runner/python/simlab.py: the runner,
#     its sandbox, the owner and CI's judge);
#   - `cugrade test` on every tests/gpu/solutions/*/*.cu: compile_error and
#     rejected (with the same symbol) exactly where the grader says so
#     (their `expect:` lines, checked on the GPU host by make test-gpu),
#     every other file compiles, passes the inspection and links with the
#     lab's harness, and says that nothing ran for want of a GPU;
#   - what this machine lacks is named with what to do: no NumPy/Numba, no
#     nvcc, an nvcc older than CUDA 12; a bundle whose file does not match
#     its SHA-256 is refused; a bundle changed on the server is fetched again.
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "runner", "python"))
from client_test import Tap, Server, require_binary, Cli, CLIENT, ROOT  # noqa: E402

DEBIAN_PY = "/usr/bin/python3"
PYSOL = os.path.join(ROOT, "tests", "gpu", "solutions-py", "reduction")
CUSOL = os.path.join(ROOT, "tests", "gpu", "solutions")
# Files the simulator runs in seconds (the others launch grids of 10^5+
# threads, each a Python thread there). Together: pass, fail on both cases,
# a compile error, an exception in the student's function.
PY_FILES = ["naive_numba.py", "wrong_tail.py", "small_grid.py", "no_bounds.py",
            "syntax_error.py", "cached.py", "bug_threads2048.py"]


def repo_server(t):
    s = Server(labs="repo", tap=t, start=False)
    shutil.copytree(os.path.join(ROOT, "labs", "common"), os.path.join(s.labs_dir, "common"),
                    dirs_exist_ok=True)
    shutil.copy(os.path.join(ROOT, "labs", "bundle.json"), s.labs_dir)
    s.init()
    s.start()
    s.add_users(s.DEFAULT_USERS)
    return s


def served_client(t, s, tmp):
    served = urllib.request.urlopen(s.url + "/client/cugrade.py", timeout=20).read()
    venv = os.path.join(tmp, "venv")
    r = subprocess.run([DEBIAN_PY, "-m", "venv", venv], capture_output=True, text=True)
    t.eq(r.returncode, 0, "python3 -m venv (a fresh one, no system packages)", r.stderr)
    path = os.path.join(tmp, "cugrade.py")
    with open(path, "wb") as f:
        f.write(served)
    cli = Cli(python=os.path.join(venv, "bin", "python"))
    r = subprocess.run([cli.python, path, "login", s.url, "--token-stdin"],
                       input=s.tok["alice_q7"] + "\n", capture_output=True, text=True,
                       env=cli.env, cwd=tmp, timeout=60)
    t.ok(r.returncode == 0 and "as alice_q7" in r.stdout and "newer client" not in r.stderr,
         "the served client, run by the venv's python, signs in with `login URL` (and its "
         "version is the server's: no warning)", r.stdout + r.stderr)
    old = os.path.join(tmp, "old", "cugrade.py")
    os.makedirs(os.path.dirname(old))
    with open(old, "wb") as f:
        f.write(re.sub(rb'\n__version__ = "[^"]+"', b'\n__version__ = "0.0.1"', served))
    r = subprocess.run([cli.python, old, "login", s.url, "--token-stdin"],
                       input=s.tok["alice_q7"] + "\n", capture_output=True, text=True,
                       env=cli.env, cwd=tmp, timeout=60)
    t.ok(r.returncode == 0 and "the server has a newer client" in r.stderr and
         "curl -O %s/client/cugrade.py" % s.url in r.stderr,
         "an older client is told that the server has a newer one, with the curl line",
         r.stdout + r.stderr)
    # No NumPy/Numba in that venv: `test` says so and what to do.
    r = subprocess.run([cli.python, path, "test", "reduction",
                        os.path.join(PYSOL, "naive_numba.py")], capture_output=True, text=True,
                       env=cli.env, cwd=tmp, timeout=120)
    t.ok(r.returncode == 4 and "NumPy is not installed" in r.stderr and "pip install" in r.stderr,
         "a Python without NumPy/Numba: exit 4, named, with what to install", r.stdout + r.stderr)
    cli.cleanup()


def local(cli, lab, path, *extra, env=None):
    r = cli.run("test", lab, path, "--json", *extra, timeout=600, env=env)
    try:
        return json.loads(r.stdout), r
    except ValueError:
        return {"status": "unparsable"}, r


def check_python(t, cli):
    import simlab
    simlab.need()
    tmp, root = simlab.make_root()
    for name in PY_FILES:
        src = open(os.path.join(PYSOL, name)).read()
        doc, err = simlab.grade(tmp, root, name, src)
        mine, r = local(cli, "reduction", os.path.join(PYSOL, name))
        server = {n: bool(c.get("passed")) for n, c in simlab.cases(doc).items()}
        here = {n: bool(c.get("passed")) for n, c in (mine.get("cases") or {}).items()}
        if doc.get("status") == "compile_error":
            t.ok(mine.get("status") == "compile_error" and r.returncode == 2,
                 "%s: a compile_error on the runner and here" % name, r.stdout + r.stderr)
            continue
        t.ok(doc.get("status") == "graded" and server and here == server and
             mine.get("sim") and r.returncode == (0 if all(server.values()) else 1),
             "%s: the runner's verdicts in the simulator %s, and the same here" % (name, server),
             "runner: %s %s\nlocal: %s\n%s" % (doc.get("status"), server, here,
                                               r.stdout[-2000:] + r.stderr[-1000:]))
    shutil.rmtree(tmp, ignore_errors=True)
    r = cli.run("test", "reduction", os.path.join(PYSOL, "wrong_tail.py"), timeout=600)
    t.ok(r.returncode == 1 and "local, public cases only, not a grade" in r.stdout and
         "Numba's CUDA simulator (no GPU here" in r.stdout and "FAIL" in r.stdout and
         "2^20+7" in r.stdout and "2^26" not in r.stdout,
         "the text says local/public/not a grade, the simulator and why, the table, the cases "
         "too large for the simulator; never the hidden case", r.stdout + r.stderr)


def check_notebook(t, cli):
    """%%cugrade test LAB in IPython (tests/client/ipython_cell.py, rich)."""
    e = dict(cli.env, PYTHONPATH=os.path.dirname(CLIENT))
    cell = "%%cugrade test reduction\n" + open(os.path.join(PYSOL, "wrong_tail.py")).read()
    r = subprocess.run([DEBIAN_PY, os.path.join(HERE, "ipython_cell.py"), "rich"], input=cell,
                       capture_output=True, text=True, env=e, cwd=cli.home, timeout=600)
    html = " ".join((json.loads(ln[4:]).get("html") or "") for ln in r.stdout.splitlines()
                    if ln.startswith("PUB "))
    t.ok("local, public cases only, not a grade" in html and "cell.py" in html and
         "FAIL" in html and "simulator" in html,
         "%%cugrade test reduction: the cell runs locally, its table shown below it",
         r.stdout[-2000:] + r.stderr[-1000:])


def expect(path):
    with open(path) as f:
        m = re.search(r"expect:.*?status=(\w+)(?:.*?symbol=(\S+))?", f.read(2000))
    return (m.group(1), m.group(2)) if m else (None, None)


def check_cuda(t, cli):
    jobs = []
    for lab in sorted(os.listdir(CUSOL)):
        for name in sorted(os.listdir(os.path.join(CUSOL, lab))):
            path = os.path.join(CUSOL, lab, name)
            status, symbol = expect(path)
            if name.endswith(".cu") and status is not None:
                jobs.append((lab, name, path, status, symbol))
    # nvcc dominates: a few at once where the host has the cores. The
    # client's compiles of these files go through the suites' nvcc cache
    # when tests/run.sh gives one (tests/tools/nvcc_cached.py; a run again
    # finds them there). This is the suite that compiles every test
    # solution (tests/labs/build.t builds the labs). What is checked here is
    # the client's verdict on them. The last run below finds nvcc by itself.
    env = {}
    if os.environ.get("CUGRADE_TEST_NVCC") and os.environ.get("CUGRADE_TEST_NVCC_CACHE"):
        env.update(NVCC=os.environ["CUGRADE_TEST_NVCC"],
                   CUGRADE_TEST_NVCC_CACHE=os.environ["CUGRADE_TEST_NVCC_CACHE"])
    workers = max(2, min(4, (os.cpu_count() or 2) // 2))
    # The client builds a lab's harness on its first run that compiles and
    # keeps it (a run that finds none builds its own): one such run per lab
    # first, so that the others link with it rather than build it beside it.
    first = {}
    for i, j in enumerate(jobs):
        if j[3] not in ("compile_error", "rejected"):
            first.setdefault(j[0], i)
    order = sorted(first.values()) + [i for i in range(len(jobs)) if i not in first.values()]
    runs = [None] * len(jobs)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for part in (order[:len(first)], order[len(first):]):
            for i, run in zip(part, pool.map(lambda i: local(cli, jobs[i][0], jobs[i][2], env=env),
                                             part)):
                runs[i] = run
    for (lab, name, path, status, symbol), (mine, r) in zip(jobs, runs):
        if mine.get("status") == "unparsable":
            t.diag("server labs: %s" % os.listdir(S[0].labs_dir))
        want = status if status in ("compile_error", "rejected") else "compiled"
        good = mine.get("status") == want
        if want == "rejected" and symbol:
            good = good and symbol in str(mine.get("symbol"))
        t.ok(good and r.returncode == (2 if want != "compiled" else 0),
             "%s/%s: the grader says %s%s; here: %s %s" % (
                 lab, name, status, " (%s)" % symbol if symbol else "", mine.get("status"),
                 mine.get("symbol") or ""),
             r.stdout[-1500:] + r.stderr[-800:])
    r = cli.run("test", "reduction", os.path.join(CUSOL, "reduction", "naive.cu"), timeout=600)
    t.ok(r.returncode == 0 and "no GPU here" in r.stdout and "no case ran" in r.stdout,
         "a .cu without a GPU: compiled, inspected, linked, and it says nothing ran",
         r.stdout + r.stderr)


def check_missing(t, cli, s):
    naive = os.path.join(CUSOL, "reduction", "naive.cu")
    r = cli.run("test", "reduction", naive, env={"NVCC": "/nonexistent/nvcc"})
    t.ok(r.returncode == 4 and "not an executable nvcc" in r.stderr and
         "CUDA toolkit 12" in r.stderr, "no nvcc: exit 4, with what to install",
         r.stdout + r.stderr)
    tmp = tempfile.mkdtemp(prefix="cugrade-oldnvcc-")
    fake = os.path.join(tmp, "nvcc")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'Cuda compilation tools, release 11.4, V11.4.152'\n")
    os.chmod(fake, 0o755)
    r = cli.run("test", "reduction", naive, env={"NVCC": fake})
    t.ok(r.returncode == 4 and "CUDA 11.4" in r.stderr and "12 or newer" in r.stderr,
         "an nvcc older than CUDA 12: exit 4, named", r.stdout + r.stderr)
    shutil.rmtree(tmp, ignore_errors=True)
    sys.path.insert(0, os.path.dirname(CLIENT))
    import cugrade
    doc = json.loads(s.get("/api/labs/reduction/bundle", token="alice_q7").body)
    t.eq(cugrade.bundle_verify(doc), doc["version"], "the client accepts the bundle as served")
    doc["files"]["labs/common/py/owner.py"]["text"] += "\n# changed on the way\n"
    try:
        cugrade.bundle_verify(doc)
        t.ok(False, "a bundle file that does not match its SHA-256 is refused")
    except cugrade.CugradeError as e:
        t.ok("does not match its SHA-256" in e.message and e.status == cugrade.EXIT_SYSTEM,
             "a bundle file that does not match its SHA-256 is refused (exit 3)", e.text())
    with open(os.path.join(s.labs_dir, "common", "py", "gen.py"), "a") as f:
        f.write("\n# a newer generator\n")
    r = cli.run("test", "reduction", os.path.join(PYSOL, "syntax_error.py"), timeout=300)
    vers = os.listdir(os.path.join(cli.home, ".cache", "cugrade", "bundles", "reduction"))
    t.ok(r.returncode == 2 and "changed on the server" in r.stderr and len(vers) == 3,
         "a bundle changed on the server is fetched again and said so (cached per version)",
         r.stdout + r.stderr + str(vers))


S = []


def main(t):
    s = repo_server(t)
    S.append(s)
    tmp = tempfile.mkdtemp(prefix="cugrade-local-")
    try:
        served_client(t, s, tmp)
        cli = Cli(python=DEBIAN_PY)
        r = cli.login(s, "alice_q7")
        t.eq(r.returncode, 0, "sign in (Debian's python3: NumPy and Numba)", r.stderr)
        check_python(t, cli)
        check_notebook(t, cli)
        check_cuda(t, cli)
        check_missing(t, cli, s)
        cli.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
