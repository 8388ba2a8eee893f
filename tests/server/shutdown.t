#!/usr/bin/env python3
# Graceful shutdown: SIGTERM while requests are in flight (a submission whose
# body is half sent, a runner long-poll): they complete, the process exits 0,
# the accepted submission is stored, and the database passes
# PRAGMA integrity_check with no WAL left behind.
import os
import signal
import socket
import sqlite3
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, read_response, sha256  # noqa: E402


def main(t):
    s = Server(labs=["vadd"], tap=t)
    run = s.runner()

    # A runner long-poll in flight.
    poll = {}

    def longpoll():
        try:
            job = run.claim(wait=6)
            poll["status"] = run.last.status
            poll["job"] = job
        except Exception as e:  # noqa: BLE001
            poll["error"] = repr(e)
    th = threading.Thread(target=longpoll)
    th.start()

    # A submission in flight: headers and half the body sent.
    src = kernel("sent across SIGTERM") + b"// " + b"p" * 4000 + b"\n"
    head = ("POST /api/labs/vadd/submissions HTTP/1.1\r\nHost: x\r\n"
            "Authorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n"
            "Content-Length: %d\r\n\r\n" % (s.tok["alice_q7"], len(src))).encode()
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(head + src[:len(src) // 2])
    time.sleep(0.5)

    t0 = time.time()
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    # New connections may be refused now; the in-flight ones must finish.
    try:
        c.sendall(src[len(src) // 2:])
        r = read_response(c, timeout=10)
    except OSError as e:
        r = None
        t.diag("sending the rest of the body failed: %r" % e)
    c.close()
    t.ok(r is not None and r.status == 202,
         "a submission whose body was half sent at SIGTERM completes with 202",
         None if r is None else r.brief())
    sid = (r.json() or {}).get("id") if r is not None else None

    th.join(15)
    t.ok(poll.get("status") in (200, 204),
         "a runner long-poll in flight at SIGTERM gets an answer (200/204), not a reset",
         poll)
    if poll.get("status") == 200:
        t.diag("note: the long-poll was handed job %s during shutdown"
               % (poll.get("job") or {}).get("id"))

    try:
        s.proc.wait(20)
    except Exception:  # noqa: BLE001
        pass
    took = time.time() - t0
    rc = s.proc.poll()
    t.eq(rc, 0, "the server exits with status 0 after SIGTERM (took %.1f s)" % took,
         s.log_tail())
    t.ok(rc is not None and took < 15, "...within 15 s of SIGTERM")

    t.ok(not os.path.exists(s.db + "-wal") or os.path.getsize(s.db + "-wal") == 0,
         "the database was closed cleanly (no WAL content left behind)",
         os.path.exists(s.db + "-wal") and os.path.getsize(s.db + "-wal"))
    con = sqlite3.connect(s.db)
    ic = con.execute("PRAGMA integrity_check").fetchone()[0]
    t.eq(ic, "ok", "PRAGMA integrity_check is ok")
    con.close()

    # The submission answered 202 during shutdown is there after a restart.
    if sid is not None:
        s.start()
        o = s.submission(sid) or {}
        t.ok(o.get("sha256") == sha256(src) and o.get("status") in ("queued", "compiling"),
             "the submission accepted during shutdown is stored with its source", o)
        s.stop()
        t.eq(s.exit_status, 0, "a second SIGTERM with nothing in flight exits 0 too")


t = Tap()
require_binary(t)
t.run(main)
t.exit()
