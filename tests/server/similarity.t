#!/usr/bin/env python3
# Similarity checks (docs/staff.md): staff start a check of a lab over each
# student's best submission; it runs Debian's sim_c in a child process and
# the report lists the most similar pairs (percent, both students) with the
# matching line regions; code from the lab's starter is left out (two
# students who only filled in the starter are not reported as similar);
# students, runners and anonymous clients are refused. Python submissions
# (.py) are compared with sim_text, with the lab's starter.py left out. A lab
# whose deadlines are past gets one check by itself (the scheduler).
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, FIXTURES  # noqa: E402
from fake_runner import canned_result  # noqa: E402

STARTER = open(os.path.join(FIXTURES, "labs", "simlab", "starter.cu")).read()
TODO = "    // TODO: your kernel.\n"

ALICE_KERNEL = """    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    for (int base = idx * 4; base < n; base += stride * 4) {
        float x0 = 0, x1 = 0, x2 = 0, x3 = 0;
        if (base + 0 < n) x0 = a[base + 0] + b[base + 0];
        if (base + 1 < n) x1 = a[base + 1] + b[base + 1];
        if (base + 2 < n) x2 = a[base + 2] + b[base + 2];
        if (base + 3 < n) x3 = a[base + 3] + b[base + 3];
        if (base + 0 < n) c[base + 0] = x0;
        if (base + 1 < n) c[base + 1] = x1;
        if (base + 2 < n) c[base + 2] = x2;
        if (base + 3 < n) c[base + 3] = x3;
    }
"""
# bob: alice's kernel with other names and comments (what sim_c sees through).
BOB_KERNEL = ("    // my own unrolled loop\n" + ALICE_KERNEL.replace("idx", "tid")
              .replace("stride", "step").replace("base", "k").replace("x0", "v0")
              .replace("x1", "v1"))
CAROL_KERNEL = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n"
DAVE_KERNEL = ("    for (int j = threadIdx.x + blockIdx.x * blockDim.x; j < n;"
               " j += blockDim.x * gridDim.x)\n        c[j] = b[j] + a[j];\n")


def source(kernel):
    assert TODO in STARTER
    return STARTER.replace(TODO, kernel).encode()


def main(t):
    if not shutil.which("sim_c"):
        t.ok(False, "sim_c is installed (Debian package similarity-tester: "
                    "sh deploy/install-deps.sh test)")
        return
    users = Server.DEFAULT_USERS + [("carol", "student", "Carol Young"),
                                    ("dave", "student", "Dave Zed")]
    s = Server(labs=["simlab"], users=users, tap=t)
    run = s.runner()
    r = s.post("/api/admin/labs/simlab/similarity", token="tina_ta")
    t.error(r, 409, "conflict", "with no graded submissions there is nothing to compare (409)")
    t.ok("at least two" in ((r.error() or {}).get("message") or ""),
         "...and the message says a check needs two students", r.brief())
    subs = {}
    for who, kern in (("alice_q7", ALICE_KERNEL), ("bob_z3", BOB_KERNEL),
                      ("carol", CAROL_KERNEL), ("dave", DAVE_KERNEL)):
        r = s.submit("simlab", source(kern), token=who, filename="%s.cu" % who)
        subs[who] = (r.json() or {}).get("id")
        job = run.claim(wait=2) or {}
        run.result(job.get("id"), "graded", canned_result(job, score=50))
        s.wait_status(subs[who], "graded")
    url = "/api/admin/labs/simlab/similarity"

    # --- who may run and read
    r = s.post(url, token="alice_q7")
    t.error(r, 403, "forbidden", "a student cannot run a similarity check")
    r = s.post(url)
    t.error(r, 401, "unauthorized", "anonymous cannot run one")
    r = s.get(url, token="bob_z3")
    t.error(r, 403, "forbidden", "a student cannot read the report")
    r = s.post(url, token="runner1")
    t.error(r, 403, "forbidden", "a runner token cannot run one")
    r = s.get(url, token="tina_ta")
    t.ok(r.status == 200 and (r.json() or {}).get("run") is None,
         "before any run the report says so (run: null)", r.brief())
    r = s.post("/api/admin/labs/nolab/similarity", token="tina_ta")
    t.error(r, 404, "not_found", "an unknown lab is 404")

    # --- a run
    r = s.post(url, token="tina_ta")
    t.status(r, 202, "a TA starts a check: 202 at once, the work goes on in a child process")
    run_id = (r.json() or {}).get("run")
    t.ok(s.healthy(), "the server answers while the check runs")
    rep = {}
    deadline = time.time() + 60
    while time.time() < deadline:
        rep = s.get(url, token="tina_ta").json() or {}
        if (rep.get("run") or {}).get("status") != "running":
            break
        time.sleep(0.2)
    rn = rep.get("run") or {}
    t.eq((rn.get("id"), rn.get("status"), rn.get("tool"), rn.get("files"),
          rn.get("starter_excluded")), (run_id, "done", "sim_c", 4, True),
         "the run is done: sim_c over 4 best submissions, starter excluded", rn)
    pairs = rep.get("pairs") or []
    t.ok(pairs, "the report lists pairs", rep)
    top = pairs[0] if pairs else {}
    names = {(top.get("a") or {}).get("user"), (top.get("b") or {}).get("user")}
    t.eq(names, {"alice_q7", "bob_z3"}, "the most similar pair is alice and bob", pairs[:3])
    t.ok(top.get("percent", 0) >= 60,
         "alice and bob are reported at >= 60%% (renamed copy): %s" % top.get("percent"), top)
    t.ok(all(p.get("percent", 0) <= top.get("percent", 0) for p in pairs),
         "pairs are sorted, most similar first", [p.get("percent") for p in pairs])
    cd = [p for p in pairs if {p["a"]["user"], p["b"]["user"]} == {"carol", "dave"}]
    t.ok(not cd or cd[0]["percent"] < 30,
         "carol and dave, who share only the starter, are not reported as similar", cd)
    subs_in = {(p["a"]["submission"], p["b"]["submission"]) for p in pairs}
    t.ok(any(set(x) == {subs["alice_q7"], subs["bob_z3"]} for x in subs_in),
         "the pair names the best submissions of both students", subs_in)

    # --- one pair with its regions
    r = s.get("/api/admin/similarity/pairs/%s" % top.get("id"), token="tina_ta")
    pj = r.json() or {}
    t.status(r, 200, "a TA reads the pair")
    regions = pj.get("regions") or []
    t.ok(regions and all(len(x.get("a", [])) == 2 and len(x.get("b", [])) == 2 and
                         x.get("tokens", 0) > 0 for x in regions),
         "the pair has matching regions: line ranges on both sides and token counts", pj)
    kernel_line = STARTER[:STARTER.index(TODO)].count("\n") + 1
    t.ok(any(x["a"][0] <= kernel_line + 3 <= x["a"][1] for x in regions),
         "a region covers the kernel body (line %d on)" % kernel_line, regions)
    t.ok(regions and all(x["a"][0] >= kernel_line and x["b"][0] >= kernel_line for x in regions),
         "...and none reaches into the starter above it (lines 1-%d)" % (kernel_line - 1), regions)
    r = s.get("/api/admin/similarity/pairs/%s" % top.get("id"), token="alice_q7")
    t.error(r, 403, "forbidden", "a student cannot read a pair")
    r = s.get("/api/admin/similarity/pairs/999999", token="tina_ta")
    t.error(r, 404, "not_found", "an unknown pair is 404")


PY_STARTER = open(os.path.join(FIXTURES, "labs", "pylab", "starter.py")).read()
PY_TODO = "    # TODO: your kernel.\n    pass\n"
PY_ALICE = """    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        left = a[i]
        right = b[i]
        total = left + right
        if math.isnan(total):
            total = 0.0
        c[i] = total
        i += stride
"""
PY_BOB = "    # grid-stride loop, written on my own\n" + PY_ALICE.replace("        c[i] = total\n", "        c[i] = total  # store\n")
PY_CAROL = "    i = cuda.grid(1)\n    if i < n:\n        c[i] = a[i] + b[i]\n"
PY_DAVE = "    for j in range(cuda.grid(1), n, cuda.gridsize(1)):\n        c[j] = b[j] + a[j]\n"


def py_best(s, who, kern, t0, src=None, ext="py", score=50):
    """Store a graded Python submission (or src as a file of ext) for who in
    pylab straight in the database."""
    src = src if src is not None else PY_STARTER.replace(PY_TODO, kern).encode()
    db = sqlite3.connect(s.db, timeout=10)
    try:
        uid = db.execute("SELECT id FROM users WHERE name = ?", (who,)).fetchone()[0]
        cur = db.execute(
            "INSERT INTO submissions(user_id, lab, filename, source, sha256, size, status,"
            " score, max_score, rubric_version, created_at, updated_at, graded_at)"
            " VALUES(?, 'pylab', ?, ?, ?, ?, 'graded', ?, 100, 1, ?, ?, ?)",
            (uid, who + "." + ext, src, hashlib.sha256(src).hexdigest(), len(src), score, t0, t0,
             t0))
        db.commit()
        return cur.lastrowid
    finally:
        db.close()


def python_lab(t):
    users = Server.DEFAULT_USERS + [("carol", "student", "Carol Young"),
                                    ("dave", "student", "Dave Zed")]
    s = Server(labs=["pylab"], users=users, tap=t)
    assert PY_TODO in PY_STARTER
    now = time.time()
    for who, kern in (("alice_q7", PY_ALICE), ("bob_z3", PY_BOB), ("carol", PY_CAROL),
                      ("dave", PY_DAVE)):
        py_best(s, who, kern, now)
    url = "/api/admin/labs/pylab/similarity"
    r = s.post(url, token="tina_ta")
    t.status(r, 202, "python: a TA starts a check of a Python lab")
    rep = {}
    deadline = time.time() + 60
    while time.time() < deadline:
        rep = s.get(url, token="tina_ta").json() or {}
        if (rep.get("run") or {}).get("status") != "running":
            break
        time.sleep(0.2)
    rn = rep.get("run") or {}
    t.eq((rn.get("status"), rn.get("tool"), rn.get("files"), rn.get("starter_excluded")),
         ("done", "sim_text", 4, True), "python: sim_text over 4 .py files, starter.py excluded", rn)
    pairs = rep.get("pairs") or []
    top = pairs[0] if pairs else {}
    t.eq({(top.get("a") or {}).get("user"), (top.get("b") or {}).get("user")},
         {"alice_q7", "bob_z3"}, "python: alice and bob are the most similar pair", pairs)
    cd = [p for p in pairs if {p["a"]["user"], p["b"]["user"]} == {"carol", "dave"}]
    t.ok(not cd, "python: carol and dave (only the starter in common) are not reported", cd)


def mixed_lab(t):
    """A lab that takes both languages: the best-ranked file is a .cu, the
    others are Python; the check still compares with sim_text (sim_c lexes
    Python as C), starter.py left out."""
    users = Server.DEFAULT_USERS + [("carol", "student", "Carol Young"),
                                    ("dave", "student", "Dave Zed"), ("erin", "student", "Erin")]
    s = Server(labs=["pylab"], users=users, tap=t)
    now = time.time()
    py_best(s, "erin", "", now, src=STARTER.replace(TODO, "    c[0] = 1;\n").encode(), ext="cu",
            score=90)
    for who, kern in (("alice_q7", PY_ALICE), ("bob_z3", PY_BOB), ("carol", PY_CAROL),
                      ("dave", PY_DAVE)):
        py_best(s, who, kern, now)
    url = "/api/admin/labs/pylab/similarity"
    t.status(s.post(url, token="tina_ta"), 202, "mixed: a TA starts a check")
    rep = {}
    deadline = time.time() + 60
    while time.time() < deadline:
        rep = s.get(url, token="tina_ta").json() or {}
        if (rep.get("run") or {}).get("status") != "running":
            break
        time.sleep(0.2)
    rn = rep.get("run") or {}
    t.eq((rn.get("status"), rn.get("tool"), rn.get("files"), rn.get("starter_excluded")),
         ("done", "sim_text", 5, True), "mixed: the top file is .cu, the .py files are compared "
         "with sim_text, starter.py excluded", rn)
    top = (rep.get("pairs") or [{}])[0]
    t.eq({(top.get("a") or {}).get("user"), (top.get("b") or {}).get("user")},
         {"alice_q7", "bob_z3"}, "mixed: alice and bob are the most similar pair", rep.get("pairs"))
    s.cleanup()


def scheduled(t):
    """The "closed" fixture lab's deadlines are in 2020: with the scheduler
    looking every 0.3 s, one check runs by itself, and only one."""
    s = Server(labs=["closed"], env={"CUGRADE_SIMILARITY_AUTO_S": "0.3"}, tap=t)
    url = "/api/admin/labs/closed/similarity"
    time.sleep(1)
    t.eq((s.get(url, token="tina_ta").json() or {}).get("run"), None,
         "scheduler: with no graded submissions no check runs")
    db = sqlite3.connect(s.db, timeout=10)
    for who, tag in (("alice_q7", "x"), ("bob_z3", "y")):
        src = STARTER.replace(TODO, ALICE_KERNEL + "    // %s\n" % tag).encode()
        uid = db.execute("SELECT id FROM users WHERE name = ?", (who,)).fetchone()[0]
        db.execute("INSERT INTO submissions(user_id, lab, filename, source, sha256, size, status,"
                   " score, max_score, rubric_version, created_at, updated_at, graded_at)"
                   " VALUES(?, 'closed', 'k.cu', ?, ?, ?, 'graded', 50, 100, 1, 1.58e9, 1.58e9,"
                   " 1.58e9)", (uid, src, hashlib.sha256(src).hexdigest(), len(src)))
    db.commit()
    db.close()
    # Rows written behind the server's back: a change of show_name makes it
    # forget its cached scoreboards, as a graded result would.
    r = s.request("PATCH", "/api/me", token="alice_q7", json_body={"show_name": False})
    t.status(r, 200, "scheduler: (the cached scoreboards are dropped)")
    rep = {}
    deadline = time.time() + 30
    while time.time() < deadline:
        rep = s.get(url, token="tina_ta").json() or {}
        if (rep.get("run") or {}).get("status") == "done":
            break
        time.sleep(0.2)
    rn = rep.get("run") or {}
    t.eq((rn.get("status"), rn.get("by"), rn.get("files")), ("done", "", 2),
         "scheduler: after the deadline a check ran by itself over both students", rn)
    time.sleep(1.5)
    db = sqlite3.connect(s.db, timeout=10)
    n = db.execute("SELECT COUNT(*) FROM similarity_runs WHERE lab = 'closed'").fetchone()[0]
    db.close()
    t.eq(n, 1, "scheduler: and only once (no new run at the next ticks)")


def store_off_loop(t):
    """Issue 29: a check's pairs (60 MB for a big class) were written on the
    event loop, which then waited for the write lock too. Here the sim_c
    on PATH is a wrapper that has another process hold the write lock for
    3 s while the real sim_c runs: the run's end waits for it on the writer
    thread, and /healthz is answered meanwhile."""
    fake = tempfile.mkdtemp(prefix="cugrade-simbin-")
    with open(os.path.join(fake, "sim_c"), "w") as f:
        f.write("#!/bin/sh\n"
                "python3 -c 'import sqlite3, sys, time\n"
                "c = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)\n"
                "c.execute(\"BEGIN IMMEDIATE\"); time.sleep(3); c.execute(\"ROLLBACK\")' "
                "\"$CUGRADE_TEST_DB\" >/dev/null 2>&1 &\n"
                "sleep 0.3\nexec %s \"$@\"\n" % shutil.which("sim_c"))
    os.chmod(os.path.join(fake, "sim_c"), 0o755)
    s = Server(labs=["simlab"], tap=t, start=False,
               env={"PATH": fake + ":" + os.environ.get("PATH", "")})
    s.env = dict(getattr(s, "env", None) or {}, CUGRADE_TEST_DB=s.db)
    s.init()
    s.start()
    s.add_users(Server.DEFAULT_USERS)
    db = sqlite3.connect(s.db, timeout=10)
    for who, tag in (("alice_q7", "x"), ("bob_z3", "y")):
        src = STARTER.replace(TODO, ALICE_KERNEL + "    // %s\n" % tag).encode()
        uid = db.execute("SELECT id FROM users WHERE name = ?", (who,)).fetchone()[0]
        db.execute("INSERT INTO submissions(user_id, lab, filename, source, sha256, size, status,"
                   " score, max_score, rubric_version, created_at, updated_at, graded_at)"
                   " VALUES(?, 'simlab', 'k.cu', ?, ?, ?, 'graded', 50, 100, 1, 1.58e9, 1.58e9,"
                   " 1.58e9)", (uid, src, hashlib.sha256(src).hexdigest(), len(src)))
    db.commit()
    db.close()
    url = "/api/admin/labs/simlab/similarity"
    r = s.post(url, token="tina_ta")
    t.status(r, (200, 201, 202), "a check starts")
    worst, rep, end = 0.0, {}, time.time() + 20
    while time.time() < end:
        t0 = time.time()
        s.get("/healthz", timeout=15)
        worst = max(worst, time.time() - t0)
        rep = s.get(url, token="tina_ta", timeout=15).json() or {}
        if (rep.get("run") or {}).get("status") in ("done", "failed"):
            break
        time.sleep(0.05)
    t.eq((rep.get("run") or {}).get("status"), "done", "the check ends done",
         json.dumps(rep) + "\n" + s.log_tail())
    t.ok(worst < 1.0, "while another process holds the write lock as the check ends, /healthz "
         "is answered (worst %.2f s): the pairs are stored off the loop" % worst)
    s.cleanup()
    shutil.rmtree(fake, ignore_errors=True)


if __name__ == "__main__":
    t = Tap()
    require_binary(t)
    t.run(main)
    if shutil.which("sim_text"):
        t.run(python_lab)
        t.run(mixed_lab)
    else:   # the same package as sim_c: its Python checks never vanish unsaid
        t.ok(False, "sim_text is installed (Debian package similarity-tester: "
                    "sh deploy/install-deps.sh test)")
    t.run(scheduled)
    t.run(store_off_loop)
    t.exit()
