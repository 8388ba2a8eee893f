#!/usr/bin/env python3
"""Backups: `cugrade-server backup FILE` copies the live database while
students submit (threads posting submissions the whole time); the copy
passes integrity_check, holds every submission whose 202 came back before
the backup started (with its source, byte for byte), and the server kept
accepting during the backup. Restore as docs/deploy.md says (stop, copy the
file over the database, remove -wal/-shm, start): the restored server
answers with the old tokens and the old submissions. TAP."""
import hashlib, os, shutil, sqlite3, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from cugrade_test import Tap, Server, BINARY, kernel  # noqa: E402

NSTUD = 12


def load(s, stop, accepted, lock):
    """Submit as NSTUD students in turn until stop is set; record
    (id, sha256, time the 202 arrived)."""
    i = 0
    while not stop.is_set():
        who = "st%d" % (i % NSTUD)
        src = kernel("backup load %d" % i)
        try:
            r = s.post("/api/labs/vadd/submissions", token=s.tok[who], body=src, timeout=10)
            if r.status == 202:
                with lock:
                    accepted.append((r.json()["id"], hashlib.sha256(src).hexdigest(), time.time()))
        except OSError:
            pass
        i += 1


def main(t):
    s = Server(labs=["vadd"], tap=t, users=[("st%d" % i, "student", "Student %d" % i) for i in range(NSTUD)])
    out = os.path.join(s.dir, "backups", "cugrade-copy.db")
    os.makedirs(os.path.dirname(out))
    stop, lock, accepted = threading.Event(), threading.Lock(), []
    th = [threading.Thread(target=load, args=(s, stop, accepted, lock)) for _ in range(3)]
    for x in th:
        x.start()
    try:
        while True:       # some load first
            with lock:
                if len(accepted) >= 40:
                    break
            time.sleep(0.05)
        started = time.time()
        p = subprocess.run([BINARY, "backup", out, "--db", s.db], capture_output=True, text=True, timeout=60)
        ended = time.time()
        time.sleep(0.5)   # and some load after
    finally:
        stop.set()
        for x in th:
            x.join()
    t.ok(p.returncode == 0 and os.path.exists(out), "cugrade-server backup FILE exits 0 under write load",
         p.stdout + p.stderr)
    t.ok(not os.path.exists(out + ".tmp"), "no FILE.tmp is left behind")
    during = [a for a in accepted if started <= a[2] <= ended]
    after = [a for a in accepted if a[2] > ended]
    t.ok(s.alive() and len(after) > 0, "the server kept accepting during and after the backup "
         "(%d during, %d after)" % (len(during), len(after)))
    db = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    t.eq(db.execute("PRAGMA integrity_check").fetchone()[0], "ok", "the copy passes integrity_check")
    t.eq(db.execute("PRAGMA journal_mode").fetchone()[0], "delete",
         "the copy is one self-contained file (journal_mode=delete, no -wal)")
    rows = {r[0]: r[1] for r in db.execute("SELECT id, sha256 FROM submissions")}
    srcs = {r[0]: hashlib.sha256(r[1]).hexdigest() for r in db.execute("SELECT id, source FROM submissions")}
    before = [a for a in accepted if a[2] < started]
    missing = [a[0] for a in before if a[0] not in rows]
    t.ok(len(before) >= 40 and not missing,
         "every submission answered 202 before the backup began is in the copy (%d)" % len(before),
         "missing: %s" % missing[:20])
    t.ok(all(rows.get(a[0]) == a[1] and srcs.get(a[0]) == a[1] for a in before),
         "their hashes and sources are intact in the copy")
    ids = sorted(rows)
    t.ok(ids == list(range(ids[0], ids[0] + len(ids))),
         "the copy is one instant: submission ids without holes (%d..%d)" % (ids[0], ids[-1]))
    nall = len(accepted)
    t.ok(len(rows) < nall, "submissions made after the backup are not in it (%d of %d)" % (len(rows), nall))
    db.close()

    # Restore (docs/deploy.md): stop, copy over, remove -wal/-shm, start.
    s.stop()
    shutil.copy(out, s.db)
    for ext in ("-wal", "-shm"):
        try:
            os.unlink(s.db + ext)
        except FileNotFoundError:
            pass
    s.start()
    last = before[-1]
    r = s.get("/api/submissions/%d" % last[0], token=s.tok["admin"])
    t.ok(r.status == 200 and (r.json() or {}).get("sha256") == last[1],
         "the restored server serves a submission from before the backup", r.brief())
    r = s.get("/api/submissions/%d/source" % last[0], token=s.tok["admin"])
    t.ok(r.status == 200 and hashlib.sha256(r.body).hexdigest() == last[1],
         "with its source byte for byte", r.brief())
    r = s.post("/api/labs/vadd/submissions", token=s.tok["st0"], body=kernel("after restore"))
    t.ok(r.status in (202, 429), "old tokens work on the restored server (a new submission: %d)" % r.status,
         r.brief())
    r = s.get("/api/submissions/%d" % after[-1][0], token=s.tok["admin"])
    t.eq(r.status, 404, "a submission made after the backup is gone after the restore")

    # A missing database is an error, not an empty copy.
    p = subprocess.run([BINARY, "backup", out + "2", "--db", os.path.join(s.dir, "nope.db")],
                       capture_output=True, text=True, timeout=30)
    t.ok(p.returncode != 0 and not os.path.exists(out + "2") and not os.path.exists(os.path.join(s.dir, "nope.db")),
         "backup of a database that does not exist fails and creates nothing", p.stderr)


t = Tap()
t.run(main)
t.exit()
