#!/usr/bin/env python3
# The writer thread (server/writer.c): durable writes leave the event loop
# and keep their guarantee. Every answer that says "stored" (a submission's
# 202, a result's 200, an import's 201, a rubric's new version) survives a
# kill -9 sent the moment it arrives; limits checked in the writer's
# transaction hold for requests sent at the same time; clients that hang up
# while their write is queued do not hurt the server; a clean stop with
# writes in flight stores every one it acknowledged.
import json
import os
import socket
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, sha256, multipart  # noqa: E402

STUDENTS = [("w%02d" % i, "student", "Writer %d" % i) for i in range(30)]


def parallel(fns):
    """Run every fn at once; returns their results in order."""
    out = [None] * len(fns)

    def one(i):
        try:
            out[i] = fns[i]()
        except OSError as e:
            out[i] = e
    ths = [threading.Thread(target=one, args=(i,)) for i in range(len(fns))]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return out


def kill_after_each_202(t, s):
    """kill -9 right after every 202: each submission is there after restart.
    Odd ones are 100 KiB (parsed on libuv's pool; small ones on the loop)."""
    kept = []
    for i in range(5):
        src = kernel("kill after 202 #%d" % i) + (b"// " + b"p" * 100000 + b"\n") * (i % 2)
        r = s.submit("vadd", src, token="w%02d" % i, multipart_form=bool(i % 2))
        s.kill9()
        sid = (r.json() or {}).get("id") if r.status == 202 else None
        s.start()
        o = s.submission(sid) if sid else None
        src_back = s.get("/api/submissions/%s/source" % sid, token="w%02d" % i) if sid else None
        kept.append(r.status == 202 and o is not None and o.get("status") == "queued"
                    and o.get("sha256") == sha256(src) and src_back.body == src)
    t.eq(kept, [True] * 5, "5 times: a submission answered 202 and the server killed -9 at once "
         "is there after the restart, queued, its source intact")
    r = s.get("/api/submissions?lab=vadd&limit=100", token="admin")
    n = len((r.json() or {}).get("submissions", []))
    t.eq(n, 5, "and no submission was stored twice (5 rows for 5 answers)")


def result_survives(t, s):
    """A runner's result answered 200 survives kill -9 right after it."""
    src = kernel("result then kill")
    r = s.submit("vadd", src, token="w10")
    sid = (r.json() or {}).get("id")
    run = s.runner()
    job = run.claim(wait=2)
    while job is not None and job.get("id") != sid:  # the older ones first
        run.result(job["id"], "graded")
        job = run.claim(wait=2)
    t.ok(job is not None and job.get("id") == sid, "a runner claims the submission",
         job and job.get("id"))
    doc = {"score": 61.5, "max_score": 100.0, "tests": [], "output": "fine",
           "cugrade": {"timing": {"speedup": 1.25}}}
    rr = run.result(sid, "graded", doc)
    s.kill9()
    t.status(rr, 200, "the result is answered 200 (after its commit)")
    t.eq((rr.json() or {}).get("status"), "graded", "and names the final status")
    s.start()
    o = s.submission(sid)
    t.ok(o is not None and o.get("status") == "graded" and o.get("score") == 61.5,
         "after kill -9 and restart the submission is graded with the posted score",
         o and (o.get("status"), o.get("score")))
    # The lease is gone with the result: a second post of it is a conflict.
    attempts = run.attempts
    run = s.runner()  # the restarted server listens on a new port
    run.attempts = attempts
    rr = run.result(sid, "graded", doc)
    t.status(rr, 409, "posting the same result again is refused (the lease ended with the first)")
    # A result for a job that does not exist is a 404, one with a bad body a 400.
    t.status(run.result(999999, "graded", doc), 404, "a result for no such job is 404")
    bad = s.post("/api/runner/jobs/%s/result" % sid, token="runner1", body=b"{not json",
                 headers={"Content-Type": "application/json"})
    t.status(bad, 400, "a result that is not JSON is 400 (parsed off the loop, answered the same)")


def imports_survive(t, s):
    """A roster CSV (201) and a rubric change survive kill -9 right after."""
    csv = b"name,role,display_name\nimp_a,student,Imported A\nimp_b,ta,Imported B\n"
    r = s.post("/api/admin/users", token="admin", body=csv, headers={"Content-Type": "text/csv"})
    t.status(r, 201, "a roster CSV import is answered 201")
    users = {u["name"]: u["token"] for u in (r.json() or {}).get("users", [])}
    doc = json.loads(s.get("/api/admin/labs/vadd/rubric", token="admin").body)
    v0 = doc.get("version")
    rub = doc["rubric"]
    rub["limits"]["max_per_hour"] = 77
    rp = s.put("/api/admin/labs/vadd/rubric", token="admin", json_body=rub)
    s.kill9()
    t.eq(sorted(users), ["imp_a", "imp_b"], "the import answered with a token per user")
    t.status(rp, 200, "a rubric change is answered 200")
    t.eq((rp.json() or {}).get("version"), (v0 or 0) + 1, "with the next version")
    s.start()
    me = s.get("/api/me", token=users.get("imp_a", "x"))
    t.status(me, 200, "after kill -9 and restart the imported student's token works")
    g = s.get("/api/admin/labs/vadd/rubric", token="admin").json() or {}
    t.ok(g.get("version") == (v0 or 0) + 1 and g["rubric"]["limits"]["max_per_hour"] == 77,
         "after kill -9 and restart the new rubric version is the lab's", g.get("version"))
    dup = s.post("/api/admin/users", token="admin", body=csv, headers={"Content-Type": "text/csv"})
    dj = dup.json() or {}
    t.ok(dup.status == 201 and dj.get("users") == [] and dj.get("unchanged") == 2,
         "importing the same roster again: 201, both rows unchanged, no new token", dup.brief())
    r = s.post("/api/admin/users", token="admin", body=b'{"users": "nope"}',
               headers={"Content-Type": "application/json"})
    t.status(r, 400, "a JSON import with a bad users field is 400")
    r = s.get("/api/admin/users", token="admin")
    names = [u.get("name") for u in (r.json() or {}).get("users", [])]
    t.eq(names.count("imp_a"), 1, "and the first import's users are there once")


def limits_hold_at_once(t, s):
    """The fixture lab `hourly` stores at most 4 x max_per_hour (2) = 8
    submissions of a student per hour, superseded ones included: 12 sent at
    the same time get exactly 8 202s, because the writer checks the count
    inside the insert's transaction."""
    rs = parallel([lambda i=i: s.submit("hourly", kernel("at once %d" % i), token="w20")
                   for i in range(12)])
    codes = sorted(getattr(r, "status", str(r)) for r in rs)
    t.eq(codes, [202] * 8 + [429] * 4, "12 submissions at once against a limit of 8 stored: "
         "eight 202, four 429")
    r429 = [r for r in rs if getattr(r, "status", 0) == 429]
    t.ok(r429 and "You stored 8 submissions" in (r429[0].error() or {}).get("message", ""),
         "the 429 says how many are stored", r429 and r429[0].body[:200])


def hangups(t, s):
    """Clients that hang up while their submission or result is being
    written: the server goes on."""
    body = kernel("hang up") + b"// " + b"h" * 100000 + b"\n"  # parsed on the pool
    req = (b"POST /api/labs/vadd/submissions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
           + s.tok["w25"].encode() + b"\r\nContent-Type: application/octet-stream\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    big = json.dumps({"status": "graded", "runner": "x", "attempt": 1,
                      "result": {"score": 1, "max_score": 1, "log": "z" * 2000000}}).encode()
    rreq = (b"POST /api/runner/jobs/1/result HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
            + s.tok["runner1"].encode() + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(big)).encode() + b"\r\n\r\n" + big)
    for data in [req] * 20 + [rreq] * 5:
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(data)
        c.close()
    t.ok(s.healthy(timeout=10), "after 25 clients hung up on their writes the server is healthy")
    r = s.submit("vadd", kernel("after the hang-ups"), token="w26")
    t.status(r, 202, "and takes the next submission")


def stop_with_writes_in_flight(t, s):
    """SIGTERM as soon as the first of 20 submissions (100 KiB each: parsed
    on the pool, then written) is answered: every 202 is stored."""
    got = {}
    lock = threading.Lock()
    first = threading.Event()

    def one(i):
        try:
            r = s.submit("vadd", kernel("stop %d" % i) + b"// " + b"s" * 100000 + b"\n",
                         token="w%02d" % i)
        except OSError:
            return
        if r.status == 202:
            with lock:
                got[r.json()["id"]] = i
            first.set()
    ths = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for th in ths:
        th.start()
    first.wait(30)
    rc = s.stop()
    for th in ths:
        th.join()
    t.eq(rc, 0, "SIGTERM with writes in flight: the server exits 0")
    t.ok(len(got) >= 1, "at least the first submission was answered 202 before the stop", len(got))
    s.start()
    missing = [sid for sid in got if s.submission(sid) is None]
    t.eq(missing, [], "every one of the %d submissions answered 202 is stored" % len(got))


def form_submit(s, lab, src, token):
    """The web form's POST /labs/{lab}/submit, as a bearer (no CSRF needed)."""
    ctype, body = multipart([("file", "kernel.cu", src)])
    return s.post("/labs/%s/submit" % lab, token=token, body=body,
                  headers={"Content-Type": ctype})


def form_submissions(t, s):
    """The web form's submission takes the writer's path: its 303 comes once
    the row is on disk (kill -9 at once keeps it), the writer counts the job,
    and the writer's own limit check turns extra forms sent at once into the
    lab page with the 429's message."""
    # Earlier steps' writes (hung-up clients' submissions) may still be
    # landing: wait until the writer's count stands still first.
    jobs0, t0 = s.metric("cugrade_writer_jobs_total") or 0, time.time()
    while time.time() - t0 < 10:
        time.sleep(0.3)
        j = s.metric("cugrade_writer_jobs_total") or 0
        if j == jobs0:
            break
        jobs0 = j
    src = kernel("form after kill")
    r = form_submit(s, "vadd", src, "w21")
    loc = r.header("location") or ""
    t.ok(r.status == 303 and loc.startswith("/submissions/"),
         "the form's submission answers 303 to its page", r.brief())
    jobs1 = s.metric("cugrade_writer_jobs_total") or 0
    t.ok(jobs1 - jobs0 >= 1, "and was written by the writer thread (the writer's job count rose)",
         (jobs0, jobs1))
    s.kill9()
    s.start()
    sid = loc.rsplit("/", 1)[-1]
    o = s.submission(sid) if sid.isdigit() else None
    t.ok(o is not None and o.get("status") == "queued" and o.get("sha256") == sha256(src),
         "killed -9 right after the 303: the submission is there, queued, intact", o)
    rs = parallel([lambda i=i: form_submit(s, "hourly", kernel("form at once %d" % i), "w22")
                   for i in range(12)])
    codes = sorted(getattr(r, "status", str(r)) for r in rs)
    t.eq(codes, [303] * 8 + [429] * 4, "12 forms at once against a limit of 8 stored: eight 303, "
         "four 429 pages")
    r429 = [r for r in rs if getattr(r, "status", 0) == 429]
    body = r429[0].body.decode("utf-8", "replace") if r429 else ""
    t.ok("You stored 8 submissions" in body and "<form" in body,
         "a 429 is the lab page again with the reason", body[:300])


def writer_metrics(t, s):
    jobs = s.metric("cugrade_writer_jobs_total")
    commits = s.metric("cugrade_writer_commits_total")
    t.ok(jobs is not None and jobs >= 1, "/metrics counts the writer's jobs", jobs)
    t.ok(commits is not None and 1 <= commits <= jobs,
         "and its commits (a commit holds one or more jobs)", (commits, jobs))
    q = s.metric("cugrade_writer_queued")
    t.ok(q is not None and q >= 0, "and how many writes wait for it", q)


def main(t):
    s = Server(labs=["vadd", "hourly"], users=Server.DEFAULT_USERS + STUDENTS, tap=t)
    kill_after_each_202(t, s)
    result_survives(t, s)
    imports_survive(t, s)
    limits_hold_at_once(t, s)
    hangups(t, s)
    form_submissions(t, s)
    writer_metrics(t, s)
    stop_with_writes_in_flight(t, s)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
