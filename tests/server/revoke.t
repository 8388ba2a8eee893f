#!/usr/bin/env python3
# Revocation ends sessions at once: `cugrade-server token revoke NAME` (another
# process) and POST /api/admin/users/{name}/revoke end every web session of
# the user on the very next request -- not after the session's 12 hours, and
# not after the 2 s token cache either; a sign-in racing the revocation (its
# token lookup made before the revocation committed) starts no session; the
# rows are gone.
import os
import sqlite3
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, TOKEN_RE  # noqa: E402


def me(s, sess):
    return s.get("/api/me", headers={"Cookie": "cugrade_session=%s" % sess})


def sessions_of(s, name):
    c = sqlite3.connect(s.db)
    try:
        return c.execute("SELECT COUNT(*) FROM sessions JOIN users u ON u.id = sessions.user_id"
                         " WHERE u.name = ?", (name,)).fetchone()[0]
    finally:
        c.close()


def cli_revoke(t):
    s = Server(labs=["vadd"], tap=t)
    p = s.cli("token", "new", "alice_q7", "--db", s.db)
    tok2 = TOKEN_RE.search(p.stdout).group(0)
    s1, r = s.login("alice_q7")
    t.ok(s1 is not None, "alice signs in with her first token", r.brief())
    s2, r = s.login(tok2)
    t.ok(s2 is not None, "and in another browser with her second token", r.brief())
    t.ok(me(s, s1).status == 200 and me(s, s2).status == 200,
         "both sessions work before the revocation")
    t.eq(s.get("/labs", headers={"Cookie": "cugrade_session=%s" % s1}).status, 200,
         "the labs page works with the session")
    bsess, _ = s.login("bob_z3")

    p = s.cli("token", "revoke", "alice_q7", "--db", s.db, check=False)
    done = time.time()
    t.ok(p.returncode == 0 and "2 web sessions" in p.stderr,
         "token revoke alice_q7 exits 0 and says it ended 2 sessions", p.stdout + p.stderr)
    # No sleep: the very next requests, well inside the 2 s token cache.
    codes = [me(s, s1).status, me(s, s2).status]
    page = s.get("/labs", headers={"Cookie": "cugrade_session=%s" % s1})
    elapsed = time.time() - done
    t.eq(codes, [401, 401], "both of alice's sessions are refused on the next request "
         "(%.2f s after the CLI returned)" % elapsed)
    t.ok(page.status in (302, 303) and "/login" in (page.header("location") or ""),
         "the pages send her session to the sign-in page", page.brief())
    t.ok(elapsed < 1.5, "that was inside the token cache's 2 s, so no cache hid it (%.2f s)"
         % elapsed)
    t.eq(sessions_of(s, "alice_q7"), 0, "her sessions rows are deleted")
    t.eq(me(s, bsess).status, 200, "bob's session is untouched")
    r = s.get("/api/submissions?lab=vadd", headers={"Cookie": "cugrade_session=%s" % s1})
    t.eq(r.status, 401, "a read of her submissions with the old cookie is 401 too")

    # The server holds bob's token as valid in its 2 s cache (it was just
    # used), the CLI revokes it, and a sign-in with it follows at once. The
    # sign-in looks the token up in the database, not the cache (so this is
    # not the race: signin_race below is).
    s.get("/api/me", token="bob_z3")
    s.cli("token", "revoke", "bob_z3", "--db", s.db)
    sess, r = s.login("bob_z3")
    t.ok(sess is None and r.status == 401,
         "a sign-in with a just-revoked (still cached) token starts no session", r.brief())
    t.eq(me(s, bsess).status, 401, "and bob's earlier session ended with the revocation")

    p = s.cli("token", "new", "alice_q7", "--db", s.db)
    s3, r = s.login(TOKEN_RE.search(p.stdout).group(0))
    t.ok(s3 is not None and me(s, s3).status == 200 and me(s, s1).status == 401,
         "a new token signs in again; the old cookie stays dead", r.brief())
    s.cleanup()


def signin_race(t):
    """The sign-in's token lookup passes, then the revocation commits before
    its session row is written: the row is not written (auth_session_create
    inserts only for a token still live). Another process holds SQLite's
    write lock with the revocation made but not committed, so the sign-in's
    lookup (a read) sees the token live and its INSERT waits for the lock;
    the revocation commits; the INSERT then runs (3 s of the server's 5 s busy
    timeout: time for a loaded host's sign-in to reach it)."""
    s = Server(labs=["vadd"], tap=t)
    ext = sqlite3.connect(s.db, timeout=10, isolation_level=None)
    ext.execute("BEGIN IMMEDIATE")
    ext.execute("UPDATE tokens SET revoked = 1 WHERE revoked = 0 AND user_id ="
                " (SELECT id FROM users WHERE name = 'alice_q7')")
    box = {}
    th = threading.Thread(target=lambda: box.update(res=s.login("alice_q7")), daemon=True)
    th.start()
    th.join(3.0)
    waiting = th.is_alive()
    ext.execute("COMMIT")
    ext.close()
    th.join(20)
    sess, r = box.get("res") or (None, None)
    t.ok(waiting, "setup: the sign-in's lookup passed and it waits for the write lock to store "
         "its session (still pending after 3 s)")
    # "(it was revoked)": the refusal of the session's INSERT, not of the
    # lookup (which, had it run after the commit, would say only "not valid").
    t.ok(sess is None and r is not None and r.status == 401
         and "(it was revoked)" in r.body.decode("utf-8", "replace"),
         "a sign-in whose lookup passed just before the revocation committed starts no session "
         "(401, the token was revoked)", r.brief() if r is not None else box)
    t.eq(sessions_of(s, "alice_q7"), 0, "...and no session row of alice's is left")
    s.cleanup()


def api_revoke(t):
    s = Server(labs=["vadd"], tap=t)
    sess, _ = s.login("bob_z3")
    t.eq(me(s, sess).status, 200, "bob is signed in")
    t.eq(s.get("/api/me", token="bob_z3").status, 200, "bob's token works (and is now cached)")
    r = s.post("/api/admin/users/bob_z3/revoke", token="tina_ta")
    t.error(r, 403, "forbidden", "a TA may not revoke tokens")
    r = s.post("/api/admin/users/nobody_here/revoke", token="admin")
    t.error(r, 404, "not_found", "revoking an unknown user")
    r = s.post("/api/admin/users/bob_z3/revoke", token="admin")
    j = r.json() or {}
    t.ok(r.status == 200 and j.get("user") == "bob_z3" and j.get("tokens_revoked") == 1
         and j.get("sessions_ended") == 1,
         "POST /api/admin/users/bob_z3/revoke: 200, 1 token, 1 session", r.brief())
    t.eq([me(s, sess).status, s.get("/api/me", token="bob_z3").status], [401, 401],
         "bob's session and his token are refused on the next request")
    t.eq(sessions_of(s, "bob_z3"), 0, "his sessions rows are deleted")
    c = sqlite3.connect(s.db)
    audit = c.execute("SELECT detail FROM audit_log WHERE action = 'token_revoke'"
                      " AND target = 'bob_z3'").fetchall()
    c.close()
    t.ok(audit and "1 sessions" in audit[-1][0], "the revocation is in the audit log", audit)
    t.eq(s.get("/api/me", token="alice_q7").status, 200, "other users are untouched")
    s.cleanup()


t = Tap()
require_binary(t)
t.run(cli_revoke)
t.run(signin_race)
t.run(api_revoke)
t.exit()
