#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on the server's timeouts; its CPU is under 5% of its wall time)
# Leases: an expired lease puts the job back in the queue (a fresh seed on the
# next claim, the old runner gets 409); progress extends a lease; after
# max_attempts failed leases/attempts the job ends in system_error, visible to
# admins.  Uses a short lease when the server offers an option for it.
import os
import re
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, sha256, BINARY  # noqa: E402
import subprocess  # noqa: E402

SHORT = 2


def lease_option():
    """The serve option (or env var) that sets the lease, from `serve --help`."""
    try:
        p = subprocess.run([BINARY, "serve", "--help"], capture_output=True, text=True,
                           timeout=10)
        h = p.stdout + p.stderr
    except OSError:
        return [], {}, ""
    m = re.search(r"(--lease[-_a-z]*)", h)
    if m:
        return [m.group(1), str(SHORT)], {}, "serve %s %d" % (m.group(1), SHORT)
    m = re.search(r"\b(CUGRADE_LEASE[A-Z_]*)\b", h)
    if m:
        return [], {m.group(1): str(SHORT)}, "%s=%d" % (m.group(1), SHORT)
    return [], {}, ""


def main(t):
    args, env, how = lease_option()
    if how:
        t.diag("short lease through: " + how)
    else:
        t.diag("the server offers no lease option in `serve --help`: waiting out the default")
    # Two runner users: the protocol names the lease holder by its token
    # (progress and result bodies carry no runner name).
    s = Server(labs=["retry", "vadd"], args=args, env=env, tap=t,
               users=Server.DEFAULT_USERS + [("runner2", "runner", "runner two")])
    a = s.runner("runner1", runner_name="runner-a")
    b = s.runner("runner2", runner_name="runner-b")

    src = kernel("lease")
    r = s.submit("retry", src)
    sid = (r.json() or {}).get("id")
    t.status(r, 202, "submission to lab retry (max_attempts 2) accepted")

    t0 = time.time()
    job = a.claim(wait=2)
    t.ok(job is not None and job.get("id") == sid, "runner A claims it", a.last)
    job = job or {}
    lease = job.get("lease_seconds")
    t.ok(isinstance(lease, int) and lease > 0, "the job has an integer lease_seconds", lease)
    if how:
        t.eq(lease, SHORT, "the lease option is honoured (lease_seconds = %d)" % SHORT)
    lease = lease if isinstance(lease, int) and 0 < lease <= 120 else 60
    t.eq(job.get("lab"), "retry", "job.lab")
    t.eq(job.get("attempt"), 1, "job.attempt is 1 on the first claim")
    t.eq(job.get("source"), src.decode(), "job.source is the submitted source")
    t.eq(job.get("sha256"), sha256(src), "job.sha256 is its hash")
    t.eq(job.get("filename"), "kernel.cu", "job.filename")
    seed1 = job.get("seed")
    t.ok(isinstance(seed1, str) and re.fullmatch(r"[0-9a-f]{32}", seed1),
         "job.seed is 32 hex chars", seed1)
    t.ok(isinstance(job.get("rubric_version"), int) and isinstance(job.get("rubric"), dict)
         and job["rubric"].get("lab") == "retry",
         "job has rubric_version and the rubric document", job.get("rubric_version"))

    r = a.progress(sid, "compiling")
    t.status(r, 200, "runner A reports progress: compiling")
    t.ok(isinstance((r.json() or {}).get("lease_expires_in"), (int, float)),
         "progress answers lease_expires_in", r)
    o = s.submission(sid)
    t.eq((o or {}).get("status"), "compiling", "status is compiling while A holds the lease")

    # Let the lease run out.
    o = s.wait_status(sid, "queued", timeout=lease + 8)
    waited = time.time() - t0
    t.eq((o or {}).get("status"), "queued",
         "the expired lease puts the job back to queued (after %.1f s, lease %d s)"
         % (waited, lease))
    t.ok(waited >= lease - 0.5, "not before the lease ran out (%.1f s >= %d s)"
         % (waited, lease))
    r = a.progress(sid, "checking", "1/2")
    t.ok(r.status == 409 and ((r.json() or {}).get("error") or {}).get("code") == "conflict",
         "runner A's progress after expiry is 409 conflict", r)

    job2 = b.claim(wait=2)
    t.ok(job2 is not None and job2.get("id") == sid, "runner B claims the requeued job", b.last)
    job2 = job2 or {}
    t.eq(job2.get("attempt"), 2, "job.attempt is 2 on the second claim")
    t.ok(job2.get("seed") and job2.get("seed") != seed1, "the second claim has a fresh seed",
         (seed1, job2.get("seed")))
    r = a.progress(sid, "checking", "1/2")
    t.eq(r.status, 409, "runner A's progress while B holds the lease is 409")
    r = a.result(sid, "graded")
    t.eq(r.status, 409, "runner A's result while B holds the lease is 409")
    o = s.submission(sid)
    t.ok(o and o.get("status") != "graded", "A's refused result did not grade the job",
         o and o.get("status"))

    # B lets its lease run out too: max_attempts (2) reached -> system_error.
    o = s.wait_status(sid, "system_error", timeout=lease + 8)
    t.eq((o or {}).get("status"), "system_error",
         "after max_attempts (2) expired leases the job is system_error")
    t.eq((o or {}).get("attempts"), 2, "attempts is 2")
    r = b.claim(wait=1)
    t.ok(r is None, "a system_error job is not handed out again", r)
    r = s.get("/api/submissions?status=system_error", token="admin")
    ids = [x.get("id") for x in (r.json() or {}).get("submissions", [])]
    t.ok(r.status == 200 and sid in ids,
         "admins see it in GET /api/submissions?status=system_error", r.brief())
    o = s.submission(sid, token="alice_q7")
    t.eq((o or {}).get("status"), "system_error", "the student sees system_error too")

    # Heartbeats keep a lease: progress every lease/3 for 2 leases.
    r = s.submit("vadd", kernel("heartbeat"))
    hid = (r.json() or {}).get("id")
    job = a.claim(wait=2)
    t.ok(job and job.get("id") == hid, "runner A claims a vadd job", a.last)
    end = time.time() + 2 * lease
    codes = set()
    while time.time() < end:
        codes.add(a.progress(hid, "checking", "1/2").status)
        time.sleep(lease / 3)
    t.eq(codes, {200}, "progress every lease/3 for two lease periods is always 200")
    o = s.submission(hid)
    t.eq((o or {}).get("status"), "checking", "the heartbeated job never went back to queued")

    # A system_error result requeues (attempt + 1) until max_attempts (3).
    statuses = []
    for attempt in (1, 2, 3):
        if attempt > 1:
            job = a.claim(wait=2)
            t.ok(job and job.get("id") == hid and job.get("attempt") == attempt,
                 "system_error result %d: the job is claimed again, attempt %d"
                 % (attempt - 1, attempt), job and (job.get("id"), job.get("attempt")))
        r = a.result(hid, "system_error")
        t.status(r, 200, "runner posts system_error (attempt %d)" % attempt)
        statuses.append((s.submission(hid) or {}).get("status"))
    t.eq(statuses, ["queued", "queued", "system_error"],
         "system_error results requeue twice, then stay system_error (max_attempts 3)")
    t.ok(a.claim(wait=1) is None, "nothing left to claim")

    # A lease that runs out while the server is down is requeued after restart.
    r = s.submit("vadd", kernel("downtime"))
    did = (r.json() or {}).get("id")
    job = a.claim(wait=2) or {}
    t.eq(job.get("id"), did, "runner A claims a job, then the server is killed (-9)")
    s.kill9()
    time.sleep(lease + 1)
    s.start()
    a.port = b.port = s.port
    o = s.wait_status(did, "queued", timeout=5)
    t.eq((o or {}).get("status"), "queued",
         "a lease that expired while the server was down is requeued after restart")
    job = b.claim(wait=2) or {}
    t.ok(job.get("id") == did and job.get("attempt") == 2,
         "runner B claims it as attempt 2", {k: job.get(k) for k in ("id", "attempt")})


def sweep_off_loop(t):
    """Issue 29: the lease sweep ran on the event loop, so a sweep that
    found an expired lease waited there for the write lock (up to the busy
    timeout) and every client waited with it. Another process (the CLI, a
    backup) holds the write lock while a lease expires: /healthz is still
    answered at once, and the lease is requeued once the lock is free."""
    import sqlite3
    s = Server(labs=["vadd"], args=["--lease-seconds", "1"], tap=t)
    sid = (s.submit("vadd", kernel("sweep")).json() or {}).get("id")
    job = s.runner("runner1").claim(wait=2)
    t.ok(job is not None and job.get("id") == sid, "a job is leased for 1 s")
    c = sqlite3.connect(s.db, timeout=10, isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
    try:
        time.sleep(1.5)             # expired: each sweep now meets the lock
        worst, end = 0.0, time.time() + 3
        while time.time() < end:
            t0 = time.time()
            s.get("/healthz", timeout=15)
            worst = max(worst, time.time() - t0)
            time.sleep(0.1)
    finally:
        c.execute("ROLLBACK")
        c.close()
    t.ok(worst < 1.0, "while another process holds the write lock, /healthz is answered "
         "(worst %.2f s): the sweep waits off the loop" % worst)
    o = s.wait_status(sid, "queued", timeout=10)
    t.eq((o or {}).get("status"), "queued", "the lock released, the expired lease is requeued")
    s.cleanup()


def claim_gone(t):
    """A runner that hangs up while its claim is written (the claim's try
    held on the writer by a read stall, tests/server/wal_stall.py) never
    gets the job: it is given back at once, not when its 60 s lease runs
    out, and the next claim gets it as attempt 1 (the gone claim's attempt
    is not counted)."""
    import sqlite3
    from wal_stall import claim_hung_up
    s = Server(labs=["vadd"], args=["--lease-seconds", "60"], tap=t)
    sid = (s.submit("vadd", kernel("gone")).json() or {}).get("id")
    if not claim_hung_up(t, s, "a runner gone mid-claim", "gone-gpu0", 0):
        return
    t0, job = time.time(), {}
    while time.time() - t0 < 10 and not job:
        job = s.runner("runner1", runner_name="gone-gpu1").claim(wait=0) or {}
        if not job:
            time.sleep(0.2)
    t.ok(job.get("id") == sid and job.get("attempt") == 1,
         "a runner gone mid-claim: its job is claimed again %.1f s after the stall (lease 60 s), "
         "as attempt 1" % (time.time() - t0), {k: job.get(k) for k in ("id", "attempt")})
    db = sqlite3.connect(s.db, timeout=10)
    n = db.execute("SELECT attempts FROM submissions WHERE id = ?", (sid,)).fetchone()
    db.close()
    t.eq(n and n[0], 1, "a runner gone mid-claim: one attempt counted, the one running now")
    s.cleanup()


def claim_silent(t):
    """A runner that took its claim's answer and never spoke (killed before
    its first progress) leaves its job for the claim's first lease, a
    quarter of the lease (15 s of 60), not the whole lease: the next claim
    gets it as attempt 2, and the silent runner's late word gets 409. A
    runner that speaks at once holds its job for the whole lease."""
    s = Server(labs=["vadd"], args=["--lease-seconds", "60"], tap=t)
    silent = (s.submit("vadd", kernel("silent")).json() or {}).get("id")
    talks = (s.submit("vadd", kernel("talks"), token="bob_z3").json() or {}).get("id")
    gone = s.runner("runner1", runner_name="gone-gpu0")
    kept = s.runner("runner1", runner_name="kept-gpu0")
    first = gone.claim(wait=0) or {}
    second = kept.claim(wait=0) or {}
    t.ok(first.get("id") == silent and second.get("id") == talks,
         "a silent runner: the two jobs claimed, one by each runner",
         {"silent": first.get("id"), "talks": second.get("id")})
    t.status(kept.progress(talks, "compiling"), 200, "a silent runner: the other runner's first word")
    t0, job = time.time(), {}
    other = s.runner("runner1", runner_name="next-gpu0")
    while time.time() - t0 < 30 and not job:
        job = other.claim(wait=0) or {}
        if not job:
            time.sleep(0.5)
    waited = time.time() - t0
    t.ok(job.get("id") == silent and job.get("attempt") == 2 and 10 <= waited <= 20,
         "a silent runner: its job is claimed again %.1f s later (lease 60 s, first lease 15 s), "
         "as attempt 2" % waited, {k: job.get(k) for k in ("id", "attempt")})
    t.status(gone.progress(silent, "compiling"), 409, "a silent runner: its late word gets 409")
    r = kept.progress(talks, "checking")
    t.status(r, 200, "a silent runner: the runner that spoke still holds its job after %.0f s"
             % (time.time() - t0))
    t.ok((r.json() or {}).get("lease_expires_in", 0) > 50,
         "a silent runner: progress renews the whole lease", r)
    s.cleanup()


def claim_fresh(t):
    """A runner started again under its name says so on its first claim
    ("fresh"): the jobs that name held for the same runner account come back
    at once (a sweep later), not when their leases run out, and the old
    holder's word gets 409. The same name under another account, and a
    claim that does not say fresh, leave them alone."""
    s = Server(labs=["vadd"], args=["--lease-seconds", "60"], tap=t,
               users=Server.DEFAULT_USERS + [("runner2", "runner", "runner two")])
    sid = (s.submit("vadd", kernel("fresh")).json() or {}).get("id")
    old = s.runner("runner1", runner_name="host-gpu0")
    job = old.claim(wait=0) or {}
    t.status(old.progress(sid, "checking"), 200, "a runner started again: its earlier life holds the job")
    other = s.runner("runner2", runner_name="host-gpu0")
    r = other.request("POST", "/api/runner/claim", {"runner": "host-gpu0", "wait": 1, "fresh": True})
    t.status(r, 204, "a runner started again: the same name under another account claims nothing")
    again = s.runner("runner1", runner_name="host-gpu0")
    r = again.request("POST", "/api/runner/claim", {"runner": "host-gpu0", "wait": 0})
    t.status(r, 204, "a runner started again: a claim that does not say fresh leaves the job held")
    t0 = time.time()
    r = again.request("POST", "/api/runner/claim", {"runner": "host-gpu0", "wait": 10, "fresh": True},
                      timeout=20)
    got = ((r.json() or {}).get("job") or {}) if r.status == 200 else {}
    waited = time.time() - t0
    t.ok(job.get("id") == sid and got.get("id") == sid and got.get("attempt") == 2 and waited < 5,
         "a runner started again: its fresh claim gets the job back %.1f s later (lease 60 s), "
         "as attempt 2" % waited, {"status": r.status, "id": got.get("id"), "attempt": got.get("attempt")})
    t.status(old.progress(sid, "checking"), 409, "a runner started again: its earlier life's word gets 409")
    s.cleanup()


def handed_back(t):
    """A runner gives back a job it holds and has not judged (it waited for
    its GPU's memory while another GPU had room: docs/runner.md
    "Hand-back"): queued again at once, the attempt not counted, and the
    giver's later word gets 409. Only the holder, naming its claim's
    attempt, may; never after a verdict."""
    import sqlite3
    s = Server(labs=["vadd"], args=["--lease-seconds", "60"], tap=t)
    sid = (s.submit("vadd", kernel("handback")).json() or {}).get("id")
    a = s.runner("runner1", runner_name="host-gpu0")
    b = s.runner("runner1", runner_name="host-gpu1")
    job = a.claim(wait=0) or {}
    t.status(a.progress(sid, "checking", "waiting: other submissions hold the GPU's memory"), 200,
             "hand-back: runner A holds the job, waiting for its GPU")
    t.status(b.release(sid), 409, "hand-back: another runner cannot give it back")
    t.status(a.release(sid, attempt=2), 409, "hand-back: nor can A naming another attempt")
    t.status(a.release(sid), 200, "hand-back: A gives it back")
    o = s.submission(sid) or {}
    t.ok(o.get("status") == "queued" and o.get("detail") == "moved to a GPU with room",
         "hand-back: the job is queued again, and says why", {k: o.get(k) for k in ("status", "detail")})
    got = b.claim(wait=2) or {}
    t.ok(job.get("id") == sid and got.get("id") == sid and got.get("attempt") == 1,
         "hand-back: the next claim gets it as attempt 1 (the attempt given back is not counted)",
         {"id": got.get("id"), "attempt": got.get("attempt")})
    t.status(a.progress(sid, "checking"), 409, "hand-back: the giver's later word gets 409")
    t.status(a.release(sid), 409, "hand-back: and so does its second release")
    t.status(b.result(sid), 200, "hand-back: B posts its verdict")
    t.status(b.release(sid), 409, "hand-back: no job is given back after its verdict")
    db = sqlite3.connect(s.db, timeout=10)
    n = db.execute("SELECT attempts, status FROM submissions WHERE id = ?", (sid,)).fetchone()
    db.close()
    t.eq(n and tuple(n), (1, "graded"), "hand-back: one attempt counted, the one that judged it")
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.run(sweep_off_loop)
t.run(claim_gone)
t.run(claim_silent)
t.run(claim_fresh)
t.run(handed_back)
t.exit()
