#!/usr/bin/env python3
# Durability: 50 parallel submissions, kill -9 the moment the last 202 arrives,
# restart on the same database: every accepted id is there, queued, with its
# source intact; the database passes PRAGMA integrity_check.
import os
import sqlite3
import sys
import threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, sha256  # noqa: E402

N = 50


def main(t):
    # One student each: a student's second queued submission would
    # supersede the first (and this test wants every one still queued).
    who = ["crash%02d" % i for i in range(N)]
    s = Server(labs=["vadd"], users=Server.DEFAULT_USERS + [(w, "student", w) for w in who], tap=t)
    srcs = {i: kernel("burst %d " % i + "x" * (i * 37)) for i in range(N)}
    accepted = {}           # id -> source
    statuses = []
    lock = threading.Lock()

    def one(i):
        try:
            r = s.submit("vadd", srcs[i], token=who[i], multipart_form=bool(i % 3 == 0))
        except OSError as e:
            with lock:
                statuses.append(str(e))
            return
        with lock:
            statuses.append(r.status)
            if r.status == 202 and isinstance((r.json() or {}).get("id"), int):
                accepted[r.json()["id"]] = (srcs[i], who[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    s.kill9()
    t.eq(len(accepted), N, "all %d parallel submissions were answered 202 with an id" % N,
         "statuses: %r" % sorted(map(str, statuses)))
    t.eq(len(set(accepted)), len(accepted), "the ids are distinct")

    try:
        con = sqlite3.connect(s.db)
        ic = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
    except sqlite3.Error as e:
        ic = "error: %s" % e
    t.eq(ic, "ok", "after kill -9 the database passes PRAGMA integrity_check")

    s.start()
    missing, wrong_status, wrong_src = [], [], []
    for sid, (src, owner) in sorted(accepted.items()):
        o = s.submission(sid, token="admin")
        if o is None:
            missing.append(sid)
            continue
        if o.get("status") != "queued":
            wrong_status.append((sid, o.get("status")))
        r = s.get("/api/submissions/%d/source" % sid, token=owner)
        if r.status != 200 or r.body != src or o.get("sha256") != sha256(src):
            wrong_src.append(sid)
    t.eq(missing, [], "after restart every accepted submission is there")
    t.eq(wrong_status, [], "after restart every accepted submission is queued")
    t.eq(wrong_src, [], "after restart every source (and its sha256) is intact")

    r = s.get("/api/submissions?lab=vadd&limit=1000", token="admin")
    listed = {x.get("id") for x in (r.json() or {}).get("submissions", [])}
    t.ok(set(accepted) <= listed, "the admin listing shows all %d after restart" % N,
         "missing from listing: %r" % sorted(set(accepted) - listed)[:10])

    # The queue still works after the crash: a runner claims the oldest.
    job = s.runner().claim(wait=2)
    t.ok(job is not None and job.get("id") == min(accepted),
         "after restart a runner claims the oldest accepted submission first",
         job and job.get("id"))
    r = s.submit("vadd", kernel("after restart"))
    t.ok(r.status == 202 and (r.json() or {}).get("id", 0) > max(accepted),
         "a new submission after restart gets a fresh, larger id", r.brief())


t = Tap()
require_binary(t)
t.run(main)
t.exit()
