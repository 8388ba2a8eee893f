#!/usr/bin/env python3
# The queue under concurrency: claims are atomic (parallel claimers never get
# the same job), FIFO among students, queue_position counts down; many parked
# long-polls and one submission wake exactly one claimer; a parallel burst of
# one student's submissions leaves exactly one queued (the rest superseded); bad progress/result bodies
# are refused, and both must name their lease (runner and attempt); a
# posted result survives kill -9.
import os
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402
from fake_runner import FakeRunner, canned_result  # noqa: E402

NR = 10


def main(t):
    users = Server.DEFAULT_USERS + [("r%02d" % i, "runner", "runner %d" % i) for i in range(NR)] \
        + [("stu%d" % i, "student", "Student %d" % i) for i in range(5)]
    s = Server(labs=["vadd", "inflight"], users=users, tap=t)
    runners = [FakeRunner(s.url, s.tok["r%02d" % i], name="r%02d-gpu0" % i) for i in range(NR)]

    # --- FIFO among students with one job each, and queue_position
    ids = []
    for i in range(5):
        r = s.submit("vadd", kernel("q%d" % i), token="stu%d" % i)
        ids.append((r.json() or {}).get("id"))
    pos = [(s.submission(i) or {}).get("queue_position") for i in ids]
    t.eq(pos, [1, 2, 3, 4, 5], "queue_position is 1..5 in submission order")

    # --- parallel claims are atomic
    got = [None] * NR
    errs = []

    def claim(i):
        try:
            job = runners[i].claim(wait=0)
            got[i] = job.get("id") if job else None
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))
    ths = [threading.Thread(target=claim, args=(i,)) for i in range(NR)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    claimed = sorted(x for x in got if x is not None)
    t.eq(errs, [], "10 parallel claims: no errors")
    t.eq(claimed, sorted(ids), "10 parallel claims on 5 jobs: each job handed out exactly once")
    t.eq(sum(1 for x in got if x is None), NR - 5, "...and the other 5 claims got 204")
    holder = {jid: i for i, jid in enumerate(got) if jid is not None}
    if ids[0] in holder:
        r = runners[(holder[ids[0]] + 1) % NR].progress(ids[0], "compiling")
        t.eq(r.status, 409, "a runner that does not hold the lease gets 409 on progress")
        # The lease is the runner account's, not only the name and attempt
        # in the body: another account naming both is not the holder.
        other = runners[(holder[ids[0]] + 1) % NR]
        forged = {"runner": runners[holder[ids[0]]].name, "attempt": 1}
        r = other.request("POST", "/api/runner/jobs/%d/progress" % ids[0],
                          dict(forged, phase="compiling"))
        t.eq(r.status, 409, "another runner account naming the holder's runner and attempt "
             "gets 409 on progress")
        r = other.request("POST", "/api/runner/jobs/%d/result" % ids[0],
                          dict(forged, status="graded", result=canned_result({"id": ids[0]},
                                                                             score=99)))
        t.eq(r.status, 409, "...and 409 on a result")

    # --- bad progress/result bodies
    j0 = ids[0]
    rn = runners[holder.get(j0, 0)]
    r = rn.request("POST", "/api/runner/jobs/%d/progress" % j0, {"phase": "hacking"})
    t.ok(r.status == 400 and ((r.json() or {}).get("error") or {}).get("code"),
         "progress with an unknown phase: 400 JSON error", r)
    lease = {"runner": rn.name, "attempt": 1}
    r = rn.request("POST", "/api/runner/jobs/%d/result" % j0,
                   dict(lease, status="excellent", result=canned_result()))
    t.ok(r.status == 400, "result with an unknown status: 400", r)
    r = rn.request("POST", "/api/runner/jobs/%d/result" % j0,
                   dict(lease, status="graded", result={"score": "lots", "max_score": 100}))
    t.ok(r.status == 400, "result whose score is a string: 400", r)
    # A result must name its lease: without runner and attempt it matched
    # any lease, so a stale runner's late result won over the holder's.
    r = rn.request("POST", "/api/runner/jobs/%d/result" % j0,
                   {"status": "graded", "result": canned_result()})
    t.ok(r.status == 400 and "lease" in (((r.json() or {}).get("error") or {}).get("message") or ""),
         "a result without runner and attempt: 400, it must name its lease", r)
    r = rn.request("POST", "/api/runner/jobs/%d/result" % j0,
                   dict(lease, attempt=2, status="graded", result=canned_result()))
    t.ok(r.status == 409, "a result naming another attempt of the lease: 409", r)
    # Progress names its lease too: without it a stale runner of the same
    # account overwrote the holder's phase and renewed its lease.
    r = rn.request("POST", "/api/runner/jobs/%d/progress" % j0, {"phase": "timing", "detail": "stale"})
    t.ok(r.status == 400 and "lease" in (((r.json() or {}).get("error") or {}).get("message") or ""),
         "progress without runner and attempt: 400, it must name its lease", r)
    r = rn.request("POST", "/api/runner/jobs/%d/progress" % j0,
                   dict(lease, attempt=2, phase="timing", detail="stale"))
    t.ok(r.status == 409, "progress naming another attempt of the lease: 409", r)
    r = rn.request("POST", "/api/runner/jobs/%d/progress" % j0,
                   dict(lease, runner="someone-else", phase="timing", detail="stale"))
    t.ok(r.status == 409, "progress naming another runner: 409", r)
    o = s.submission(j0) or {}
    t.ok(o.get("status") != "timing", "the refused progress did not change the phase", o.get("status"))
    o = s.submission(j0) or {}
    t.ok(o.get("status") not in ("graded", "queued") and o.get("score") is None,
         "the refused results changed nothing (still leased, no score)",
         {k: o.get(k) for k in ("status", "score")})
    r = rn.result(j0, "graded", canned_result({"id": j0}, score=61))
    t.status(r, 200, "a valid result after the refused ones: 200")
    j1 = ids[1]
    if j1 in holder:
        r = runners[holder[j1]].request("POST", "/api/runner/jobs/%d/result" % j1,
                                        {"status": "graded", "runner": runners[holder[j1]].name,
                                         "attempt": 1})
        o = s.submission(j1) or {}
        t.ok(r.status == 400 and o.get("status") != "graded",
             "result {status: graded} without a result document: 400, not graded",
             "HTTP %s %r; submission now %r score %r"
             % (r.status, r.body[:200], o.get("status"), o.get("score")))

    # --- a posted result survives kill -9
    s.kill9()
    s.start()
    for rr in runners:          # the restarted server listens on a new port
        rr.port = s.port
    o = s.submission(j0) or {}
    t.ok(o.get("status") == "graded" and o.get("score") == 61,
         "after kill -9 and restart the graded result is still there",
         {k: o.get(k) for k in ("status", "score")})
    held = [(i, jid) for i, jid in enumerate(got) if jid is not None and jid not in (j0, j1)]
    codes = [runners[i].progress(jid, "checking", "1/2").status for i, jid in held]
    t.ok(codes and all(c == 200 for c in codes),
         "after restart, leases still held are honoured (progress 200)", codes)
    for i, jid in held:
        runners[i].result(jid, "graded", canned_result({"id": jid}, score=10))

    # --- 10 parked long-polls, one submission: exactly one wakes with it
    results = [None] * NR
    started = time.time()

    def park(i):
        try:
            job = runners[i].claim(wait=4)
            results[i] = ("job", job.get("id"), time.time() - started) if job else \
                ("204", None, time.time() - started)
        except Exception as e:  # noqa: BLE001
            results[i] = ("error", repr(e), time.time() - started)
    ths = [threading.Thread(target=park, args=(i,)) for i in range(NR)]
    for th in ths:
        th.start()
    time.sleep(1.0)
    r = s.submit("vadd", kernel("wake"), token="alice_q7")
    wid = (r.json() or {}).get("id")
    for th in ths:
        th.join(15)
    jobs = [x for x in results if x and x[0] == "job"]
    t.ok(len(jobs) == 1 and jobs[0][1] == wid,
         "10 parked claims and one submission: exactly one claimer gets it", results)
    t.ok(all(x and x[0] in ("job", "204") for x in results),
         "...the other 9 get 204 when their wait ends", results)
    late = [x for x in results if x and x[0] == "204" and not (3.0 <= x[2] <= 6.5)]
    t.eq(late, [], "...after about their 4 s wait")

    # --- a parallel burst of one student's submissions to one lab: each
    # newer one supersedes the queued one, so exactly one stays queued.
    codes = []
    lock = threading.Lock()

    def burst(i):
        r = s.submit("inflight", kernel("burst %d" % i), token="bob_z3")
        with lock:
            codes.append(r.status)
    ths = [threading.Thread(target=burst, args=(i,)) for i in range(20)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    t.eq(sorted(codes), [202] * 20,
         "20 parallel submissions with max_in_flight 1, none graded yet: all 202")
    subs = (s.get("/api/submissions?lab=inflight&user=bob_z3", token="admin").json() or {}) \
        .get("submissions", [])
    st = sorted(x.get("status") for x in subs)
    t.eq(st, ["queued"] + ["superseded"] * 19,
         "...exactly one stays queued, the 19 others superseded", st)
    newest = max(x.get("id") for x in subs) if subs else None
    t.ok([x.get("id") for x in subs if x.get("status") == "queued"] == [newest],
         "...and the one queued is the newest", subs[:2])


t = Tap()
require_binary(t)
t.run(main)
t.exit()
