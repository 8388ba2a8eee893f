#!/usr/bin/env python3
"""fake_runner - a stand-in for cugrade-runner that speaks the runner protocol
of docs/api.md (claim, progress, result) and posts a canned result document.
No GPU, no compiler: it is for testing the server and the web UI.

As a program:

    tests/tools/fake_runner.py --url http://127.0.0.1:8080 --token cgr_... \
        [--jobs 1] [--wait 5] [--status graded] [--score 72.5] [--max-score 100] \
        [--speedup 1.37] [--phase-delay 0.2] [--no-progress] [--result-file R.json] \
        [--idle-exit 10] [--name host-gpu0]

  handles up to --jobs jobs (0 = forever), printing one JSON line per job:
  {"job": ID, "lab": ..., "status": ..., "score": ..., "http": {...}}.
  It exits 0 when done, 3 when --idle-exit seconds passed with no job,
  2 on a protocol error (unexpected HTTP status).

As a module (tests/server/*.t and the web UI tests):

    from fake_runner import FakeRunner, canned_result
    r = FakeRunner(url, token, name="fake-gpu0")
    job = r.claim(wait=5)                 # dict (the "job" object) or None (204)
    r.progress(job["id"], "checking", "3/6")   # -> Response (200, or 409 when the lease is lost)
    r.result(job["id"], "graded", canned_result(job, score=80))
    r.grade(job, score=80, phase_delay=0.1)    # all phases, then the result

Python 3 stdlib only.
"""

import argparse
import http.client
import json
import sys
import time
import urllib.parse

PHASES = [("compiling", ""), ("checking", "1/2"), ("checking", "2/2"),
          ("running", "memcheck"), ("timing", "")]


class Response:
    """status (int), headers (dict, lower-case keys), body (bytes), json()."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except Exception:  # noqa: BLE001
            return None

    def __repr__(self):
        return "<Response %s %r>" % (self.status, self.body[:200])


def canned_result(job=None, score=72.5, max_score=100.0, speedup=1.37, status="graded",
                  gpu="NVIDIA H100 80GB HBM3 (fake)"):
    """A result document per docs/api.md (a superset of Gradescope's
    results.json) for the claimed job: one visible and one hidden test, a
    compile log, cases, a clean sanitizer and a timing block.  The hidden
    test's name is "hidden: big case" and its output contains the marker
    SECRET-HIDDEN-OUTPUT so tests can check that students never see it."""
    lab = (job or {}).get("lab", "vadd")
    rv = (job or {}).get("rubric_version", 1)
    visible = min(score, 10.0)
    hidden = max(0.0, score - visible)
    doc = {
        "score": score,
        "max_score": max_score,
        "output": "Fake runner: %s with %.1f/%.1f." % (status, score, max_score),
        "tests": [
            {"name": "correctness: small", "score": visible, "max_score": 10,
             "status": "passed", "output": "max abs err 0", "visibility": "visible"},
            {"name": "hidden: big case", "score": hidden, "max_score": max_score - 10,
             "status": "passed", "output": "SECRET-HIDDEN-OUTPUT n=16777216",
             "visibility": "hidden"},
        ],
        "cugrade": {
            "lab": lab, "rubric_version": rv, "gpu": gpu,
            "compile_log": "" if status != "compile_error" else
            "kernel.cu(3): error: identifier \"x\" is undefined",
            "cases": [{"name": "small", "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
                       "first_bad_index": None, "unwritten": 0, "message": ""}],
            "sanitizer": [{"tool": "memcheck", "clean": True, "findings": []},
                          {"tool": "racecheck", "clean": True, "findings": []}],
            "timing": {"student_ms": 1.23, "reference_ms": {"naive": 9.1, "optimized": 1.5},
                       "cublas_ms": 0.9, "cpu_ms": None, "speedup": speedup,
                       "metric": "ratio_to_cublas", "metric_value": 1.37,
                       "bandwidth_gbs": None, "gflops": 1234.5, "samples": 41,
                       "rel_err": 0.004, "flagged": False, "flag_reason": None},
            "hints": ["This is a canned result from tests/tools/fake_runner.py."],
        },
    }
    if status == "rejected":
        doc["cugrade"]["rejection"] = {"symbol": "cublasSgemm",
                                       "reason": "cuBLAS is not allowed in this lab."}
    if status != "graded":
        doc["cugrade"]["timing"] = None
    return doc


class FakeRunner:
    """A runner client.  url: the server's base URL; token: a cgr_ token."""

    def __init__(self, url, token, name="fake-gpu0", gpu="NVIDIA H100 80GB HBM3 (fake)",
                 timeout=45):
        u = urllib.parse.urlsplit(url)
        self.host = u.hostname
        self.port = u.port or 80
        self.token = token
        self.name = name
        self.gpu = gpu
        self.timeout = timeout
        self.last = None            # the last Response
        self.attempts = {}          # job id -> attempt of this runner's claim

    def request(self, method, path, body=None, timeout=None):
        hdrs = {"Authorization": "Bearer " + self.token, "Connection": "close"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)
        try:
            c.request(method, path, body=data, headers=hdrs)
            r = c.getresponse()
            self.last = Response(r.status, r.getheaders(), r.read())
        finally:
            c.close()
        return self.last

    def claim(self, wait=0):
        """POST /api/runner/claim.  Returns the job dict on 200, None on 204;
        raises RuntimeError on any other status (self.last has it)."""
        r = self.request("POST", "/api/runner/claim",
                         {"runner": self.name, "gpu": self.gpu, "wait": wait},
                         timeout=wait + self.timeout)
        if r.status == 204:
            return None
        j = r.json()
        if r.status == 200 and isinstance(j, dict) and isinstance(j.get("job"), dict):
            self.attempts[int(j["job"]["id"])] = j["job"].get("attempt", 1)
            return j["job"]
        raise RuntimeError("claim: unexpected answer %s %r" % (r.status, r.body[:300]))

    def progress(self, job_id, phase, detail=""):
        """POST /api/runner/jobs/ID/progress, naming the lease as result
        does; returns the Response."""
        return self.request("POST", "/api/runner/jobs/%s/progress" % job_id,
                            {"phase": phase, "detail": detail, "runner": self.name,
                             "attempt": self.attempts.get(int(job_id), 1)})

    def release(self, job_id, attempt=None):
        """POST /api/runner/jobs/ID/release (a job handed back), naming the
        lease as progress does; returns the Response."""
        return self.request("POST", "/api/runner/jobs/%s/release" % job_id,
                            {"runner": self.name,
                             "attempt": attempt or self.attempts.get(int(job_id), 1)})

    def result(self, job_id, status="graded", result=None):
        """POST /api/runner/jobs/ID/result, naming the lease (this runner's
        name and the attempt of its claim of job_id; 1 for a job it never
        claimed, so that a non-holder hears 409); returns the Response."""
        return self.request("POST", "/api/runner/jobs/%s/result" % job_id,
                            {"status": status, "runner": self.name,
                             "attempt": self.attempts.get(int(job_id), 1),
                             "result": result if result is not None
                             else canned_result(None, status=status)})

    def grade(self, job, status="graded", score=72.5, max_score=100.0, speedup=1.37,
              phases=None, phase_delay=0.0, result=None, on_phase=None):
        """Report every phase (stops early if one answers non-200), then post
        the result.  phases: list of (phase, detail); None = all of PHASES, or
        only compiling for compile_error/rejected.  on_phase(phase, detail,
        response) is called after each progress call.  Returns the result
        Response (or the failing progress Response)."""
        if phases is None:
            phases = PHASES[:1] if status in ("compile_error", "rejected") else PHASES
        for phase, detail in phases:
            r = self.progress(job["id"], phase, detail)
            if on_phase:
                on_phase(phase, detail, r)
            if r.status != 200:
                return r
            if phase_delay:
                time.sleep(phase_delay)
        doc = result if result is not None else canned_result(
            job, score=score, max_score=max_score, speedup=speedup, status=status,
            gpu=self.gpu)
        return self.result(job["id"], status, doc)

    def run(self, jobs=0, wait=5, idle_exit=None, out=None, **grade_kw):
        """Claim and grade jobs until `jobs` are done (0 = forever) or nothing
        came for idle_exit seconds.  Writes one JSON line per job to out.
        Returns the number of jobs handled."""
        done = 0
        idle_since = time.time()
        while jobs == 0 or done < jobs:
            job = self.claim(wait=wait)
            if job is None:
                if idle_exit is not None and time.time() - idle_since >= idle_exit:
                    break
                continue
            r = self.grade(job, **grade_kw)
            done += 1
            idle_since = time.time()
            if out is not None:
                out.write(json.dumps({"job": job.get("id"), "lab": job.get("lab"),
                                      "attempt": job.get("attempt"),
                                      "status": grade_kw.get("status", "graded"),
                                      "score": grade_kw.get("score", 72.5),
                                      "http": r.status}) + "\n")
                out.flush()
            if r.status != 200:
                raise RuntimeError("job %s: server answered %s %r"
                                   % (job.get("id"), r.status, r.body[:300]))
        return done


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True, help="a runner token (cgr_...)")
    ap.add_argument("--name", default="fake-gpu0", help="runner name sent on claim")
    ap.add_argument("--gpu", default="NVIDIA H100 80GB HBM3 (fake)")
    ap.add_argument("--jobs", type=int, default=1, help="jobs to handle, 0 = forever")
    ap.add_argument("--wait", type=int, default=5, help="long-poll seconds per claim")
    ap.add_argument("--idle-exit", type=float, default=None,
                    help="exit 3 after this many seconds without a job")
    ap.add_argument("--status", default="graded",
                    choices=["graded", "compile_error", "rejected", "runtime_error",
                             "timeout", "system_error"])
    ap.add_argument("--score", type=float, default=72.5)
    ap.add_argument("--max-score", type=float, default=100.0)
    ap.add_argument("--speedup", type=float, default=1.37)
    ap.add_argument("--phase-delay", type=float, default=0.0)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--result-file", help="post this JSON document as the result")
    a = ap.parse_args(argv)
    r = FakeRunner(a.url, a.token, name=a.name, gpu=a.gpu)
    result = None
    if a.result_file:
        with open(a.result_file) as f:
            result = json.load(f)
    try:
        n = r.run(jobs=a.jobs, wait=a.wait, idle_exit=a.idle_exit, out=sys.stdout,
                  status=a.status, score=a.score, max_score=a.max_score,
                  speedup=a.speedup, phase_delay=a.phase_delay,
                  phases=[] if a.no_progress else None, result=result)
    except (RuntimeError, OSError) as e:
        print("fake_runner: %s" % e, file=sys.stderr)
        return 2
    if a.jobs and n < a.jobs:
        print("fake_runner: idle for %ss after %d job(s)" % (a.idle_exit, n), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
