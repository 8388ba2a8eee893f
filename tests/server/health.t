#!/usr/bin/env python3
# /healthz tells the truth about the things that stop a grader:
#  - a disk below --min-free-mb (statvfs of the database's folder): 503
#    "disk":"low", and a really full one (a small tmpfs, when this machine
#    lets us mount one) also turns submissions into a 503 that says so;
#  - a database with damaged pages: `serve` runs PRAGMA quick_check first and
#    refuses to start, naming the damage, without writing a byte into it;
#  - the database file renamed or deleted under a running server (its inode
#    no longer at its path): 503 "db":"moved" with the reason, writes 503;
#  - a read-only folder or file: its own clear error at start, not "already
#    being served by another cugrade-server" (which stays for a real second
#    server).
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, BINARY  # noqa: E402


def file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def serve_once(s, db, timeout=20, user=None):
    """Run `serve` on db and expect it to exit by itself; returns (rc, stderr)."""
    def drop():
        os.setgid(65534)
        os.setuid(65534)
    try:
        p = subprocess.run([BINARY, "serve", "--db", db, "--listen", "127.0.0.1:0",
                            "--labs", s.labs_dir, "--rubrics", s.rubrics_dir],
                           capture_output=True, text=True, timeout=timeout,
                           preexec_fn=drop if user == "nobody" else None)
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode("utf-8", "replace") if isinstance(
            e.stderr, bytes) else (e.stderr or "")
    return p.returncode, p.stderr


def healthz(t):
    s = Server(labs=["vadd"], tap=t)
    r = s.get("/healthz")
    j = r.json() or {}
    t.ok(r.status == 200 and j.get("ok") is True and j.get("db") == "ok"
         and j.get("integrity") == "ok" and j.get("disk") == "ok"
         and isinstance(j.get("free_mb"), int) and j.get("min_free_mb") == 512,
         "a healthy server: 200 ok, db ok, integrity ok, disk ok with free_mb and the "
         "default threshold 512", r.brief())
    m = s.get("/metrics", token="admin").body.decode()
    t.ok("\ncugrade_disk_free_bytes " in m, "/metrics has cugrade_disk_free_bytes")
    s.cleanup()

    # More than this disk holds: "near-full" as far as the threshold goes.
    s = Server(labs=["vadd"], tap=t, args=["--min-free-mb", "100000000"])
    r = s.get("/healthz")
    j = r.json() or {}
    t.ok(r.status == 503 and j.get("ok") is False and j.get("disk") == "low"
         and j.get("db") == "ok" and j.get("min_free_mb") == 100000000,
         "--min-free-mb above the free space: /healthz is 503 with disk low", r.brief())
    t.ok("/healthz reports the disk as low" in s.log_tail(),
         "the start says the disk is low in the log", s.log_tail())
    t.eq(s.submit("vadd", kernel("low")).status, 202,
         "the server still accepts work while the disk is only low")
    p = s.cli("serve", "--min-free-mb", "lots", "--db", s.db, check=False)
    t.ok(p.returncode == 2, "--min-free-mb must be a number", p.stderr)
    s.cleanup()


def full_disk(t):
    s = Server(labs=["vadd"], tap=t, start=False, args=["--min-free-mb", "1"])
    mnt = os.path.join(s.dir, "disk")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt],
                      capture_output=True).returncode != 0:
        t.skip("a really full disk", "cannot mount a tmpfs here (not root?)")
        return
    try:
        s.db = os.path.join(mnt, "cugrade.db")
        s.init()
        s.start()
        s.add_users(Server.DEFAULT_USERS)
        t.eq(s.get("/healthz").status, 200, "a 3 MiB tmpfs with 1 MiB threshold: healthy")
        with open(os.path.join(mnt, "filler"), "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        r = s.get("/healthz")
        j = r.json() or {}
        t.ok(r.status == 503 and j.get("disk") == "low" and j.get("free_mb") == 0,
             "the disk filled up: /healthz is 503, disk low, free_mb 0", r.brief())
        big = kernel("full") + b"// " + b"x" * 200000 + b"\n"
        r = s.submit("vadd", big)
        err = r.error() or {}
        t.ok(r.status == 503 and "disk is full" in err.get("message", ""),
             "a submission that cannot be stored is a 503 that says the disk is full",
             r.brief())
        # A runner's result on a full disk is a 503 that says so (the
        # runner retries a 503), not a 500 "Input/output error".
        run = s.runner("runner1")
        os.unlink(os.path.join(mnt, "filler"))
        job = run.claim(wait=2) if s.submit("vadd", kernel("claimed")).status == 202 else None
        try:
            with open(os.path.join(mnt, "filler"), "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass
        doc = None
        if job:
            from fake_runner import canned_result
            doc = canned_result(None)
            doc["output"] = "y" * 2000000
            r = run.result(job["id"], result=doc)
            try:
                msg = json.loads(r.body)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = ""
            t.ok(r.status == 503 and "disk is full" in msg,
                 "a runner's result on a full disk: 503 that says the disk is full",
                 "%s %r" % (r.status, r.body[:300]))
        else:
            t.ok(False, "a job to post a result for", run.last)
        if os.path.exists(os.path.join(mnt, "filler")):
            os.unlink(os.path.join(mnt, "filler"))
        t.eq(s.get("/healthz").status, 200, "space freed: healthy again")
        if job:
            doc["output"] = "stored"
            t.status(run.result(job["id"], result=doc), 200, "and the runner's retry is stored")
        t.eq(s.submit("vadd", kernel("after")).status, 202, "and submissions are stored again")
    finally:
        s.stop()
        subprocess.run(["umount", "-l", mnt])


def moved(t):
    """The database file renamed away under a running server: the server
    still writes into the file it has open, which nothing will find again
    (lost at restart). /healthz says so, and writes are refused."""
    s = Server(labs=["vadd"], tap=t)
    t.status(s.submit("vadd", kernel("before")), 202, "a submission before the move: 202")
    os.rename(s.db, s.db + ".away")
    r = s.get("/healthz")
    j = r.json() or {}
    t.ok(r.status == 503 and j.get("ok") is False and j.get("db") == "moved"
         and "reason" in j and s.db in j.get("reason", ""),
         "the database renamed away: /healthz is 503, db moved, with the reason", r.brief())
    r = s.submit("vadd", kernel("after"))
    t.ok(r.status == 503 and "moved" in ((r.error() or {}).get("message") or ""),
         "a submission then: 503 saying the database was moved (not 202 into a lost file)",
         r.brief())
    os.rename(s.db + ".away", s.db)
    t.eq(s.get("/healthz").status, 200, "moved back: healthy again")
    t.status(s.submit("vadd", kernel("back")), 202, "and submissions are stored again")
    s.cleanup()


def damaged(t):
    s = Server(labs=["vadd"], tap=t)
    for i in range(5):
        s.submit("vadd", kernel("row %d" % i))
    s.stop()
    c = sqlite3.connect(s.db)
    page = c.execute("PRAGMA page_size").fetchone()[0]
    root = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'submissions'").fetchone()[0]
    c.close()
    with open(s.db, "r+b") as f:
        f.seek((root - 1) * page)
        f.write(b"\xff" * 64)       # the page's header: no valid b-tree page type
    before = file_sha(s.db)
    rc, err = serve_once(s, s.db)
    t.ok(rc not in (0, None) and "quick_check" in err and "damaged" in err
         and "not serving" in err,
         "serve on a database with a damaged page exits at once, naming quick_check", err)
    t.ok("Page %d" % root in err or "page %d" % root in err.lower(),
         "the message names the damaged page (%d)" % root, err)
    t.eq(file_sha(s.db), before, "and it wrote nothing into the file")
    p = s.cli("user", "list", "--db", s.db, check=False)
    t.ok(p.returncode == 0, "the admin commands still open it (to look around)", p.stderr)
    s.cleanup()


def damaged_later(t):
    """A page damaged under a running server, in a table no request reads:
    the background check (PRAGMA quick_check on the sweep's connection,
    every CUGRADE_INTEGRITY_S seconds; 600 by default) finds it and /healthz
    says so. Before, /healthz answered 200 until something read the page."""
    s = Server(labs=["vadd"], tap=t, env={"CUGRADE_INTEGRITY_S": "1"})
    for i in range(5):
        s.submit("vadd", kernel("later %d" % i))
    time.sleep(0.5)
    c = sqlite3.connect(s.db, timeout=10)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = c.execute("PRAGMA page_size").fetchone()[0]
    root = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'audit_log'").fetchone()
    root = root[0] if root else c.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'submissions'").fetchone()[0]
    c.close()
    t.eq(s.get("/healthz").status, 200, "healthy before the damage")
    with open(s.db, "r+b") as f:
        f.seek((root - 1) * page)
        f.write(b"\xff" * 64)
    j, end = {}, time.time() + 15
    while time.time() < end:
        r = s.get("/healthz")
        j = r.json() or {}
        if r.status == 503:
            break
        time.sleep(0.3)
    t.ok(r.status == 503 and j.get("integrity") == "damaged",
         "a page damaged while serving: the background check makes /healthz 503 integrity "
         "damaged", r.brief())
    s.stop()
    s.cleanup()


def read_only(t):
    s = Server(labs=["vadd"], tap=t)
    s.stop()
    as_root = os.geteuid() == 0
    user = "nobody" if as_root else None
    ro = os.path.join(s.dir, "ro")
    os.makedirs(ro)
    db = os.path.join(ro, "cugrade.db")
    shutil.copy(s.db, db)
    if as_root:     # root ignores modes: run the server as nobody
        for d in (s.dir, s.labs_dir, s.rubrics_dir):
            os.chmod(d, 0o755)
        for base, dirs, files in os.walk(s.labs_dir):
            for n in dirs:
                os.chmod(os.path.join(base, n), 0o755)
            for n in files:
                os.chmod(os.path.join(base, n), 0o644)
        for n in os.listdir(s.rubrics_dir):
            os.chmod(os.path.join(s.rubrics_dir, n), 0o644)
        os.chmod(db, 0o666)
    os.chmod(ro, 0o555)
    rc, err = serve_once(s, db, user=user)
    t.ok(rc not in (0, None) and "not writable" in err and "already being served" not in err,
         "a read-only folder: serve says the folder is not writable", err)
    # (Nothing is checked for "created nothing" here: in a folder it may not
    # write, nothing could be created whatever serve did.)

    os.chmod(ro, 0o777)
    os.chmod(db, 0o444)
    rc, err = serve_once(s, db, user=user)
    t.ok(rc not in (0, None) and "read-only" in err and "already being served" not in err,
         "a read-only database file: serve says it can only be opened read-only", err)
    # The folder is writable: a serve that read the file before it saw it
    # was read-only would leave SQLite's -wal and -shm beside it.
    left = sorted(n for n in os.listdir(ro) if n.endswith(("-wal", "-shm")))
    t.eq(left, [], "and it stopped before SQLite used the file: no -wal or -shm beside it")
    os.chmod(db, 0o644)

    # The lock message stays for what it means: a second server.
    s.start()
    rc, err = serve_once(s, s.db)
    t.ok(rc not in (0, None) and "already being served" in err,
         "a second server on the same database is still told it is already served", err)
    s.cleanup()


t = Tap()
require_binary(t)
t.run(healthz)
t.run(full_disk)
t.run(moved)
t.run(damaged)
t.run(damaged_later)
t.run(read_only)
t.exit()
