#!/usr/bin/env python3
# The admin CLI on the same binary, against a running server's database:
# init refuses to run twice; `user add` prints a token the running server
# accepts; `user list` lists; `token new` adds one; `token revoke` takes effect
# at once (no stale cache); every command has --help; mistakes exit non-zero.
import os
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, TOKEN_RE  # noqa: E402


def main(t):
    s = Server(labs=["vadd"], tap=t)

    r = s.get("/healthz")
    j = r.json() or {}
    t.eq({k: j.get(k) for k in ("ok", "db", "integrity", "disk")},
         {"ok": True, "db": "ok", "integrity": "ok", "disk": "ok"},
         "GET /healthz is {ok: true, db: ok, integrity: ok, disk: ok, ...} (health.t has more)")

    p = s.cli("init", "--db", s.db, check=False)
    t.ok(p.returncode != 0 and not TOKEN_RE.search(p.stdout + p.stderr),
         "init on an initialized database fails and prints no token",
         "exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    r = s.get("/api/me", token="admin")
    t.status(r, 200, "...and the first admin token still works")

    p = s.cli("user", "add", "frank", "student", "--display-name", "Frank F", "--db", s.db,
              check=False)
    m = TOKEN_RE.search(p.stdout)
    t.ok(p.returncode == 0 and m and m.group(0).startswith("cgs_"),
         "user add frank student prints a cgs_ token on stdout", p.stdout + p.stderr)
    tok = m.group(0) if m else "none"
    r = s.get("/api/me", token=tok)
    t.ok(r.status == 200 and (r.json() or {}).get("name") == "frank"
         and (r.json() or {}).get("display_name") == "Frank F",
         "the running server accepts frank's new token at once", r.brief())

    p = s.cli("user", "add", "frank", "admin", "--db", s.db, check=False)
    t.ok(p.returncode != 0, "user add of an existing name fails", p.stdout + p.stderr)
    r = s.get("/api/me", token=tok)
    t.eq((r.json() or {}).get("role"), "student", "...and frank is still a student")
    p = s.cli("user", "add", "gina", "wizard", "--db", s.db, check=False)
    t.ok(p.returncode != 0 and "student" in (p.stderr + p.stdout),
         "user add with an unknown role fails and lists the valid roles", p.stdout + p.stderr)

    p = s.cli("user", "list", "--db", s.db, check=False)
    t.ok(p.returncode == 0 and all(n in p.stdout for n in ("admin", "demo", "alice_q7", "frank"))
         and not TOKEN_RE.search(p.stdout),
         "user list lists the users (and no tokens)", p.stdout + p.stderr)

    p = s.cli("token", "new", "frank", "--db", s.db, check=False)
    m = TOKEN_RE.search(p.stdout)
    tok2 = m.group(0) if m else "none"
    r = s.get("/api/me", token=tok2)
    t.ok(p.returncode == 0 and r.status == 200,
         "token new frank prints a second token that works", p.stdout + p.stderr)

    p = s.cli("token", "revoke", "frank", "--db", s.db, check=False)
    t.eq(p.returncode, 0, "token revoke frank exits 0", p.stdout + p.stderr)
    # The server caches token lookups for a short while (auth.c: 2 s).
    deadline = time.time() + 4
    while True:
        codes = [s.get("/api/me", token=x).status for x in (tok, tok2)]
        if codes == [401, 401] or time.time() > deadline:
            break
        time.sleep(0.2)
    t.eq(codes, [401, 401], "both of frank's tokens are refused by the running server "
         "within 4 s of the revoke")

    for cmd in (["init"], ["serve"], ["user"], ["token"]):
        p = s.cli(*(cmd + ["--help"]), check=False)
        t.ok(p.returncode == 0 and "usage" in (p.stdout + p.stderr).lower(),
             "cugrade-server %s --help exits 0 with a usage text" % " ".join(cmd),
             p.stdout + p.stderr)
    p = s.cli("frobnicate", check=False)
    t.ok(p.returncode != 0 and p.stderr, "an unknown command exits non-zero with a message",
         p.stdout + p.stderr)
    p = s.cli("serve", "--listen", "nonsense", "--db", s.db, check=False, timeout=10)
    t.ok(p.returncode != 0 and "listen" in p.stderr.lower(),
         "serve --listen nonsense exits non-zero naming --listen", p.stderr)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
