#!/usr/bin/env python3
"""Upgrades: a database made by the previous release (schema version 1,
tests/deploy/fixtures/release-0b6121c.sql, dumped from a database that
release's binary created and served) is upgraded in place when this server
starts on it: user_version becomes the current one, the step's index exists,
the users, tokens and submissions are intact; a second start upgrades
nothing; a database from a newer release is refused, untouched. TAP."""
import os, re, shutil, sqlite3, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from cugrade_test import Tap, Server, BINARY  # noqa: E402

FIX = os.path.join(HERE, "fixtures", "release-0b6121c.sql")


def main(t):
    text = open(FIX).read()
    tok = dict(re.findall(r"^-- (admin|alice) (cg[as]_[0-9a-f]{64})$", text, re.M))
    s = Server(labs=["vadd"], start=False, tap=t)
    db = sqlite3.connect(s.db)
    db.executescript(text)
    # A web session of that release: it names no token, so it cannot be tied
    # to a revocation; version 3 ends it.
    db.execute("INSERT INTO sessions(user_id, hash, csrf, created_at, expires_at)"
               " VALUES(3, ?, ?, strftime('%s','now'), strftime('%s','now') + 3600)",
               ("ab" * 32, "cd" * 32))
    db.commit()
    db.close()
    p = subprocess.run([BINARY, "user", "list", "--db", s.db], capture_output=True, text=True, timeout=30)
    t.ok(p.returncode == 0 and "alice" in p.stdout, "the old database opens with this binary", p.stdout + p.stderr)
    db = sqlite3.connect(s.db)
    ver = db.execute("PRAGMA user_version").fetchone()[0]
    idx = db.execute("SELECT name FROM sqlite_master WHERE type='index' AND name='submissions_board'").fetchone()
    rows = db.execute("SELECT id, sha256, status FROM submissions ORDER BY id").fetchall()
    db.close()
    t.ok(ver >= 2, "it was upgraded in place: user_version 1 -> %d" % ver)
    t.ok(idx is not None, "the version-2 step's index exists")
    t.eq(len(rows), 3, "the release's three submissions are still there")
    t.ok("upgraded to schema version 2" in p.stderr, "the upgrade is logged, step by step", p.stderr)
    db = sqlite3.connect(s.db)
    cols = [r[1] for r in db.execute("PRAGMA table_info(sessions)")]
    nsess = db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    pst = db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='pseudonyms'").fetchone()
    db.close()
    t.ok(ver >= 3 and "token_id" in cols, "version 3: sessions name their token", cols)
    t.eq(nsess, 0, "version 3: the release's session, tied to no token, is ended")
    t.ok(ver >= 4 and pst is not None, "version 4: the per-lab pseudonyms table exists")
    p = subprocess.run([BINARY, "user", "list", "--db", s.db], capture_output=True, text=True, timeout=30)
    t.ok(p.returncode == 0 and "upgraded" not in p.stderr, "a second start upgrades nothing", p.stderr)
    s.tok = {"admin": tok["admin"], "alice": tok["alice"]}
    s.start()
    r = s.get("/api/submissions/1", token=tok["alice"])
    t.ok(r.status == 200 and (r.json() or {}).get("sha256") == rows[0][1],
         "the release's tokens and submissions work on the upgraded server", r.brief())
    r = s.post("/api/labs/vadd/submissions", token=tok["alice"], body=b"__global__ void k() {} // new\n")
    t.eq(r.status, 202, "a new submission on the upgraded database is accepted", r.brief())
    s.stop()
    # A database from a newer release: refused, left as it was.
    d = tempfile.mkdtemp(prefix="cugrade-mig-")
    try:
        newer = os.path.join(d, "newer.db")
        shutil.copy(s.db, newer)
        c = sqlite3.connect(newer)
        c.execute("PRAGMA user_version=99")
        c.commit()
        c.close()
        p = subprocess.run([BINARY, "user", "list", "--db", newer], capture_output=True, text=True, timeout=30)
        c = sqlite3.connect(newer)
        v = c.execute("PRAGMA user_version").fetchone()[0]
        c.close()
        t.ok(p.returncode != 0 and "newer than this binary" in p.stderr and v == 99,
             "a database from a newer release is refused and left at its version", p.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)


t = Tap()
t.run(main)
t.exit()
