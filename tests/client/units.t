#!/usr/bin/env python3
# The client's pieces without a server: the language sniffing of a notebook
# cell (.cu / .py, a CuPy RawKernel is Python), the exit status of every end
# state, the HTML renderers escaping every string a result document carries
# (a hostile value in each field), the text renderer dropping terminal
# control characters, the messages for each refused request (what to do
# next), and the config file's refusals (a symlink, another mode).
import json
import os
import re
import stat
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_test import Tap, CLIENT_DIR  # noqa: E402
sys.path.insert(0, CLIENT_DIR)
import cugrade  # noqa: E402

EVIL = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


def check_sniff(t):
    cases = [
        ("__global__ void k(float* x) { x[0] = 1; }\n", "cu", "a __global__ kernel"),
        ("#include <cstdio>\nint main() { return 0; }\n", "cu", "an #include"),
        ('extern "C" void f(float* d, int n);\n', "cu", 'extern "C"'),
        ("  #  include <cuda.h>\n", "cu", "an indented # include"),
        ("import numpy as np\n", "py", "an import"),
        ("from numba import cuda\n\n@cuda.jit\ndef k(a):\n    pass\n", "py", "@cuda.jit"),
        ("def reduce_sum(x):\n    return x.sum()\n", "py", "a def"),
        ('import cupy as cp\nk = cp.RawKernel(r"""\nextern "C" __global__ void k() {}\n'
         '""", "k")\n', "py", "a CuPy RawKernel (CUDA C inside a Python string)"),
        ("class Acc : public Base {\n  float s;\n};\n__device__ float f();\n", "cu",
         "a C++ class (not a Python class)"),
        ("class Acc:\n    pass\n", "py", "a Python class"),
        ("x = 1\n", None, "a bare assignment: neither"),
        ("// just a comment\n", None, "a C comment alone: neither"),
        ("", None, "an empty cell"),
    ]
    for src, want, what in cases:
        t.eq(cugrade.sniff_lang(src), want, "sniff: %s -> %s" % (what, want))


def sub(status, **kw):
    d = {"id": 7, "lab": "reduction", "status": status, "score": 50, "max_score": 100,
         "result": {"cugrade": {"cases": [{"name": "1", "passed": True}],
                                "sanitizer": [{"tool": "memcheck", "clean": True}]}}}
    d.update(kw)
    return d


def check_exit_status(t):
    t.eq(cugrade.exit_status(sub("graded")), 0, "exit: graded, cases passed, sanitizer clean: 0")
    bad = sub("graded")
    bad["result"]["cugrade"]["cases"].append({"name": "2^28", "passed": False})
    t.eq(cugrade.exit_status(bad), 1, "exit: graded with a failed case: 1")
    dirty = sub("graded")
    dirty["result"]["cugrade"]["sanitizer"][0]["clean"] = False
    t.eq(cugrade.exit_status(dirty), 1, "exit: graded with a sanitizer finding: 1")
    ours = sub("graded", score=20, max_score=20)
    ours["result"]["cugrade"]["sanitizer"] = [
        {"tool": "memcheck", "ran": False, "clean": False, "runner_problem": True,
         "note": "compute-sanitizer could not start", "findings": []},
        {"tool": "racecheck", "ran": True, "clean": True, "findings": []}]
    t.eq(cugrade.exit_status(ours), 0,
         "exit: a full score whose sanitizer did not run on our side (runner_problem): 0")
    text = cugrade.render_text(ours)
    t.ok("memcheck not run (ours): compute-sanitizer could not start" in text
         and "found problems" not in text and "not your problem" in text,
         "text: a sanitizer not run on our side says 'not run (ours)' and its note", text)
    markup = cugrade.render_html(ours)
    t.ok("not run (ours)" in markup and "problems found" not in markup
         and 'cugrade-badge neutral' in markup,
         "HTML: a sanitizer not run on our side is a neutral 'not run (ours)' badge", markup)
    for st in ("compile_error", "rejected", "runtime_error", "timeout"):
        t.eq(cugrade.exit_status(sub(st, result=None)), 2, "exit: %s: 2" % st)
    t.eq(cugrade.exit_status(sub("system_error", result=None)), 3, "exit: system_error: 3")


def check_structure(t):
    """The text result has the web page's structure (issue 27)."""
    long_tier = "ratio_to_cublas = 3.1: within 4x of cuBLAS; next tier within 2x of cuBLAS for 50 points"
    s = {"id": 9, "lab": "vadd", "status": "graded", "score": 22, "max_score": 70, "result": {
        "tests": [
            {"name": "correctness: small", "score": 0, "max_score": 10, "status": "failed",
             "output": "wrong; c[999] = 0 but expected 1.25 Hint: Check the bounds."},
            {"name": "speed vs cuBLAS", "score": 22, "max_score": 50, "status": "passed",
             "output": long_tier},
            {"name": "sanitizer (memcheck, racecheck)", "score": 0, "max_score": 10,
             "status": "failed", "output": "not run"}],
        "cugrade": {
            "cases": [{"name": "small", "passed": False, "first_bad_index": 999,
                       "message": "c[999] = 0 but expected 1.25"}],
            "hint_details": [{"id": "bounds", "case": "small", "text": "Check the bounds."}],
            "hints": ["Check the bounds."],
            "sanitizer": [{"tool": "racecheck", "ran": True, "clean": False, "findings": [
                {"file": "kernel.cu", "line": 5, "hint": "Put __syncthreads() between.",
                 "message": "Race at 0x7f3a%dc20" % k} for k in range(7)]}],
            "timing": {"student_ms": 0.4, "reference_ms": {"naive": 9.1}, "cublas_ms": None,
                       "cpu_ms": 106}}}}
    text = cugrade.render_text(s)
    t.ok("What to fix first:\n  Case small is wrong from element 999 on: c[999] = 0 but expected "
         "1.25\n  Hint: Check the bounds.\n  Line 5 of kernel.cu." in text,
         "text: 'What to fix first' names the case, its message, the hint and the line", text)
    t.eq(text.count("Check the bounds."), 1, "text: the case's hint appears once")
    t.ok(long_tier in text, "text: a tier's feedback is not cut at 60 characters", text)
    t.ok(" partial " in text and " not run " in text,
         "text: outcomes partial and not run, not 'passed'/'failed'", text)
    t.ok("kernel.cu:5: Race at 0x... (7 times)" in text and text.count("__syncthreads") == 1,
         "text: 7 findings on one line are one line, no raw address, the hint once", text)
    t.ok("cuBLAS" not in text.split("Time (lower is better):")[-1] and "n/a" not in text,
         "text: no cuBLAS n/a row in a lab timed without cuBLAS", text)
    markup = cugrade.render_html(s)
    t.ok('class="cugrade-fix-first"' in markup and "Case small is wrong from element 999 on" in markup,
         "HTML: the notebook leads with what to fix first", markup[:2000])
    t.ok("cugrade-badge warn" in markup and ">partial<" in markup,
         "HTML: partial credit is a 'partial' badge", markup[:2000])
    t.ok(markup.count("(7 times)") == 1 and markup.count("__syncthreads") == 1
         and "0x7f3a" not in markup,
         "HTML: 7 findings on one line are one item, no raw address, the hint once (as the text)",
         markup.split("Sanitizers")[-1][:1500])


def check_stopped_hidden_speed(t):
    """A timeout blames no case that never ran; hidden tests are one row
    so the rows add up; the notebook's chart is on a log scale; no
    trailing zeros (issue 27, as the result page)."""
    why = ("Your program ran past its time limit of 12.0 s while case 1 was running: look for a "
           "loop that never ends or a kernel launched far more often than needed.")
    s = {"id": 3, "lab": "reduction", "status": "timeout", "score": 0, "max_score": 100,
         "result": {"score": 0, "max_score": 100, "output": why, "tests": [
             {"name": "correctness: 1", "score": 0, "max_score": 90, "status": "failed",
              "output": "not run: " + why}], "cugrade": {
             "cases": [{"name": "1", "passed": False, "message": "not run: " + why}],
             "sanitizer": [], "timing": None}}}
    text = cugrade.render_text(s)
    t.ok("What to fix first" not in text and "is wrong" not in text,
         "text: a timeout calls no case that never ran wrong", text)
    t.eq(text.lower().count("loop that never ends"), 1,
         "text: a timeout says where to look once (its summary, not a second general line)", text)
    t.ok("FAILED" not in text.split("Correctness cases:")[-1],
         "text: a case that never ran is 'not run', not FAILED", text)
    markup = cugrade.render_html(s)
    t.ok("cugrade-fix-first" not in markup and ">failed<" not in markup.split("cugrade-cases")[-1],
         "HTML: no 'What to fix first' and no red 'failed' for a case that never ran", markup)
    g = {"id": 4, "lab": "reduction", "status": "graded", "score": 80, "max_score": 100,
         "result": {"score": 80, "max_score": 100, "tests": [
             {"name": "correctness: 1", "score": 70, "max_score": 90, "status": "passed",
              "output": "correct"}], "cugrade": {"cases": [], "sanitizer": [], "timing": {
                  "student_ms": 0.91, "reference_ms": {"naive": 6.2}, "cublas_ms": None,
                  "cpu_ms": 52.0, "speedup": 57.0}}}}
    text = cugrade.render_text(g)
    t.ok(re.search(r"hidden tests\s+hidden\s+10 / 10\s+not shown yet", text),
         "text: the hidden tests are one row, so the rows add up to 80 / 100", text)
    t.ok("ranking 57.00" not in text and "speedup used for ranking 57" in text,
         "text: no trailing zeros (57, not 57.00)", text)
    markup = cugrade.render_html(g)
    t.ok(re.search(r"<td[^>]*>hidden tests</td>.*?10 / 10", markup),
         "HTML: the hidden tests' row", markup)
    widths = [int(w) for w in re.findall(r'<rect [^>]*width="(\d+)"', markup)]
    t.ok(widths and min(widths) >= 0.2 * max(widths) and "log scale" in markup,
         "HTML: the chart is on a log scale: 0.91 ms beside 52 ms is a visible bar (%s)" % widths)


def hostile_sub():
    return {
        "id": EVIL, "lab": EVIL, "status": "graded", "score": 1, "max_score": 2,
        "late": True, "late_days": 1, "late_penalty_percent": 10, "rubric_version": EVIL,
        "result": {"output": EVIL, "tests": [{"name": EVIL, "status": EVIL, "score": 1,
                                              "max_score": 2, "output": EVIL}],
                   "cugrade": {"gpu": EVIL, "compile_log": EVIL,
                               "rejection": {"symbol": EVIL, "reason": EVIL},
                               "cases": [{"name": EVIL, "passed": False, "message": EVIL,
                                          "max_abs_err": 1, "first_bad_index": 3}],
                               "sanitizer": [{"tool": EVIL, "clean": False, "findings": [
                                   {"file": EVIL, "line": 3, "message": EVIL, "hint": EVIL}]}],
                               "timing": {"student_ms": 1, "reference_ms": {EVIL: 2},
                                          "cublas_ms": 3, "flagged": True, "flag_reason": EVIL,
                                          "metric": EVIL, "speedup": 1.5,
                                          "metric_value": 1.37, "metric_label": EVIL,
                                          "metric_text": EVIL},
                               "hints": [EVIL]}}}


def check_escaping(t):
    s = hostile_sub()
    for name, markup in (("result", cugrade.render_html(s, page="http://x/" + EVIL)),
                         ("progress", cugrade.render_progress_html(
                             dict(s, status="checking", detail=EVIL), page=EVIL)),
                         ("error", cugrade.render_error_html(cugrade.CugradeError(EVIL, EVIL)))):
        t.ok("<script" not in markup and "<img" not in markup and EVIL not in markup,
             "HTML %s: every server string is escaped" % name, markup[:600])
    markup = cugrade.render_html(s)
    t.ok(markup.count("&lt;script&gt;") >= 12,
         "HTML result: the hostile value is shown (escaped) in every field (%d times)"
         % markup.count("&lt;script&gt;"))
    text = cugrade.render_text(dict(s, result=dict(s["result"], output="a\x1b[2Jb\x07c\r\nd")))
    t.ok("\x1b" not in text and "\x07" not in text and "a?[2Jb?c\nd" in text,
         "text: terminal control characters become '?'", repr(text[:200]))


def check_metric(t):
    """The primary metric reads as the server's table describes it (label,
    value as shown); the client has no table of its own."""
    timing = {"student_ms": 2, "cublas_ms": 1, "metric": "frobs_per_widget",
              "metric_value": 7.0, "metric_label": "frobs per widget (more is better)",
              "metric_unit": " fpw", "metric_text": "7.00 fpw"}
    s = sub("graded")
    s["result"]["cugrade"]["timing"] = timing
    text = cugrade.render_text(s)
    t.ok("rubric metric frobs_per_widget (frobs per widget (more is better)) = 7.00 fpw" in text,
         "text: a metric the client never heard of shows the server's label and value", text)
    markup = cugrade.render_html(s)
    t.ok("frobs per widget (more is better)" in markup and "7.00 fpw" in markup,
         "HTML: the same, from the result JSON", markup[-1500:])
    old = dict(timing)
    for k in ("metric_label", "metric_unit", "metric_text"):
        del old[k]
    old["metric"], old["metric_value"] = "ratio_to_cublas", 1.37
    s["result"]["cugrade"]["timing"] = old
    text = cugrade.render_text(s)
    t.ok("rubric metric ratio_to_cublas = 1.370" in text,
         "text: a result stored before the labels existed shows the name and the value", text)


def check_api_errors(t):
    def err(status, code, message, headers=None, **extra):
        body = json.dumps({"error": dict({"code": code, "message": message}, **extra)}).encode()
        return cugrade.api_error(status, headers or {}, body)
    e = err(429, "rate_limited", "You submitted 30 times.", {"retry-after": "120"},
            retry_after=120)
    t.ok(e.status == 4 and "You submitted 30 times." in e.message
         and "Try again in 120 seconds" in e.todo, "429: the message and Retry-After", e.text())
    e = err(401, "unauthorized", "Unknown token.")
    t.ok(e.status == 4 and "cugrade login" in e.todo, "401: run cugrade login", e.text())
    e = err(413, "payload_too_large", "at most 256 KiB")
    t.ok(e.status == 4 and "256 KiB" in e.message and "kernel source" in e.todo,
         "413: the limit and what to cut", e.text())
    e = err(403, "deadline_passed", "The hard deadline of matmul was 2026-12-01.")
    t.ok(e.status == 4 and "hard deadline" in e.message, "403 deadline: the server's message")
    e = err(503, "unavailable", "The disk is full.")
    t.ok(e.status == 3 and "not your fault" in e.todo, "5xx: exit 3, not the student's fault")
    e = cugrade.api_error(502, {}, b"<html>Bad gateway</html>")
    t.ok(e.status == 3 and "HTTP 502" in e.message, "a proxy's non-JSON 502: exit 3", e.text())


def check_config(t):
    d = tempfile.mkdtemp(prefix="cugrade-cfg-")
    os.environ["CUGRADE_CONFIG"] = os.path.join(d, "sub", "config.json")
    try:
        path = cugrade.config_save({"server": "http://h:1", "token": "cgs_x"})
        t.eq(stat.S_IMODE(os.stat(path).st_mode), 0o600, "config_save: mode 0600 (umask 022)")
        t.eq(cugrade.config_load()["token"], "cgs_x", "config_load reads it back")
        os.chmod(path, 0o640)
        try:
            cugrade.config_load()
            t.ok(False, "a group-readable config is refused")
        except cugrade.CugradeError as e:
            t.ok("mode 0640" in e.message and "chmod 600" in e.todo,
                 "a group-readable config is refused, with the chmod", e.text())
        os.chmod(path, 0o600)
        link = os.path.join(d, "link.json")
        os.symlink(path, link)
        os.environ["CUGRADE_CONFIG"] = link
        try:
            cugrade.config_load()
            t.ok(False, "a config that is a symlink is refused")
        except cugrade.CugradeError as e:
            t.ok("cannot read" in e.message, "a config that is a symlink is refused", e.text())
    finally:
        os.environ.pop("CUGRADE_CONFIG", None)


def check_polling(t):
    n = cugrade.next_interval
    t.eq(n({"status": "checking"}, None), 1.0, "polling: every second while grading runs")
    t.eq(n({"status": "queued", "eta_seconds": 600}, None), 5.0,
         "polling: every 5 s deep in a queue (ETA 10 min)")
    t.eq(n({"status": "queued", "eta_seconds": None}, None), 3.0,
         "polling: every 3 s while queued without an ETA (no runner, no rate yet)")
    t.eq(n({"status": "queued", "eta_seconds": 600}, 0.2), 0.2, "polling: --interval wins")


def check_local_killed(t):
    """A local run ended by a signal (the OOM killer's SIGKILL leaves no
    message) is named, with what to try, not a silent exit."""
    kill = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    try:
        cugrade.local_run(kill)
        t.ok(False, "a local run killed by SIGKILL: an error names it")
    except cugrade.CugradeError as e:
        t.ok("SIGKILL" in e.message and "out of memory" in e.todo and
             e.status == cugrade.EXIT_SYSTEM,
             "a local run killed by SIGKILL: an error names it and the likely cause (memory)",
             (e.message, e.todo))
    t.ok(cugrade.local_run([sys.executable, "-c", "raise SystemExit(1)"]) == (1, None),
         "and a run that exits passes its status on")
    t.ok(cugrade.local_run([sys.executable, "-c", "print('table'); raise SystemExit(2)"],
                           capture=True) == (2, "table\n"),
         "captured (the notebook's %%cugrade test): its status and output")


def main(t):
    os.umask(0o022)
    check_polling(t)
    check_sniff(t)
    check_exit_status(t)
    check_escaping(t)
    check_structure(t)
    check_stopped_hidden_speed(t)
    check_metric(t)
    check_api_errors(t)
    check_config(t)
    check_local_killed(t)


t = Tap()
t.run(main)
t.exit()
