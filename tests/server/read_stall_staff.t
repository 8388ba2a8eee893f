#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on SQLite locks held for seconds; its CPU is under 1% of its wall time)
# Issue 29 item 4, the staff's side: the event loop never waits for a read
# while a TA starts a similarity check (from the API or the lab's form),
# while the scheduler looks for a lab whose check is due, or while the loop
# draws a staff page's refusal itself (its nav's count of open regrade
# requests). Reads stall as in read_stall.t (tests/server/wal_stall.py:
# this process holds the WAL read locks); /healthz must be answered
# meanwhile, and each start completes once reads go.
import hashlib
import os
import shutil
import sqlite3
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, FIXTURES  # noqa: E402
from wal_stall import Stall, BOUND_S, HOLD_S, healthz_during, stalled  # noqa: E402

STARTER = open(os.path.join(FIXTURES, "labs", "simlab", "starter.cu")).read()
TODO = "    // TODO: your kernel.\n"
KERNEL = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def graded(s, lab):
    """A graded submission of lab for alice and for bob, stored behind the
    server's back (no scoreboard of the lab is cached yet)."""
    db = sqlite3.connect(s.db, timeout=10)
    for who, tag in (("alice_q7", "x"), ("bob_z3", "y")):
        src = STARTER.replace(TODO, KERNEL + "    // %s\n" % tag).encode()
        uid = db.execute("SELECT id FROM users WHERE name = ?", (who,)).fetchone()[0]
        db.execute("INSERT INTO submissions(user_id, lab, filename, source, sha256, size, status,"
                   " score, max_score, rubric_version, created_at, updated_at, graded_at)"
                   " VALUES(?, ?, 'k.cu', ?, ?, ?, 'graded', 50, 100, 1, 1.58e9, 1.58e9,"
                   " 1.58e9)", (uid, lab, src, hashlib.sha256(src).hexdigest(), len(src)))
    db.commit()
    db.close()


def run_end(s, lab, timeout=60):
    """The lab's latest run once it is no longer running ({} if none)."""
    url = "/api/admin/labs/%s/similarity" % lab
    end, rn = time.time() + timeout, {}
    while time.time() < end:
        rn = (s.get(url, token="tina_ta").json() or {}).get("run") or {}
        if rn and rn.get("status") != "running":
            break
        time.sleep(0.2)
    return rn


def starts(t):
    """A TA's start, from the API then from the lab's form, while reads
    stall: the sources are read and the run's row written off the loop."""
    s = Server(labs=["simlab"], tap=t)
    graded(s, "simlab")
    what = "a similarity check's start (API)"
    r = stalled(t, s, what, "/api/admin/labs/simlab/similarity", token="tina_ta",
                warm="/api/me", method="POST", body=b"", want=202)
    run = (r.json() or {}).get("run") if r is not None and r.status == 202 else None
    rn = run_end(s, "simlab")
    t.eq((rn.get("id"), rn.get("status"), rn.get("files"), rn.get("by")),
         (run, "done", 2, "tina_ta"), "%s: the run it answered ends done over both" % what, rn)
    what = "a similarity check's start (form)"
    r = stalled(t, s, what, "/labs/simlab/similarity", token="tina_ta", warm="/api/me",
                method="POST", body=b"", headers=FORM, want=303)
    loc = r.header("location") if r is not None and hasattr(r, "header") else ""
    rn = run_end(s, "simlab")
    t.ok(rn.get("status") == "done" and rn.get("id") != run and
         loc == "/labs/simlab/similarity?run=%s" % rn.get("id"),
         "%s: a second run, done; the 303 goes to its report" % what, (loc, rn))
    start_gone(t, s, rn.get("id"))
    refusal(t, s)
    s.cleanup()


def start_gone(t, s, last):
    """A TA who hangs up while the start waits for the stalled reads has
    still started the check: it runs and ends, nobody is answered (no write
    to a freed request: the ASan build's log is read at the end)."""
    what = "a similarity check's start, its client gone"
    t.status(s.get("/api/me", token="tina_ta"), 200, "%s: /api/me first" % what)
    st = Stall(s.db)
    if not t.ok(st.start(), "%s: the WAL read locks are taken" % what):
        return
    c = s.connect()
    c.sendall(("POST /api/admin/labs/simlab/similarity HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\nContent-Length: 0\r\n\r\n"
               % s.tok["tina_ta"]).encode())
    time.sleep(0.5)
    c.close()
    st.wait()
    end, rn = time.time() + 30, {}
    while time.time() < end and not (rn.get("id") != last and rn.get("status") == "done"):
        time.sleep(0.3)
        rn = run_end(s, "simlab")
    t.ok(rn.get("id") != last and rn.get("status") == "done",
         "%s: a third run, done once reads go" % what, rn)


def refusal(t, s):
    """A staff page the loop draws itself (the form's refusal: no such lab)
    reads nothing there: answered at once while reads stall, with the
    Regrades link (its count of open requests is left out)."""
    what = "a staff page's refusal drawn by the loop"
    t.status(s.get("/api/me", token="tina_ta"), 200, "%s: /api/me first" % what)
    st = Stall(s.db)
    if not t.ok(st.start(), "%s: the WAL read locks are taken" % what):
        return
    t0 = time.time()
    try:
        r = s.request("POST", "/labs/nolab/similarity", token="tina_ta", body=b"",
                      headers=FORM, timeout=HOLD_S + 15)
    except OSError as e:
        r = e
    took = time.time() - t0
    healthz_during(t, s, what)
    st.wait()
    body = (getattr(r, "body", b"") or b"")
    t.ok(getattr(r, "status", None) == 404 and took < BOUND_S,
         "%s: the 404 page at once (%.2f s, bound %.0f s; reads stalled %.0f s)"
         % (what, took, BOUND_S, HOLD_S), getattr(r, "brief", lambda: r)())
    t.ok(b'href="/regrades"' in body and b'class="count"' not in body,
         "%s: the nav has the Regrades link, without a count" % what)


def scheduler(t):
    """The scheduler looks every 0.3 s for a lab past its deadlines with no
    check since ("closed": 2020): that look is the reader's, so /healthz is
    answered all through a stall; once reads go, the scheduler still starts
    the lab's check when two students are graded."""
    s = Server(labs=["closed"], env={"CUGRADE_SIMILARITY_AUTO_S": "0.3"}, tap=t)
    what = "the scheduler's look for a check due"
    time.sleep(1)  # it has looked (nothing graded: no check)
    st = Stall(s.db)
    if not t.ok(st.start(), "%s: the WAL read locks are taken" % what):
        return
    worst = 0.0
    for _ in range(4):
        time.sleep(0.7)
        t0 = time.time()
        try:
            ok = s.get("/healthz", timeout=HOLD_S + 15).status == 200
        except OSError:
            ok = False
        worst = max(worst, time.time() - t0 if ok else 99)
    st.wait()
    t.ok(worst < BOUND_S, "%s: /healthz answered all through the stall (worst %.2f s, bound "
         "%.0f s; reads stalled %.0f s)" % (what, worst, BOUND_S, HOLD_S))
    graded(s, "closed")
    rn = run_end(s, "closed", timeout=30)
    t.eq((rn.get("status"), rn.get("by"), rn.get("files")), ("done", "", 2),
         "%s: once reads go, the due check runs by itself over both students" % what, rn)
    s.cleanup()


if __name__ == "__main__":
    t = Tap()
    require_binary(t)
    if not shutil.which("sim_c"):
        t.ok(False, "sim_c is installed (Debian package similarity-tester: "
                    "sh deploy/install-deps.sh test)")
    else:
        t.run(starts)
        t.run(scheduler)
    t.exit()
