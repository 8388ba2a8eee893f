#!/usr/bin/env python3
"""seed.py - fill a running cugrade-server with N submissions for the benchmark.

    tests/bench/seed.py --url http://127.0.0.1:PORT --admin-token cga_... \
        --lab bench --submissions 10000 --students 200 --graded 1000 --out vars.sh

Through the public API only, so it measures nothing but also cheats nothing:
  1. POST /api/admin/users: --students students, a TA and a runner (one request);
  2. POST /api/labs/LAB/submissions: --submissions sources (distinct bytes),
     round-robin over the students, from --clients keep-alive connections;
  3. the fake runner (tests/tools/fake_runner.py) claims and grades the oldest
     --graded of them with varied scores (claim + result, no progress calls).
Writes shell assignments to --out: TOKEN (a student), SID (one of that
student's graded submissions), TA_TOKEN, and the timings.
Python 3 stdlib only.
"""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
# No __pycache__ in tests/tools (a folder shared with other areas).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from fake_runner import FakeRunner, canned_result  # noqa: E402

SRC = (b"__global__ void vadd_kernel(const float* a, const float* b, float* c, int n)\n"
       b"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n"
       b"extern \"C\" void vadd(const float* a, const float* b, float* c, int n)\n"
       b"{ vadd_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n); }\n")


def connector(url):
    """A function that opens a new connection to url's server."""
    u = urllib.parse.urlsplit(url)
    return lambda: http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def seed_users(a, conn):
    """Step 1: the students, a TA and a runner, one request. Returns their
    tokens by name."""
    users = [{"name": "s%04d" % i, "role": "student", "display_name": "Student %d" % i}
             for i in range(a.students)]
    users += [{"name": "bench_ta", "role": "ta", "display_name": "Bench TA"},
              {"name": "bench_runner", "role": "runner", "display_name": "bench runner"}]
    c = conn()
    c.request("POST", "/api/admin/users", body=json.dumps({"users": users}),
              headers={"Authorization": "Bearer " + a.admin_token,
                       "Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    if r.status != 201:
        sys.exit("seed: POST /api/admin/users answered %s %r" % (r.status, body[:300]))
    return {x["name"]: x["token"] for x in json.loads(body)["users"]}


def seed_submissions(a, conn, tok):
    """Step 2: the submissions, round-robin over the students, from
    a.clients keep-alive connections. Returns their ids in order."""
    ids = [None] * a.submissions
    errors = []
    nxt = [0]
    lock = threading.Lock()

    def worker():
        c = conn()
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= a.submissions or errors:
                break
            name = "s%04d" % (i % a.students)
            src = SRC + ("// submission %d by %s\n" % (i, name)).encode()
            for attempt in range(3):
                try:
                    c.request("POST", "/api/labs/%s/submissions" % a.lab, body=src,
                              headers={"Authorization": "Bearer " + tok[name],
                                       "Content-Type": "application/octet-stream"})
                    r = c.getresponse()
                    b = r.read()
                    break
                except (OSError, http.client.HTTPException):
                    c.close()
                    c = conn()
            else:
                errors.append("connection failures")
                break
            if r.status != 202:
                errors.append("submission %d: %s %r" % (i, r.status, b[:200]))
                break
            ids[i] = json.loads(b)["id"]
            if r.getheader("connection", "").lower() == "close":
                c.close()
                c = conn()
    ths = [threading.Thread(target=worker) for _ in range(a.clients)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    if errors:
        sys.exit("seed: " + errors[0])
    return ids


def seed_grading(a, tok):
    """Step 3: the fake runner grades the oldest a.graded with varied
    scores. Returns {id: score}."""
    rnd = random.Random(7)
    run = FakeRunner(a.url, tok["bench_runner"], name="bench-gpu0")
    graded = {}
    for _ in range(a.graded):
        job = run.claim(wait=0)
        if job is None:
            break
        score = round(rnd.uniform(20, 100), 1)
        doc = canned_result(job, score=score, speedup=round(rnd.uniform(0.1, 3.0), 3))
        r = run.result(job["id"], "graded", doc)
        if r.status != 200:
            sys.exit("seed: result for %s answered %s %r" % (job["id"], r.status, r.body[:200]))
        graded[job["id"]] = score
    return graded


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--admin-token", required=True)
    ap.add_argument("--lab", default="bench")
    ap.add_argument("--submissions", type=int, default=10000)
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--graded", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    conn = connector(a.url)
    t0 = time.time()
    tok = seed_users(a, conn)
    t_users = time.time() - t0
    t0 = time.time()
    ids = seed_submissions(a, conn, tok)
    t_sub = time.time() - t0
    t0 = time.time()
    graded = seed_grading(a, tok)
    t_grade = time.time() - t0

    viewer = "s0000"
    sid = ids[0]                    # the oldest submission, by s0000, graded
    with open(a.out, "w") as f:
        f.write("TOKEN=%s\nSID=%s\nTA_TOKEN=%s\nVIEWER=%s\n" % (tok[viewer], sid,
                                                              tok["bench_ta"], viewer))
        f.write("SEED_USERS_S=%.2f\nSEED_SUBMIT_S=%.2f\nSEED_GRADE_S=%.2f\nSEED_GRADED=%d\n"
                % (t_users, t_sub, t_grade, len(graded)))
    print("seeded %d students, %d submissions via POST /api/labs/%s/submissions "
          "(%d keep-alive clients) in %.1f s (%.0f/s); graded %d with the fake runner "
          "in %.1f s" % (a.students, a.submissions, a.lab, a.clients, t_sub,
                         a.submissions / max(t_sub, 1e-9), len(graded), t_grade))


if __name__ == "__main__":
    main()
