#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on the server's timeouts; its CPU is under 5% of its wall time)
# Clients that hang up while their write waits on the writer thread: a
# late-day grant (API and admin form), a regrade request and its answer, a
# score override, and a submission (parsed on the loop, and on the pool).
# Each is sent while the database stalls, the socket closed before the
# answer; then reads go again. The write still happens (the job completes,
# nobody is answered), the server never touches the closed connection (the
# ASan build: `make asan`, or ONLY=server/writer_hangup sh tests/run.sh
# build-asan with the sanitizer options of the Makefile's asan target) and
# goes on answering; a clean stop exits 0.
#
# The stall, as in read_stall.t (tests/server/wal_stall.py): this script
# holds SQLite's WAL read locks (bytes 123..127 of the -shm file), so the
# writer's transaction waits in SQLite's own back-off until they go.
import json
import os
import socket
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402

from wal_stall import Stall  # noqa: E402

HOLD_S = 5.0           # the database stalls this long (a loaded machine answers /healthz in far less)


class TimedStall(Stall):
    """A Stall that notes when it let the locks go: /healthz answered
    before that was answered while the job waited, with no timing bound. A
    loop that waited for the write itself could answer only after it."""
    released = None

    def release(self):
        self.released = time.time()
        super().release()


def http(method, path, token, body, ctype):
    return (("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: %s\r\nContent-Length: %d\r\n\r\n"
             % (method, path, token, ctype, len(body))).encode() + body)


def hang_up(t, s, what, user, method, path, body, ctype="application/json"):
    """Send the request while the database stalls and close the socket
    before any answer came; then let the database go."""
    t.status(s.get("/api/me", token=user), 200, "%s: /api/me first (the token cached)" % what)
    st = TimedStall(s.db, HOLD_S)
    if not t.ok(st.start(), "%s: the WAL read locks are taken" % what):
        return
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    try:
        c.sendall(http(method, path, s.tok[user], body, ctype))
        c.settimeout(0.5)
        try:
            got = c.recv(100)
        except socket.timeout:
            got = None
        t.ok(got is None, "%s: no answer yet while the database stalls" % what, got)
    finally:
        c.close()  # hung up: the job still waits for the database
    h = s.get("/healthz", timeout=HOLD_S + 10)
    # 200 alone passed with the loop waiting for the write: /healthz then
    # came once the stall was over, well inside its timeout
    held = st.released is None
    t.ok(h.status == 200 and held, "%s: /healthz answers while the job waits (the database "
         "still stalled: %s)" % (what, held), h.brief())
    st.wait()


def eventually(fn, timeout=15):
    end = time.time() + timeout
    while True:
        v = fn()
        if v or time.time() > end:
            return v
        time.sleep(0.2)


def graded(t, s):
    """A graded submission of alice's."""
    sid, got = s.graded("vadd", kernel("graded"))
    t.eq((got or {}).get("status"), "graded", "a graded submission of alice's")
    return sid


def grants(s):
    r = s.get("/api/me/late-days?user=bob_z3", token="admin")
    return [g.get("reason") for g in (r.json() or {}).get("grants", [])]


def requests_of(s, sid):
    r = s.get("/api/submissions/%s/regrade-requests" % sid, token="admin")
    return (r.json() or {}).get("requests", [])


def mine(s, user):
    r = s.get("/api/submissions", token=user)
    j = r.json() or {}
    return len(j.get("submissions", j) if isinstance(j, dict) else j)


def main(t):
    s = Server(labs=["vadd"], tap=t)
    sid = graded(t, s)

    what = "a late-day grant (API)"
    hang_up(t, s, what, "admin", "POST", "/api/admin/late-days/grants",
            json.dumps({"user": "bob_z3", "days": 2, "reason": "hung up"}).encode())
    t.ok(eventually(lambda: "hung up" in grants(s)), "%s: the grant is stored" % what,
         grants(s))

    what = "a late-day grant (the admin's form)"
    hang_up(t, s, what, "admin", "POST", "/admin/late-days/grant",
            b"user=bob_z3&days=1&reason=form+hung+up", "application/x-www-form-urlencoded")
    t.ok(eventually(lambda: "form hung up" in grants(s)), "%s: the grant is stored" % what,
         grants(s))

    what = "a regrade request (API)"
    hang_up(t, s, what, "alice_q7", "POST", "/api/submissions/%s/regrade-requests" % sid,
            json.dumps({"reason": "asked and hung up"}).encode())
    rq = eventually(lambda: [q for q in requests_of(s, sid)
                             if q["reason"] == "asked and hung up" and q["status"] == "open"])
    t.ok(rq, "%s: the request is stored, open" % what, requests_of(s, sid))

    what = "a regrade request's answer with an override (API)"
    if rq:
        hang_up(t, s, what, "tina_ta", "POST", "/api/regrade-requests/%s/answer" % rq[0]["id"],
                json.dumps({"answer": "answered and hung up", "action": "override",
                            "score": 40}).encode())
        t.ok(eventually(lambda: [q for q in requests_of(s, sid) if q["status"] == "answered"]),
             "%s: the request is answered" % what, requests_of(s, sid))
        o = s.submission(sid) or {}
        t.ok(o.get("overridden") and o.get("score") == 40,
             "%s: the override is stored (40 counts)" % what, o)

    what = "a score override (API)"
    hang_up(t, s, what, "admin", "POST", "/api/admin/submissions/%s/override" % sid,
            json.dumps({"score": 7, "reason": "overridden and hung up"}).encode())
    t.ok(eventually(lambda: (s.submission(sid) or {}).get("score") == 7),
         "%s: the override is stored (7 counts)" % what, s.submission(sid))

    for what, src in (("a small submission (parsed on the loop)", kernel("small hang-up")),
                      ("a 100 KiB submission (parsed on the pool)",
                       kernel("big hang-up") + b"// " + b"h" * 100000 + b"\n")):
        before = mine(s, "bob_z3")
        hang_up(t, s, what, "bob_z3", "POST", "/api/labs/vadd/submissions", src,
                "application/octet-stream")
        t.ok(eventually(lambda: mine(s, "bob_z3") == before + 1),
             "%s: it is stored (bob had %d)" % (what, before), mine(s, "bob_z3"))

    t.ok(s.healthy(timeout=10), "after the hang-ups the server is healthy")
    t.status(s.submit("vadd", kernel("after the hang-ups"), token="bob_z3"), 202,
             "and takes the next submission")
    t.eq(s.stop(), 0, "a clean stop exits 0")
    t.eq(s.sanitizer_reports(), [], "no sanitizer report in the server's log")
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()
