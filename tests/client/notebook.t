#!/usr/bin/env python3
# The notebook magic through Debian's IPython (python3-ipython) against the
# real server and the fake runner: `%load_ext cugrade`, then
# `%%cugrade submit LAB`: the cell's language sniffed (.cu / .py) or taken
# from --lang, the live progress shown in one display updated in place (the
# runner moves on only after each state was rendered), the final HTML (tests
# and cases tables, the speed chart as inline SVG, hints; every server
# string escaped), errors as a message box, the text fallback of a terminal
# IPython. Then a real .ipynb executed by `jupyter nbconvert --execute --to
# html` (Debian's jupyter-nbconvert and python3-ipykernel). The screenshot
# notebook-magic.png (Debian's chromium, tests/client/notebook_shot.js; in
# $CUGRADE_BUILD/screenshots/, with CUGRADE_SCREENSHOTS=1 the committed one
# in tests/pages/screenshots/) is of a second notebook against the repo's
# labs: a `%%cugrade test reduction` cell (the Python reduction in Numba's
# simulator, no GPU here) and a `%%cugrade submit reduction` cell.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_test import (Tap, Server, require_binary, canned_result, open_server, Cli, Lines,  # noqa
                         CLIENT_DIR, ROOT, HERE)

DEBIAN_PY = "/usr/bin/python3"
NBCONVERT = "/usr/bin/jupyter-nbconvert"
# The committed screenshot only with CUGRADE_SCREENSHOTS=1 (as the page
# suites): a plain run leaves the checkout clean.
SHOT = (os.path.join(ROOT, "tests", "pages", "screenshots", "notebook-magic.png")
        if os.environ.get("CUGRADE_SCREENSHOTS") == "1" else
        os.path.join(os.environ.get("CUGRADE_BUILD") or os.path.join(ROOT, "build"),
                     "screenshots", "notebook-magic.png"))
CUDA_CELL = """#include <cuda_runtime.h>

// one thread per element
__global__ void vadd_kernel(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void vadd(const float* a, const float* b, float* c, int n)
{
    vadd_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
"""
PY_CELL = """import numpy as np
from numba import cuda

@cuda.jit
def vadd_kernel(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] + b[i]
"""
HOSTILE = '<script>alert("x")</script>'


def ipython(cli, mode, cell, env=None):
    """Popen of tests/client/ipython_cell.py under Debian's python3."""
    e = dict(cli.env)
    e["PYTHONPATH"] = CLIENT_DIR
    e.update(env or {})
    p = subprocess.Popen([DEBIAN_PY, os.path.join(HERE, "ipython_cell.py"), mode],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=e, cwd=cli.home)
    p.stdin.write(cell)
    p.stdin.close()
    return p


def shown(words):
    """A Lines predicate: a PUB line whose HTML contains every one of words."""
    def pred(line):
        if not line.startswith("PUB "):
            return False
        html = json.loads(line[4:]).get("html") or ""
        return all(w in html for w in words)
    return pred


def pubs(lines):
    """Every PUB line's object (a prompt without a newline may precede one)."""
    return [json.loads(l[l.index("PUB ") + 4:]) for l in lines.seen if "PUB {" in l]


def last(lines):
    for l in reversed(lines.seen):
        if l.startswith("LAST "):
            return json.loads(l[5:])
    return None


def hostile_result(job):
    doc = canned_result(job, score=72.5)
    doc["cugrade"]["hints"] = ["Use float4 loads. " + HOSTILE]
    doc["cugrade"]["cases"].append({"name": "<img src=x onerror=alert(1)>", "passed": True,
                                    "max_abs_err": 1e-7, "max_rel_err": 2e-7,
                                    "first_bad_index": None, "unwritten": 0, "message": ""})
    return doc


def check_rich(t, s, cli, run):
    p = ipython(cli, "rich", "%%cugrade submit open --interval 0.2\n" + CUDA_CELL)
    lines = Lines(p.stdout)
    t.ok(lines.wait(shown(['data-status="queued"', "waiting in the queue", "position 1"]), 60),
         "the magic shows the submission queued, its queue position", "".join(lines.seen[-3:]))
    job = run.claim(wait=20)
    t.eq(job and job["filename"], "cell.cu", "a CUDA cell is sniffed and sent as cell.cu")
    t.eq(job and job["source"], CUDA_CELL, "the server got the cell's body, without the magic line")
    run.progress(job["id"], "checking", "1/2")
    got = lines.wait(shown(['data-status="checking"']))
    got = got and json.loads(got[4:])["html"]
    t.ok(got and "checking correctness, case 1/2" in got,
         "the live display shows checking, case 1/2", got)
    t.ok(got and re.search(r'<li class="done"[^>]*>compiling</li>'
                           r'<li class="now"[^>]*>checking correctness</li>', got),
         "...with compiling done and 'checking correctness' the current phase", got)
    run.progress(job["id"], "timing", "")
    t.ok(lines.wait(shown(['data-status="timing"', 'aria-valuenow="4"'])),
         "then timing, the progress bar at 4 of 5")
    run.result(job["id"], "graded", hostile_result(job))
    t.ok(lines.wait(lambda l: l.startswith("LAST "), 30), "the cell finishes", p.stderr.read())
    p.wait(30)
    t.eq(p.returncode, 0, "the cell ran without an exception")
    out = pubs(lines)
    ids = {o["display_id"] for o in out}
    t.ok(len(out) >= 4 and len(ids) == 1 and None not in ids,
         "one display, its display_id kept (%d publishes)" % len(out), ids)
    t.ok(not out[0]["update"] and all(o["update"] for o in out[1:]),
         "the first display is created, every later one updates it in place",
         [o["update"] for o in out])
    final = out[-1]["html"] or ""
    t.ok('class="cugrade-result" data-status="graded"' in final, "the final display is the result")
    t.ok("72.5 / 100" in final, "...with the score")
    t.ok('<table class="cugrade-tests"' in final and "correctness: small" in final,
         "...the tests table")
    t.ok('<table class="cugrade-cases"' in final and final.count("<tr>") >= 5,
         "...the correctness cases table")
    svg = re.search(r"<svg class=\"cugrade-chart\".*?</svg>", final)
    t.ok(svg and svg.group(0).count("<rect") == 4 and "your kernel" in svg.group(0)
         and "reference (naive)" in svg.group(0) and "cuBLAS" in svg.group(0),
         "...the speed chart: inline SVG, a bar each for yours, 2 references and cuBLAS",
         svg and svg.group(0)[:400])
    t.ok("reference (naive): yours is 7.40x faster" in final
         and "cuBLAS: yours is 1.37x slower" in final, "...the speed against the references")
    t.ok("Use float4 loads." in final, "...the hints")
    t.ok("<script" not in final and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in final,
         "a hint's <script> is escaped", final[-600:])
    t.ok("<img" not in final and "&lt;img src=x onerror=alert(1)&gt;" in final,
         "a case name's <img onerror> is escaped")
    t.ok('href="%s/submissions/%d"' % (s.url, job["id"]) in final,
         "it links the submission's web page")
    lst = last(lines) or {}
    t.eq((lst.get("status"), lst.get("id")), ("graded", job["id"]),
         "cugrade.last is the final submission object")
    with open(os.path.join(s.dir, "magic.html"), "w") as f:
        f.write(final)


def check_python_cell(t, s, cli, run):
    p = ipython(cli, "rich", "%%cugrade submit open --no-watch\n" + PY_CELL)
    lines = Lines(p.stdout)
    lines.rest(60)
    p.wait(30)
    html = " ".join(o["html"] or "" for o in pubs(lines))
    if "Submitted cell.py" in html:
        job = run.claim(wait=10)
        t.eq(job and job["filename"], "cell.py", "a Python cell is sniffed and sent as cell.py")
        run.grade(job)
    else:
        t.ok("cugrade-error" in html and "cell.py" in html and "400" in html,
             "a Python cell is sniffed and sent as cell.py (this server refuses .py: its "
             "message is shown)", html)

    p = ipython(cli, "rich", "%%cugrade submit open --no-watch\nx = 1\n")
    lines = Lines(p.stdout)
    lines.rest(60)
    p.wait(30)
    html = " ".join(o["html"] or "" for o in pubs(lines))
    t.ok("cannot tell whether this cell is CUDA C or Python" in html and "--lang" in html,
         "a cell that is neither: a message saying to add --lang", html)

    p = ipython(cli, "rich", "%%cugrade submit open --no-watch --lang cu\nint x;\n")
    lines = Lines(p.stdout)
    lines.rest(60)
    p.wait(30)
    job = run.claim(wait=10)
    t.eq(job and job["filename"], "cell.cu", "--lang cu names an unsniffable cell cell.cu")
    if job:
        run.grade(job)


def check_errors_and_text(t, s, cli, run):
    p = ipython(cli, "rich", "%%cugrade submit open\n" + CUDA_CELL,
                env={"CUGRADE_SERVER": s.url, "CUGRADE_TOKEN": "cgs_" + "2" * 64})
    lines = Lines(p.stdout)
    lines.rest(60)
    p.wait(30)
    html = " ".join(o["html"] or "" for o in pubs(lines))
    t.ok('class="cugrade-error"' in html and "401" in html and "cugrade login" in html,
         "a wrong token ($CUGRADE_TOKEN): an error box with the 401 and what to do", html)
    t.eq(p.returncode, 0, "...and no exception in the notebook")

    p = ipython(cli, "rich", "%cugrade login\n")
    lines = Lines(p.stdout)
    lines.rest(60)
    p.wait(30)
    html = " ".join(o["html"] or "" for o in pubs(lines))
    t.ok('class="cugrade-error"' in html and "cannot ask" in html and "in a terminal" in html,
         "%cugrade login where no input can be read: a message, no traceback", html)
    t.eq(p.returncode, 0, "...and the cell does not fail")

    th = threading.Thread(target=lambda: run.grade(run.claim(wait=30)), daemon=True)
    th.start()
    p = ipython(cli, "text", "%%cugrade submit open --interval 0.2\n" + CUDA_CELL)
    lines = Lines(p.stdout)
    out = lines.rest(60)
    p.wait(30)
    th.join(30)
    t.ok("Submitted cell.cu to open: submission #" in out
         and re.search(r"^\[\d+:\d\d\] #\d+ open \[#+-*\] ", out, re.M),
         "terminal IPython: plain progress lines", out)
    t.ok("Tests:" in out and "Correctness cases:" in out and "7.40x faster" in out,
         "terminal IPython: the text result", out)
    t.ok("<table" not in out and "IPython.core.display.HTML" not in out,
         "terminal IPython: no HTML printed as text", out)


def notebook_result(job):
    """A result as the real runner writes it for the open lab (two visible
    cases, sanitizers, a speed tier reached, one missed)."""
    doc = canned_result(job, score=90, speedup=0.72)
    doc["output"] = "2 of 2 correctness cases passed; sanitizers clean; 1.39x cuBLAS's time."
    doc["tests"] = [
        {"name": "correctness: small", "score": 10, "max_score": 10, "status": "passed",
         "output": "max abs err 0 (n = 1000)", "visibility": "visible"},
        {"name": "correctness: big", "score": 20, "max_score": 20, "status": "passed",
         "output": "max abs err 0 (n = 16777216)", "visibility": "visible"},
        {"name": "sanitizer (memcheck, racecheck)", "score": 10, "max_score": 10,
         "status": "passed", "output": "clean", "visibility": "visible"},
        {"name": "speed vs cuBLAS", "score": 50, "max_score": 60, "status": "passed",
         "output": "1.39x cuBLAS's time: tier 'within 2x of cuBLAS'", "visibility": "visible"}]
    doc["cugrade"]["cases"] = [
        {"name": "small", "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
         "first_bad_index": None, "unwritten": 0, "message": ""},
        {"name": "big", "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
         "first_bad_index": None, "unwritten": 0, "message": ""}]
    doc["cugrade"]["timing"].update(student_ms=0.118, reference_ms={"naive": 0.21,
                                                                    "optimized": 0.102},
                                    cublas_ms=0.085, metric_value=1.39, gflops=None,
                                    bandwidth_gbs=1706.3)
    doc["cugrade"]["hints"] = ["Your kernel is within 2x of cuBLAS: a grid-stride loop with "
                               "float4 loads may close the rest of the gap."]
    doc["score"] = 90
    return doc


NOTEBOOK_CELLS = [
    ("markdown", "# Lab: vector add\nWrite the kernel in the cell below and run it: "
                 "`%%cugrade submit` sends it to the grader."),
    ("code", "%load_ext cugrade"),
    ("code", "%%cugrade submit open\n" + CUDA_CELL),
]


def execute_notebook(t, cli, run, cells, name, result, timeout=120):
    """cells ((kind, source), ...) as NAME.ipynb executed by `jupyter
    nbconvert --execute --to html` with the client on its path; the fake
    runner grades the one submission its cells make with result(job).
    Returns (path of NAME.html or None, the job the runner claimed)."""
    if not os.access(NBCONVERT, os.X_OK):
        t.ok(False, "jupyter-nbconvert is installed (Debian: jupyter-nbconvert "
                    "python3-ipykernel; deploy/install-deps.sh test)")
        return None, {}
    tmp = tempfile.mkdtemp(prefix="cugrade-nb-")
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}},
          "cells": [dict({"cell_type": k, "metadata": {}, "source": src,
                          "id": "cell%d" % i},
                         **({"outputs": [], "execution_count": None} if k == "code" else {}))
                    for i, (k, src) in enumerate(cells)]}
    path = os.path.join(tmp, name + ".ipynb")
    with open(path, "w") as f:
        json.dump(nb, f)
    box = {}

    def grade():
        job = run.claim(wait=timeout + 60)
        box["job"] = job
        if job:
            for ph, d in (("compiling", ""), ("checking", "1/2"), ("checking", "2/2"),
                          ("running", "memcheck"), ("timing", "")):
                run.progress(job["id"], ph, d)
            run.result(job["id"], "graded", result(job))
    th = threading.Thread(target=grade, daemon=True)
    th.start()
    env = dict(cli.env)
    env.update(PYTHONPATH=CLIENT_DIR, JUPYTER_CONFIG_DIR=os.path.join(tmp, "jcfg"),
               JUPYTER_DATA_DIR=os.path.join(tmp, "jdata"),
               JUPYTER_RUNTIME_DIR=os.path.join(tmp, "jrun"), IPYTHONDIR=os.path.join(tmp, "ipy"),
               PATH="/usr/bin:/bin")
    r = subprocess.run([NBCONVERT, "--execute", "--to", "html", "--output-dir", tmp,
                        "--ExecutePreprocessor.timeout=%d" % timeout, path],
                       capture_output=True, text=True, env=env, timeout=timeout + 80)
    th.join(30)
    t.eq(r.returncode, 0, "jupyter nbconvert --execute --to html runs the notebook %s" % name,
         r.stderr[-2000:])
    out = os.path.join(tmp, name + ".html")
    return (out if os.path.exists(out) else None), box.get("job") or {}


def check_nbconvert(t, s, cli, run):
    out, job = execute_notebook(t, cli, run, NOTEBOOK_CELLS, "vadd", notebook_result,
                                  timeout=300)  # a loaded CI host: the kernel and its first cell are slow
    html = open(out, encoding="utf-8").read() if out else ""
    t.eq(job.get("filename"), "cell.cu", "the notebook's cell reached the runner as cell.cu")
    t.ok('class="cugrade-result" data-status="graded"' in html and "90 / 100" in html,
         "the executed notebook shows the graded result inline", html[-2000:])
    t.ok('<table class="cugrade-tests"' in html and '<svg class="cugrade-chart"' in html,
         "...with the tests table and the speed chart")
    t.ok("Submitting..." not in html and 'data-status="queued"' not in html,
         "the live display was updated in place (no stale progress left in the notebook)")
    return out


PYSOL = os.path.join(ROOT, "tests", "gpu", "solutions-py", "reduction")


def reduction_cell():
    """A Python reduction the simulator runs in seconds (its expect: line,
    a marker for the GPU suite, left out)."""
    with open(os.path.join(PYSOL, "naive_numba.py")) as f:
        return "".join(ln for ln in f if not ln.startswith("# expect:")).strip() + "\n"


def reduction_result(job):
    """A result as the runner writes it for the reduction (the visible
    cases passed, the hidden one's line kept for the page's filter, the
    speedup and bandwidth lines each at a lower tier)."""
    doc = canned_result(job, score=75, max_score=90, speedup=57.0)
    doc["output"] = "6 of 6 correctness cases passed. speedup_vs_cpu 57 on 2^28 (0.91 ms)."
    cases = [("1", 5), ("1000", 5), ("2^20+7", 10), ("2^26", 10), ("2^28", 5), ("2.5e9", 10)]
    doc["tests"] = [{"name": "correctness: %s" % n, "score": p, "max_score": p, "status": "passed",
                     "output": "correct; max abs err 0", "visibility":
                     "after_due_date" if n == "2^26" else "visible"} for n, p in cases]
    doc["tests"] += [
        {"name": "sanitizer (memcheck, racecheck)", "score": 10, "max_score": 10,
         "status": "passed", "output": "memcheck: clean; racecheck: clean", "visibility": "visible"},
        {"name": "speedup over one CPU thread", "score": 8, "max_score": 15, "status": "passed",
         "output": "speedup_vs_cpu = 57: 30x faster than one CPU thread", "visibility": "visible"},
        {"name": "share of copy bandwidth", "score": 12, "max_score": 20, "status": "passed",
         "output": "bandwidth_share = 0.71: 60% of copy bandwidth", "visibility": "visible"}]
    doc["cugrade"]["cases"] = [{"name": n, "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
                                "first_bad_index": None, "unwritten": 0, "message": ""}
                               for n, _ in cases]
    doc["cugrade"]["timing"].update(student_ms=0.91, reference_ms={"naive": 6.2, "optimized": 0.68},
                                    cublas_ms=None, cpu_ms=52.0, metric="speedup_vs_cpu",
                                    metric_value=57.0, metric_text="57x",
                                    metric_label="speedup over one CPU thread (higher is better)",
                                    gflops=None, bandwidth_gbs=2840.0)
    doc["cugrade"]["hints"] = ["Neighbouring threads read 16 KiB apart: let thread i read "
                               "element i of each block-sized stride (coalesced loads)."]
    return doc


TEST_SUBMIT_CELLS = [
    ("markdown", "# Lab 1: parallel sum\nTest the kernel on your own GPU first: "
                 "`%%cugrade test` runs the grader's harness on the public cases. Then "
                 "`%%cugrade submit` sends the same cell to the grader."),
    ("code", "%load_ext cugrade"),
    ("code", "%%cugrade test reduction\n" + reduction_cell()),
    ("code", "%%cugrade submit reduction\n" + reduction_cell()),
]


def repo_server(t):
    """A started Server with the repo's labs and their public bundle (what
    `cugrade test` fetches), and the default users."""
    s = Server(labs="repo", tap=t, start=False)
    shutil.copytree(os.path.join(ROOT, "labs", "common"), os.path.join(s.labs_dir, "common"),
                    dirs_exist_ok=True)  # Server(labs="repo") put allow.json there
    shutil.copy(os.path.join(ROOT, "labs", "bundle.json"), s.labs_dir)
    s.init()
    s.start()
    s.add_users(s.DEFAULT_USERS)
    return s


def check_test_and_submit(t):
    """The notebook of the screenshot: a %%cugrade test cell (the Python
    reduction in Numba's simulator: no GPU here) and a %%cugrade submit
    cell of the same code, against the repo's labs."""
    s = repo_server(t)
    cli = Cli()
    try:
        r = cli.login(s, "alice_q7")
        t.eq(r.returncode, 0, "cugrade login to the server with the repo's labs", r.stderr)
        out, job = execute_notebook(t, cli, s.runner(), TEST_SUBMIT_CELLS, "reduction",
                                    reduction_result, timeout=400)
        html = open(out, encoding="utf-8").read() if out else ""
        t.ok('class="cugrade-test"' in html and "local, public cases only, not a grade" in html and
             "simulator" in html, "the %%cugrade test cell shows the local table (public cases, "
             "not a grade, in the simulator)", html[-3000:])
        t.eq(job.get("filename"), "cell.py", "...and the submit cell reached the runner as cell.py")
        t.ok('class="cugrade-result" data-status="graded"' in html and "75 / 90" in html,
             "...and shows the graded result inline", html[-2000:])
        t.ok(re.search(r">hidden tests<.*?>10 / 10<", html, re.S),
             "...where the hidden case (2^26, shown after the due date) is one row of 10 points, "
             "so the rows add up to 75 / 90")
        return out
    finally:
        cli.cleanup()
        s.stop()


def check_screenshot(t, html_path):
    node = shutil.which("node")
    if not html_path or not node:
        t.ok(False, "node and the executed notebook's HTML are there for the screenshot")
        return
    os.makedirs(os.path.dirname(SHOT), exist_ok=True)
    if os.path.exists(SHOT):
        os.unlink(SHOT)
    r = subprocess.run([node, os.path.join(HERE, "notebook_shot.js"), html_path, SHOT],
                       capture_output=True, text=True, timeout=120)
    info = {}
    try:
        info = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    t.eq(r.returncode, 0, "chromium renders the executed notebook", r.stdout + r.stderr)
    t.ok(info.get("rows", 0) >= 6 and info.get("bars", 0) >= 3 and info.get("height", 0) > 300,
         "the rendered result has the table rows, the chart's bars and takes room", info)
    t.ok(info.get("test_cell") and "not a grade" in info.get("test_text", ""),
         "the screenshot starts at the %%cugrade test cell and its local table", info)
    t.ok(os.path.exists(SHOT) and os.path.getsize(SHOT) > 10000,
         "screenshot saved: %s" % SHOT)


def main(t):
    s = open_server(t)
    run = s.runner()
    cli = Cli()
    r = cli.login(s, "alice_q7")
    t.eq(r.returncode, 0, "cugrade login (the magic reads the same config)", r.stderr)
    p = subprocess.run([DEBIAN_PY, "-c", "import IPython; print(IPython.__version__)"],
                       capture_output=True, text=True)
    if not t.ok(p.returncode == 0, "Debian's python3-ipython is installed (%s)"
                % p.stdout.strip(), p.stderr):
        return
    check_rich(t, s, cli, run)
    check_python_cell(t, s, cli, run)
    check_errors_and_text(t, s, cli, run)
    check_nbconvert(t, s, cli, run)
    cli.cleanup()
    s.stop()
    check_screenshot(t, check_test_and_submit(t))


t = Tap()
require_binary(t)
t.run(main)
t.exit()
