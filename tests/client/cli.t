#!/usr/bin/env python3
# The student client (client/cugrade.py) end to end against the real server
# and tests/tools/fake_runner.py: login (wrong token, right token, the 0600
# config and refusing a readable one), `submit --watch` from the queue (its
# position and ETA) through every phase and the k/N case count to the final
# table, in a pipe (plain lines) and in a pseudo-terminal (one redrawn line),
# each exit status (graded, a failed case, compile_error, system_error, a
# wrong token, the server down or gone while watching, 429, 413, 404),
# `list`, `show`, `scoreboard` and their --json. The runner moves on only
# after the client has shown the previous state: no wall-clock windows.
import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_test import (Tap, require_binary, kernel, canned_result, open_server, Cli,  # noqa
                         Lines, CLIENT)
from cugrade_test import free_port  # noqa: E402


def write(cli, name, data):
    path = os.path.join(cli.home, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def grade_async(run, **kw):
    """Claim the next job in a thread and grade it (kw: FakeRunner.grade)."""
    box = {}

    def go():
        job = run.claim(wait=20)
        box["job"] = job
        if job:
            box["resp"] = run.grade(job, **kw)
    th = threading.Thread(target=go, daemon=True)
    th.start()
    return th, box


def check_login(t, s, cli):
    r = cli.run("submit", "open", "k.cu")
    t.eq(r.returncode, 4, "submit before login: exit 4", r.stderr)
    t.ok("not signed in" in r.stderr and "cugrade login" in r.stderr,
         "...and it says to run `cugrade login`", r.stderr)

    r = cli.login(s, "cgs_" + "0" * 64)
    t.eq(r.returncode, 4, "login with a wrong token: exit 4", r.stdout + r.stderr)
    t.ok("401" in r.stderr and "unauthorized" in r.stderr and "cugrade login" in r.stderr,
         "...with the server's 401 message and what to do", r.stderr)
    t.ok(not os.path.exists(cli.config), "...and no config file is written")

    r = cli.login(s, "alice_q7")
    t.eq(r.returncode, 0, "login with alice's token: exit 0", r.stdout + r.stderr)
    t.ok("as alice_q7 (Alice Quartermaine, student)" in r.stdout,
         "...it names the account the server knows", r.stdout)
    t.ok(os.path.isfile(cli.config), "the config is $XDG_CONFIG_HOME/cugrade/config.json",
         cli.config)
    st = os.stat(cli.config)
    t.eq(stat.S_IMODE(st.st_mode), 0o600, "the config file is mode 0600")
    t.eq(stat.S_IMODE(os.stat(os.path.dirname(cli.config)).st_mode), 0o700,
         "its folder is mode 0700")
    with open(cli.config) as f:
        cfg = json.load(f)
    t.ok(cfg.get("server") == s.url and cfg.get("token") == s.tok["alice_q7"],
         "it holds the server URL and the token", cfg.get("server"))

    os.chmod(cli.config, 0o644)
    r = cli.run("list")
    t.eq(r.returncode, 4, "a group/world-readable config: exit 4", r.stdout + r.stderr)
    t.ok("refusing to read" in r.stderr and "mode 0644" in r.stderr
         and "chmod 600 " + cli.config in r.stderr,
         "...naming the file, its mode and the chmod that fixes it", r.stderr)
    os.chmod(cli.config, 0o600)
    r = cli.run("list")
    t.eq(r.returncode, 0, "after chmod 600 it is read again", r.stderr)


def check_watch_queue(t, s, cli, run):
    # Three verdicts so that the server measures a service rate (ETA).
    for i in range(3):
        sid = s.submit("vadd", kernel("warm %d" % i), token="bob_z3").json()["id"]
        job = run.claim(wait=10)
        run.grade(job)
        s.wait_status(sid, "graded")
    ahead = [s.submit("vadd", kernel("ahead " + who), token=who).json()["id"]
             for who in ("bob_z3", "tina_ta", "demo")]
    deadline = time.time() + 10
    while time.time() < deadline and (s.submission(ahead[0]) or {}).get("eta_seconds") is None:
        time.sleep(0.2)
    src = kernel("alice watch")
    path = write(cli, "reduce.cu", src)
    p = cli.popen("submit", "open", path, "--watch", "--interval", "0.2")
    lines = Lines(p.stdout)

    got = lines.wait(lambda l: "Submitted reduce.cu to open: submission #" in l)
    t.ok(got, "submit prints the accepted submission's number", "".join(lines.seen))
    sid = int(re.search(r"#(\d+)", got or "#0").group(1))
    got = lines.wait(lambda l: "queued, position 4 (3 ahead)" in l)
    t.ok(got, "the live line shows the queue position: 4 (3 ahead)", "".join(lines.seen))
    t.ok(got and re.search(r"starts in about \d+ (s|min)", got),
         "...and the ETA from eta_seconds", got)
    for left in (3, 2, 1):
        job = run.claim(wait=10)
        run.grade(job)
        want = "position 1 (yours is next)" if left == 1 else "position %d (%d ahead)" % (
            left, left - 1)
        t.ok(lines.wait(lambda l: want in l), "after a job ahead is graded: " + want,
             "".join(lines.seen[-3:]))

    job = run.claim(wait=10)
    t.eq(job and job["id"], sid, "the runner claims alice's submission next")
    t.eq(job and job["filename"], "reduce.cu", "the server got the file's real name")
    t.eq(job and job["source"], src.decode(), "...and its bytes")
    steps = [("compiling", "", "compiling"),
             ("checking", "1/2", "checking correctness, case 1/2"),
             ("checking", "2/2", "checking correctness, case 2/2"),
             ("running", "memcheck", "running the sanitizers (memcheck)"),
             ("timing", "", "[#####] timing")]
    for phase, detail, words in steps:
        run.progress(sid, phase, detail)
        t.ok(lines.wait(lambda l: words in l), "the live line shows: " + words,
             "".join(lines.seen[-3:]))
    doc = canned_result(job, score=72.5)
    doc["cugrade"]["hints"].append("Use float4 loads \x1b[31m<b>here</b>")
    run.result(sid, "graded", doc)
    rc = p.wait(30)
    out = lines.rest()
    t.eq(rc, 0, "graded with every case passed: exit 0", out + p.stderr.read())
    for want in ("Submission #%d to open: graded, score 72.5 / 100" % sid, "Tests:",
                 "correctness: small", "Correctness cases:", "Sanitizers: memcheck clean",
                 "Time (lower is better):", "your kernel", "1.23 ms",
                 "reference (naive)", "7.40x faster", "cuBLAS", "1.37x slower",
                 "Hints:", "Use float4 loads", "Web page: %s/submissions/%d" % (s.url, sid)):
        t.ok(want in out, "the final result has: " + want, out)
    t.ok("\x1b" not in out and "?[31m" in out,
         "control characters from the server are not passed to the terminal", repr(out[-400:]))
    t.ok("\r" not in out, "not a TTY: plain lines, no carriage returns")
    return sid


def check_tty(t, s, cli, run):
    """In a pseudo-terminal the live line is redrawn in place."""
    path = write(cli, "tty.cu", kernel("tty"))
    master, slave = pty.openpty()
    env = dict(cli.env)
    p = subprocess.Popen(cli.argv("submit", "open", path, "--watch", "--interval", "0.2"),
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cli.home)
    os.close(slave)
    buf = b""

    def read_until(pred, timeout=30):
        nonlocal buf
        deadline = time.time() + timeout
        while time.time() < deadline and not pred(buf):
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    d = os.read(master, 65536)
                except OSError:
                    return pred(buf)
                if not d:
                    return pred(buf)
                buf += d
        return pred(buf)

    read_until(lambda b: b"queued" in b)
    job = run.claim(wait=10)
    run.progress(job["id"], "checking", "1/2")
    t.ok(read_until(lambda b: b"case 1/2" in b), "TTY: the live line shows case 1/2",
         buf[-300:])
    run.result(job["id"], "graded", canned_result(job))
    read_until(lambda b: b"Web page:" in b)
    p.wait(30)
    os.close(master)
    t.eq(p.returncode, 0, "TTY: exit 0 when graded")
    t.ok(b"\r#" in buf and b"\x1b[K" in buf,
         "TTY: the line is redrawn in place (carriage return, erase to end of line)",
         repr(buf[:300]))
    t.ok(b"\r\x1b[KSubmission #" in buf,
         "TTY: the live line is erased before the final result", repr(buf[-1500:-1000]))


def watch_one(t, s, cli, run, name, source, status, doc, want_rc, wants, **grade_kw):
    path = write(cli, name, source)
    th, box = grade_async(run, status=status, result=doc, **grade_kw)
    r = cli.run("submit", "open", path, "--watch", "--interval", "0.2")
    th.join(30)
    t.eq(r.returncode, want_rc, "%s: exit %d" % (status, want_rc), r.stdout + r.stderr)
    for w in wants:
        t.ok(w in r.stdout + r.stderr, "%s: the output has %r" % (status, w), r.stdout + r.stderr)
    return r


def check_exit_codes(t, s, cli, run):
    doc = canned_result({"lab": "open"}, score=40)
    doc["cugrade"]["cases"].append({"name": "big", "passed": False, "max_abs_err": 3.5,
                                    "max_rel_err": 0.5, "first_bad_index": 4096,
                                    "unwritten": 0, "message": "c[4096] = NaN, expected 1.5"})
    watch_one(t, s, cli, run, "wrong.cu", kernel("wrong"), "graded", doc, 1,
              ["graded, score 40 / 100", "FAILED", "index 4096", "big: c[4096] = NaN"])

    # A full score whose sanitizer could not start on our side (runner_problem):
    # not the student's problem, so `submit --watch && git commit` goes on.
    doc = canned_result({"lab": "open"}, score=20, max_score=20)
    doc["cugrade"]["sanitizer"] = [
        {"tool": "memcheck", "ran": False, "clean": False, "runner_problem": True,
         "note": "compute-sanitizer could not start in the sandbox", "findings": []}]
    r = watch_one(t, s, cli, run, "full.cu", kernel("full"), "graded", doc, 0,
                  ["score 20 / 20", "memcheck not run (ours)"])
    t.ok("found problems" not in r.stdout, "...and it does not say 'found problems'", r.stdout)
    m = re.search(r"Submission #(\d+)", r.stdout)
    r = cli.run("show", m.group(1) if m else "0")
    t.eq(r.returncode, 0, "show of that full score with the sanitizer not run (ours): exit 0",
         r.stdout + r.stderr)

    doc = canned_result({"lab": "open"}, status="compile_error", score=0)
    watch_one(t, s, cli, run, "broken.cu", b"__global__ void k( {\n", "compile_error", doc, 2,
              ["did not compile", "fix the first error", "Compiler output:",
               'kernel.cu(3): error: identifier "x" is undefined'])

    doc = canned_result({"lab": "open"}, status="timeout", score=0)
    watch_one(t, s, cli, run, "slow.cu", kernel("slow"), "timeout", doc, 2,
              ["ran out of time"])

    # system_error: requeued until max_attempts (3), then final.
    path = write(cli, "unlucky.cu", kernel("unlucky"))
    box = {}

    def fail_thrice():
        for _ in range(3):
            job = run.claim(wait=20)
            box.setdefault("attempts", []).append(job and job["attempt"])
            run.grade(job, status="system_error", phases=[("compiling", "")])
    th = threading.Thread(target=fail_thrice, daemon=True)
    th.start()
    r = cli.run("submit", "open", path, "--watch", "--interval", "0.2")
    th.join(30)
    t.eq(box.get("attempts"), [1, 2, 3], "system_error: the job was retried 3 times")
    t.eq(r.returncode, 3, "system_error: exit 3", r.stdout + r.stderr)
    t.ok("our fault" in r.stdout and "does not count against you" in r.stdout,
         "system_error: says it is not the student's fault", r.stdout)


def check_refusals(t, s, cli, run):
    path = write(cli, "k.cu", kernel("refusals"))
    r = cli.run("submit", "nosuchlab", path)
    t.eq(r.returncode, 4, "unknown lab: exit 4", r.stderr)
    t.ok("404" in r.stderr and "There is no lab called 'nosuchlab'" in r.stderr
         and "cugrade labs" in r.stderr, "...the server's message and `cugrade labs`", r.stderr)

    r = cli.run("submit", "closed", path)
    t.ok(r.returncode == 4 and "403 deadline_passed" in r.stderr and "hard deadline" in r.stderr
         and "extension" in r.stderr, "past the hard deadline: exit 4, the server's 403 and "
         "what to do", r.stderr)
    r = cli.run("submit", "notyet", path)
    t.ok(r.returncode == 4 and "403 lab_closed" in r.stderr and "opens at" in r.stderr
         and "cugrade labs" in r.stderr, "a lab not open yet: exit 4, when it opens", r.stderr)
    r = cli.run("submit", "open", write(cli, "notes.txt", b"__global__ void k() {}\n"))
    t.ok(r.returncode == 4 and "400" in r.stderr and "notes.txt" in r.stderr
         and "submit again" in r.stderr, "a file name the server refuses: exit 4, its 400",
         r.stderr)

    r = cli.run("submit", "open", write(cli, "reduce.py", b"from numba import cuda\n"))
    t.ok(r.returncode == 4 and "400" in r.stderr and "CUDA C (.cu)" in r.stderr,
         "a .py to a lab that takes only CUDA C: exit 4, the server's 400 naming the lab's "
         "language (issue 27 item 2)", r.stderr)

    big = write(cli, "big.cu", b"// " + b"x" * (300 * 1024) + b"\n")
    r = cli.run("submit", "open", big)
    t.eq(r.returncode, 4, "a 300 KiB file: exit 4", r.stderr)
    t.ok("413" in r.stderr and "256 KiB" in r.stderr and "only your kernel" in r.stderr,
         "...the server's 413 message (256 KiB) and what to do", r.stderr)

    # inflight allows one submission being graded: the second is 429.
    sid = s.submit("inflight", kernel("first"), token="alice_q7").json()["id"]
    job = run.claim(wait=10)
    run.progress(job["id"], "compiling", "")
    r = cli.run("submit", "inflight", path)
    t.eq(r.returncode, 4, "a second submission while one is in flight: exit 4", r.stderr)
    t.ok("429" in r.stderr and "rate_limited" in r.stderr and "in flight" in r.stderr
         and re.search(r"Nothing was submitted\. Try again in \d+ seconds", r.stderr),
         "...the server's 429 message and when to try again (Retry-After)", r.stderr)
    run.result(job["id"], "graded", canned_result(job))
    s.wait_status(sid, "graded")

    bad = Cli()
    bad.login(s, "bob_z3")
    with open(bad.config) as f:
        cfg = json.load(f)
    cfg["token"] = "cgs_" + "1" * 64
    with open(bad.config, "w") as f:
        json.dump(cfg, f)
    r = bad.run("submit", "open", big)
    t.eq(r.returncode, 4, "a wrong token in the config (and a big body): exit 4", r.stderr)
    t.ok("401" in r.stderr and "cugrade login" in r.stderr,
         "...the 401 comes through although the server did not read the body", r.stderr)
    bad.cleanup()

    down = Cli()
    os.makedirs(os.path.dirname(down.config), mode=0o700)
    with open(os.open(down.config, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"server": "http://127.0.0.1:%d" % free_port(), "token": s.tok["bob_z3"]}, f)
    r = down.run("submit", "open", path, "--watch")
    t.eq(r.returncode, 3, "the server down: exit 3", r.stderr)
    t.ok("cannot reach the server" in r.stderr and "try again" in r.stderr,
         "...it says so and what to check", r.stderr)
    r = down.run("list")
    t.eq(r.returncode, 3, "list with the server down: exit 3", r.stderr)
    down.cleanup()


def check_list_show_scoreboard(t, s, cli, sid):
    r = cli.run("list")
    t.eq(r.returncode, 0, "list: exit 0", r.stderr)
    t.ok(re.search(r"^\s+%d\s+open\s+graded\s+72\.5 / 100\s+reduce\.cu" % sid, r.stdout, re.M),
         "list has the watched submission: id, lab, status, score, file", r.stdout)
    r = cli.run("list", "--json", "--lab", "open")
    api = s.get("/api/submissions?lab=open&limit=20", token="alice_q7").json()
    t.eq(json.loads(r.stdout or "{}"), api, "list --json is the API's listing")

    r = cli.run("show", sid)
    t.eq(r.returncode, 0, "show ID of a graded, correct submission: exit 0", r.stderr)
    t.ok("graded, score 72.5 / 100" in r.stdout and "Correctness cases:" in r.stdout,
         "show ID prints the result", r.stdout)
    r = cli.run("show", sid, "--json")
    t.eq((json.loads(r.stdout or "{}")).get("score"), 72.5, "show --json has the score")
    r = cli.run("show", sid, "--source")
    t.eq(r.stdout, kernel("alice watch").decode(), "show --source prints the bytes sent")
    r = cli.run("show", 999999)
    t.eq(r.returncode, 4, "show of an unknown id: exit 4", r.stderr)

    r = cli.run("scoreboard", "open")
    t.eq(r.returncode, 0, "scoreboard: exit 0", r.stderr)
    me = s.get("/api/me", token="alice_q7").json()
    pseud = (me.get("pseudonyms") or {}).get("open")
    t.ok(pseud and re.search(r"^\s+1\s+%s\s+72\.5 / 100\s+1\.37x\s+\d{4}-\d\d-\d\d\s+<- you"
                             % re.escape(pseud), r.stdout, re.M),
         "scoreboard: rank 1 is alice's pseudonym, marked as hers", r.stdout)
    t.ok("Alice" not in r.stdout, "scoreboard: no real names for a student")
    r = cli.run("scoreboard", "open", "--json")
    t.eq(json.loads(r.stdout or "{}"), s.get("/api/labs/open/scoreboard", token="alice_q7").json(),
         "scoreboard --json is the API's")
    r = cli.run("scoreboard", "open", "--csv")
    t.ok(r.stdout.startswith("rank,user,display_name,score,max_score,speedup,submitted_on"),
         "scoreboard --csv is the server's CSV", r.stdout[:200])
    r = cli.run("labs")
    t.ok(r.returncode == 0 and re.search(r"^\s+open\s+Vector add", r.stdout, re.M),
         "labs lists the labs", r.stdout)


def check_follow_and_interrupt(t, s, cli, run):
    """Submitting again while the first is queued supersedes it: the watch
    follows the new one. Ctrl-C stops watching, not the submission."""
    path = write(cli, "first.cu", kernel("first"))
    p = cli.popen("submit", "open", path, "--watch", "--interval", "0.2")
    lines = Lines(p.stdout)
    got = lines.wait(lambda l: "queued" in l)
    first = int(re.search(r"#(\d+)", got or "#0").group(1))
    second = s.submit("open", kernel("second"), token="alice_q7").json()["id"]
    got = lines.wait(lambda l: "was replaced by #%d" % second in l)
    t.ok(got and "following #%d" % second in got,
         "a superseded submission: the watch says so and follows the new one", got)
    job = run.claim(wait=10)
    t.eq(job and job["id"], second, "(the runner gets the new one)")
    run.grade(job)
    rc = p.wait(30)
    out = lines.rest()
    t.ok(rc == 0 and "Submission #%d to open: graded" % second in out,
         "...and shows its result, exit 0", out)
    t.eq(s.submission(first)["status"], "superseded", "(the first one is superseded)")

    import signal
    p = cli.popen("submit", "open", path, "--watch", "--interval", "0.2")
    lines = Lines(p.stdout)
    got = lines.wait(lambda l: "[#----] queued" in l)
    sid = int(re.search(r"#(\d+)", got or "#0").group(1))
    p.send_signal(signal.SIGINT)
    rc = p.wait(30)
    out = lines.rest()
    t.eq(rc, 130, "Ctrl-C while watching: exit 130")
    t.ok("keeps its place" in out and "cugrade show %d --watch" % sid in out,
         "...it says the submission keeps its place and how to follow it", out)
    t.eq(s.submission(sid)["status"], "queued", "...and it is still queued")
    run.grade(run.claim(wait=10))


def check_server_gone(t, s, cli, run):
    path = write(cli, "late.cu", kernel("server gone"))
    p = cli.popen("submit", "open", path, "--watch", "--interval", "0.2", "--retry", "1")
    lines = Lines(p.stdout)
    got = lines.wait(lambda l: "queued" in l)
    sid = int(re.search(r"#(\d+)", got or "#0").group(1))
    s.stop()
    rc = p.wait(30)
    err = lines.rest() + p.stderr.read()
    t.eq(rc, 3, "the server gone while watching: exit 3 after --retry seconds", err)
    t.ok("not answering" in err and "saved on the server" in err
         and "cugrade show %d --watch" % sid in err,
         "...it says the submission is saved and how to follow it later", err)


def main(t):
    s = open_server(t, labs=("vadd", "inflight", "closed", "notyet"))
    run = s.runner()
    cli = Cli()
    check_login(t, s, cli)
    sid = check_watch_queue(t, s, cli, run)
    check_tty(t, s, cli, run)
    check_exit_codes(t, s, cli, run)
    check_refusals(t, s, cli, run)
    check_list_show_scoreboard(t, s, cli, sid)
    check_follow_and_interrupt(t, s, cli, run)
    r = subprocess.run([sys.executable, CLIENT, "--version"], capture_output=True, text=True)
    t.ok(r.returncode == 0 and re.match(r"cugrade \d+\.\d+", r.stdout),
         "python3 client/cugrade.py --version runs from the repo", r.stdout + r.stderr)
    r = cli.run("submit", "open")
    t.ok(r.returncode == 4 and "the following arguments are required: file" in r.stderr,
         "a usage mistake: exit 4 with argparse's message", r.stderr)
    r = cli.run("submit", "open", "-", "--lang", "cu", stdin=kernel("stdin").decode())
    m = re.search(r"Submitted kernel\.cu to open: submission #(\d+), queued", r.stdout)
    t.ok(r.returncode == 0 and m, "submit LAB - --lang cu reads stdin, sends kernel.cu; exit 0 "
         "without --watch", r.stdout + r.stderr)
    job = run.claim(wait=10)
    t.eq(job and (job["filename"], job["source"]), ("kernel.cu", kernel("stdin").decode()),
         "...the server got kernel.cu with the bytes from stdin")
    run.grade(job)
    check_server_gone(t, s, cli, run)
    cli.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()
