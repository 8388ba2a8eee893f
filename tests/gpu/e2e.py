#!/usr/bin/env python3
"""End to end on a GPU host (tests/gpu/run.sh calls this; see docs/runner.md).

Starts the real server and real runners, submits every
tests/gpu/solutions/<lab>/*.cu and tests/gpu/solutions-py/<lab>/*.py
(Python, `# expect:`) through the API (one student each: the
rubric allows one submission in flight per student), waits for the results
and prints a table: file, status, score, key metric, expected (the file's
`// expect:` header), match. Exits 1 on any mismatch.

Expectation keys (all optional but status): status=, correctness=pass|fail,
sanitizer=clean|dirty, tier="name"|none|any (the first speed line's tier),
tier2= (the second speed line's: the copy-bandwidth share in reduction and embedding),
flagged=yes|no, symbol= (the rejection's symbol), hint=<id> (the classic-bug
catalogue's entry, runner/feedback/hint.c: the match fails unless cugrade.hint_details
holds that id; "a|b": either; "a,b": both; hint=none: no hint at all),
nohint=<id> (none of "a,b" among the hints: a hint that must not mislead),
says="text" / nosay="text" (some hint's text holds it / none does: the
hints in the submission's language), profile=<id> (a profiling hint,
cugrade.profile.hints[].id; "a|b": either) or profile=<id>@<line> (that hint
names that line of the student's file), after=all (submitted only once
every other file has its result: the hostile suite's "the next job was
unharmed", tests/gpu/solutions-py/reduction/hostile_zz_next_job.py).
After the results, one more row: no process of a sandboxed run is left
(a box uid or a run cgroup, runner/sandbox/sandbox.h; as root only).

Environment: CUGRADE_SERVER_BIN, CUGRADE_RUNNER_BIN (binaries),
CUGRADE_BIN_ENV (K=V;K=V for our binaries only, e.g. LD_LIBRARY_PATH of
dist/), CUGRADE_GPU_RUNNERS (runners sharing each GPU, default 1; they take the
GPU lock exclusively for timing), CUGRADE_GPUS (GPUs to use, default every GPU that
`nvidia-smi -L` lists: a runner per GPU, as `make run` starts), CUGRADE_CACHE (a cache dir kept between runs),
CUGRADE_GPU_TIMEOUT (seconds to wait for results, default 120 + 9 per file,
at least 330: a Python file costs its interpreter start and JIT per run),
CUGRADE_GPU_ONLY (substring of lab/file to run a subset, or a pattern with "*" such as
"reduction/*.py"; "a,b": either), OUT (logs dir: the server's, prepare's
and each runner's log, the last two with every line stamped with the
seconds since the run began; a job left without its result is named with
what the database last heard of it, its runner and how long ago, and
stall.txt holds the GPUs' ledgers, /proc/locks and every process).
"""
import fnmatch, json, os, re, shlex, shutil, socket, sqlite3, subprocess, sys, tempfile, threading, time
import urllib.request, urllib.error

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
SERVER = os.environ.get("CUGRADE_SERVER_BIN", os.path.join(ROOT, "build/cugrade-server"))
RUNNER = os.environ.get("CUGRADE_RUNNER_BIN", os.path.join(ROOT, "build/cugrade-runner"))
NRUNNERS = int(os.environ.get("CUGRADE_GPU_RUNNERS", "1"))


def gpu_count():
    """CUGRADE_GPUS, else every GPU `nvidia-smi -L` lists (as `make run`
    does: a runner per GPU), at least 1."""
    v = os.environ.get("CUGRADE_GPUS", "")
    if v.isdigit() and int(v) > 0:
        return int(v)
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 1
    return max(1, sum(1 for l in out.splitlines() if l.startswith("GPU ")))


NGPUS = gpu_count()
TIMEOUT = float(os.environ.get("CUGRADE_GPU_TIMEOUT", "0"))  # 0: from the number of files
ONLY = os.environ.get("CUGRADE_GPU_ONLY", "")
OUT = os.environ.get("OUT") or None
FINAL = {"graded", "compile_error", "rejected", "runtime_error", "timeout", "system_error"}
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def prepare_notes(path):
    """The lines of a prepare log worth a bench's own log: how the Python
    root's bytecode compile ended (docs/python.md, "Bytecode")."""
    try:
        with open(path, errors="replace") as f:
            return [l.strip() for l in f if "bytecode" in l or "not ours to write" in l]
    except OSError:
        return []


def bin_env():
    env = dict(os.environ)
    for kv in filter(None, os.environ.get("CUGRADE_BIN_ENV", "").split(";")):
        k, _, v = kv.partition("=")
        env[k] = v
    return env


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def api(base, method, path, token, body=None, ctype="application/json"):
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"raw": raw.decode(errors="replace")}


def parse_expect(path):
    with open(path) as f:
        first = f.readline()
    m = re.match(r"\s*(?://|#)\s*expect:\s*(.*)", first)   # .cu: //, .py: #
    if not m:
        return {}
    return {k: v for k, v in (t.split("=", 1) for t in shlex.split(m.group(1)) if "=" in t)}


def observe(sub):
    """What the result says, in the expectation's words."""
    res = sub.get("result") or {}
    cg = res.get("cugrade") or {}
    cases = cg.get("cases") or []
    sans = cg.get("sanitizer") or []
    speed = cg.get("speed") or []
    timing = cg.get("timing") or {}
    o = {"status": sub.get("status")}
    o["correctness"] = "pass" if cases and all(c.get("passed") for c in cases) else "fail"
    if any(s.get("runner_problem") for s in sans):
        o["sanitizer"] = "not-run"
    elif sans:
        o["sanitizer"] = "clean" if all(s.get("clean") for s in sans) else "dirty"
    o["tier"] = (speed[0].get("tier") if speed else None) or "none"
    o["tier2"] = (speed[1].get("tier") if len(speed) > 1 else None) or "none"
    o["flagged"] = "yes" if timing.get("flagged") else "no"
    o["samples"] = timing.get("samples") if isinstance(timing.get("samples"), int) else 0
    o["symbol"] = (cg.get("rejection") or {}).get("symbol", "")
    # profile=<id>: one of the profiling hints (result.cugrade.profile.hints[].id)
    # profile=<id>@<line>: that hint names that line of the student's file
    # (hints[].line, from ncu's source counters)
    o["profile"] = [h.get("id") for h in (cg.get("profile") or {}).get("hints") or []]
    o["profile"] += [f"{h.get('id')}@{h.get('line')}" for h in (cg.get("profile") or {}).get("hints") or []
                     if h.get("line")]
    o["hint"] = ",".join(h.get("id", "") for h in cg.get("hint_details") or []) or "none"
    o["hint_texts"] = [h.get("text", "") for h in cg.get("hint_details") or []]
    return o


def key_metric(sub):
    res = sub.get("result") or {}
    cg = res.get("cugrade") or {}
    if sub.get("status") == "rejected":
        return "symbol " + (cg.get("rejection") or {}).get("symbol", "?")
    if sub.get("status") == "compile_error":
        log_ = cg.get("compile_log") or ""
        m = re.search(r"\((\d+)\): error", log_) or re.search(r"line (\d+)", log_)  # nvcc | Python
        return f"error at line {m.group(1)}" if m else "compile error"
    speed = cg.get("speed") or []
    t = cg.get("timing") or {}
    if speed and speed[0].get("value") is not None:
        s = f"{speed[0]['metric']}={speed[0]['value']:.3g}"
        if t.get("student_ms"):
            s += f" ({t['student_ms']:.3g} ms)"
        return s
    bad = [c for c in cg.get("cases") or [] if not c.get("passed")]
    if bad:
        return f"{len(bad)} case(s) wrong, first {bad[0].get('name')}"
    if sub.get("status") == "system_error":
        return (res.get("output") or "")[:60]
    return "-"


def matches(exp, obs):
    for k, v in exp.items():
        if k in ("note", "after"):
            continue
        if k in ("tier", "tier2") and v == "any":
            continue
        if k == "profile":
            if not any(i in obs.get("profile", []) for i in v.split("|")):
                return False
            continue
        if k == "symbol":
            if v not in obs.get("symbol", ""):
                return False
            continue
        if k == "hint":  # every id of "a,b" (each may be "x|y") among the result's
            have = obs.get("hint", "").split(",")
            if not all(any(i in have for i in want.split("|")) for want in v.split(",")):
                return False
            continue
        if k == "nohint":  # none of the ids of "a,b" among the result's
            if any(i in obs.get("hint", "").split(",") for i in v.split(",")):
                return False
            continue
        if k == "samples":  # at least v timed samples (a timing cut short by its budget has 3)
            if not v.isdigit() or obs.get("samples", 0) < int(v):
                return False
            continue
        if k in ("says", "nosay"):  # some hint's text holds v / none does
            if any(v in t for t in obs.get("hint_texts", [])) != (k == "says"):
                return False
            continue
        if obs.get(k) not in v.split("|"):  # "a|b": either is right
            return False
    return True


class SetupError(Exception):
    """The service did not come up (said on stderr; exit status 2)."""


def pick_files():
    """The (lab, path) of every solution CUGRADE_GPU_ONLY selects: CUDA C
    solutions, then Python ones (docs/python.md) beside them."""
    files = []
    for top, ext in (("tests/gpu/solutions", ".cu"), ("tests/gpu/solutions-py", ".py")):
        if not os.path.isdir(os.path.join(ROOT, top)):
            continue
        for lab in sorted(os.listdir(os.path.join(ROOT, top))):
            d = os.path.join(ROOT, top, lab)
            for f in sorted(os.listdir(d)):
                if f.endswith(ext) and any(fnmatch.fnmatch(f"{lab}/{f}", o) if "*" in o
                                           else o in f"{lab}/{f}" for o in ONLY.split(",")):
                    files.append((lab, os.path.join(d, f)))
    return files


def start_server(tmp, logs, env, procs):
    """A database with its admin and a runner token per runner, and the
    server on it (appended to procs). Returns (db, admin token, runner
    token files, base URL)."""
    db = os.path.join(tmp, "cugrade.db")
    p = subprocess.run([SERVER, "init", "--db", db], env=env, capture_output=True, text=True)
    text = p.stdout + p.stderr
    m = re.search(r"(cga_[0-9a-f]{64})", text)
    if not m:
        raise SetupError("server init failed:\n" + text)
    admin = m.group(1)
    rtoks = []
    for i in range(NRUNNERS * NGPUS):
        p = subprocess.run([SERVER, "user", "add", "--db", db, f"runner{i}", "runner"], env=env,
                           capture_output=True, text=True)
        m = re.search(r"(cgr_[0-9a-f]{64})", p.stdout + p.stderr)
        if not m:
            raise SetupError("runner token failed:\n" + p.stdout + p.stderr)
        tf = os.path.join(tmp, f"runner{i}.token")
        with open(tf, "w") as f:
            f.write(m.group(1) + "\n")
        os.chmod(tf, 0o600)
        rtoks.append(tf)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    slog = open(os.path.join(logs, "server.log"), "w")
    procs.append(subprocess.Popen([SERVER, "serve", "--db", db, "--listen", f"127.0.0.1:{port}",
                                   "--labs", os.path.join(ROOT, "labs"),
                                   "--rubrics", os.path.join(ROOT, "rubrics")],
                                  env=env, stdout=slog, stderr=slog, cwd=ROOT))
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    else:
        raise SetupError("the server did not start; see server.log")
    return db, admin, rtoks, base


def start_runners(tmp, logs, env, procs, base, rtoks):
    """`prepare` and the runners (appended to procs). Returns (prepare's
    process, the runners' processes, the cache directory)."""
    # CUGRADE_CACHE: built labs and baselines kept between runs (0755 path).
    cache = os.environ.get("CUGRADE_CACHE") or os.path.join(tmp, "cache")
    common = ["--cache", cache, "--root", ROOT]
    # `prepare` builds the labs and times the baselines while the runners
    # already compile and check: they wait for a lab's build on its lock
    # file, and the GPU lock keeps every timing run exclusive.
    prep = stamped(subprocess.Popen([RUNNER, "prepare", "--gpu", "0"] + common +
                                    ["--work", os.path.join(tmp, "work-prep")], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT),
                   os.path.join(logs, "prepare.log"))
    procs.append(prep)
    # One runner (CUGRADE_GPU_RUNNERS) per GPU, each on its own --gpu
    # (its own locks and ledgers); runner<k>.log, k = g * NRUNNERS + i.
    runners = []
    for g in range(NGPUS):
        for i in range(NRUNNERS):
            k = g * NRUNNERS + i
            runners.append(stamped(subprocess.Popen(
                [RUNNER, "--server", base, "--token-file", rtoks[k], "--work",
                 os.path.join(tmp, f"work-{k}"), "--name", f"gpu{g}-r{i}", "--gpu", str(g),
                 "--lazy-build"] + common,
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT),
                os.path.join(logs, f"runner{k}.log")))
            procs.append(runners[-1])
    return prep, runners, cache


def submit(base, tok, subs, lab, path):
    """Submit path to lab as the student of token tok; (lab, path, id or
    None, time) appended to subs."""
    with open(path, "rb") as f:
        src = f.read()
    name = os.path.basename(path)
    st, r = api(base, "POST", f"/api/labs/{lab}/submissions?filename={name}", tok, src,
                "application/octet-stream")
    if st != 202:
        print(f"e2e: submit {lab}/{name}: {st} {r}", file=sys.stderr)
        subs.append((lab, path, None, time.time()))
        return
    subs.append((lab, path, r["id"], time.time()))


def submit_and_wait(base, admin, files):
    """Submit every file (one student each; after=all ones once the others
    have their results) and wait for the results, within the timeout.
    Returns (subs, results {id: submission}, the after=all files not sent)."""
    st, users = api(base, "POST", "/api/admin/users", admin,
                    {"users": [{"name": f"s{i}", "role": "student"} for i in range(len(files))]})
    if st != 201:
        raise SetupError(f"creating students failed: {st} {users}")
    toks = [u["token"] for u in users["users"]]
    subs = []
    later = [i for i, (_, path) in enumerate(files) if parse_expect(path).get("after") == "all"]
    for i, (lab, path) in enumerate(files):
        if i not in later:
            submit(base, toks[i], subs, lab, path)
    log(f"submitted {len(subs)} files" + (f", {len(later)} held until they finish" if later else ""))
    results, scored = {}, {}
    deadline = time.time() + (TIMEOUT or max(330.0, 120.0 + 9.0 * len(files)))
    while time.time() < deadline:
        pending = 0
        for lab, path, sid, t_sub in subs:
            if sid is None or sid in results:
                continue
            st, sub = api(base, "GET", f"/api/submissions/{sid}", admin)
            if st == 200 and sub.get("status") in FINAL and sid not in scored:
                scored[sid] = time.time() - t_sub  # the verdict: submit-to-score
            # Score first, the profile after (docs/runner.md): a result
            # whose profile is pending is complete once its update lands.
            prof = ((sub.get("result") or {}).get("cugrade") or {}).get("profile") or {}
            if sid in scored and prof.get("status") != "pending":
                sub["_latency"] = scored[sid]
                results[sid] = sub
                log(f"{lab}/{os.path.basename(path)}: {sub['status']} {sub.get('score')}")
            else:
                pending += 1
        if not pending and later:   # after=all: the next job, once the others are done
            for i in later:
                submit(base, toks[i], subs, *files[i])
            log(f"submitted {len(later)} held file(s)")
            later = []
            continue
        if not pending:
            break
        time.sleep(1)
    return subs, results, later


def result_rows(subs, results):
    """A row per file against its expect: header. Returns (rows, mismatches)."""
    rows, mismatches = [], 0
    for lab, path, sid, _ in subs:
        exp = parse_expect(path)
        sub = results.get(sid) if sid is not None else None
        fname = f"{lab}/{os.path.basename(path)}"
        if sub is None:
            rows.append((fname, "unfinished", "-", "-", exp_str(exp), "no"))
            mismatches += 1
            continue
        obs = observe(sub)
        ok = matches(exp, obs)
        mismatches += not ok
        score = f"{sub.get('score', 0):g}/{sub.get('max_score', 0):g}" if sub.get("score") is not None else "-"
        rows.append((fname, sub["status"], score, key_metric(sub), exp_str(exp),
                     "yes" if ok else "NO (" + obs_str(exp, obs) + ")"))
    return rows, mismatches


def host_row(done, prep, runners):
    """No process of a sandboxed run is left: checked only once every job
    has ended (done) and `prepare` (which times the baselines in the
    sandbox) too, as root; the runners are stopped first. Returns (row,
    mismatch)."""
    idle = done and prep.poll() is not None
    if idle:
        # The runners stop first, as a deployment stops them: a warm
        # run waiting for its job (docs/python.md "The warm pool") is
        # ours and ends with its runner; what is left after is a job's.
        for p in runners:
            p.terminate()
        for p in runners:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
    left = leftovers() if idle else None
    if left is None:
        why = "not root" if idle else "jobs unfinished" if not done else "prepare still running"
        return ("(host) processes left", "-", "-", f"not checked ({why})", "none", "skipped"), 0
    if left:
        log("left behind: " + "; ".join(left))
    return (("(host) processes left", "-", "-", "; ".join(left)[:60] or "none", "none",
             "yes" if not left else "NO (" + str(len(left)) + ")"), int(bool(left)))


def runner_rows(logs, nfiles):
    """Each runner's log, read once: its verdicts, and every system_error
    it posted, retried or not. Those are ours, so a mismatch even when a
    retry on another runner graded the job (a second GPU's runner once
    failed every run this way, "no CUDA-capable device", while the table
    matched: its jobs were requeued to the first GPU). Returns (rows,
    mismatches, verdicts per runner)."""
    syserr, per, idle_runners = [], [], []
    for g in range(NGPUS):
        for i in range(NRUNNERS):
            k = g * NRUNNERS + i
            try:
                text = open(os.path.join(logs, f"runner{k}.log"), errors="replace").read()
            except OSError:
                text = ""
            n = len(re.findall(r"job \d+: (?:graded|compile_error|rejected|runtime_error|"
                               r"timeout), score", text))
            errs = [f"runner{k} job {m.group(1)}: {m.group(2)}"
                    for m in re.finditer(r"job (\d+): system error: ([^\n]*)", text)]
            syserr += errs
            per.append(f"gpu{g}-r{i} {n}" + (f" (and {len(errs)} system errors)" if errs else ""))
            if n == 0:
                idle_runners.append(f"gpu{g}-r{i}")
    mismatches = int(bool(syserr))
    rows = [("(runners) system errors posted", "-", "-", (syserr[0][:60] if syserr else "none"), "none",
             "yes" if not syserr else "NO (%d)" % len(syserr))]
    for line in syserr[:20]:
        log("system error: " + line[:300])
    # Every runner grades a share of a full run: one that posted nothing
    # while the others graded left its GPU idle with jobs waiting (the
    # Python half on two H200s once: GPU 0's runner posted none of 59).
    # Not judged when the run has too few files for every runner.
    if nfiles >= 4 * NRUNNERS * NGPUS:
        mismatches += bool(idle_runners)
        rows.append(("(runners) every runner graded", "-", "-",
                     ("none from " + ", ".join(idle_runners)) if idle_runners else "yes", "yes",
                     "yes" if not idle_runners else "NO (%d)" % len(idle_runners)))
    return rows, mismatches, per


def report(rows, mismatches, results, per):
    """The table, results.json (OUT), the speed tiers the median decided,
    the verdicts per runner and the count. Returns the exit status."""
    print_table(rows)
    if OUT:
        with open(os.path.join(OUT, "results.json"), "w") as f:
            json.dump({str(k): v for k, v in results.items()}, f, indent=1)
    md = median_decided(results)
    print(f"\nspeed tiers decided by the median (the interval held a threshold after "
          f"re-timing; shown, not judged): {len(md)}", flush=True)
    for line in md:
        print("  " + line, flush=True)
    print(f"\nverdicts posted per runner: {', '.join(per)}", flush=True)
    print(f"{len(rows) - mismatches} of {len(rows)} match; "
          f"wall {time.time() - T0:.0f} s", flush=True)
    return 1 if mismatches else 0


def main():
    files = pick_files()
    if not files:
        print("e2e: no solutions found under tests/gpu/solutions", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="cugrade-e2e-")
    os.chmod(tmp, 0o755)  # the sandbox (uid nobody before bwrap) must reach binds below
    logs = OUT or tmp
    os.makedirs(logs, exist_ok=True)
    env = bin_env()
    # The runners share the host's cores as deploy/run.sh has them do (each
    # its share of --jobs and of the front lane). Unset, a runner of a
    # 2 x H200 host took 54 of 62 Python files in its first 0.3 s (a
    # front lane of 64) while its peer's GPU probe had not answered, and
    # the run ended at its limit with 10 unfinished.
    env.setdefault("CUGRADE_RUNNERS_PER_HOST", str(NGPUS * NRUNNERS))
    procs = []
    try:
        db, admin, rtoks, base = start_server(tmp, logs, env, procs)
        log(f"server on {base}")
        prep, runners, cache = start_runners(tmp, logs, env, procs, base, rtoks)
        log(f"{NRUNNERS} runner(s) on each of {NGPUS} GPU(s)")
        subs, results, later = submit_and_wait(base, admin, files)
        if prep.poll() is not None:
            log(f"runner prepare exited {prep.returncode}")
            for line in prepare_notes(os.path.join(logs, "prepare.log")):
                log(line)
        stuck = [sid for _, _, sid, _ in subs if sid is not None and sid not in results]
        unfinished_report(db, stuck)
        if stuck:
            stall_report(cache, os.path.join(logs, "stall.txt"))
        rows, mismatches = result_rows(subs, results)
        done = all(sid is not None and sid in results for _, _, sid, _ in subs) and not later
        row, bad = host_row(done, prep, runners)
        rows.append(row)
        rrows, rbad, per = runner_rows(logs, len(files))
        return report(rows + rrows, mismatches + bad + rbad, results, per)
    except SetupError as e:
        print(f"e2e: {e}", file=sys.stderr)
        return 2
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if not os.environ.get("CUGRADE_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


def stamped(proc, path):
    """Copy proc's output (a pipe) into the log at path, each line prefixed
    with the seconds since the run began, so that a stalled job's log says
    when it stopped moving. The pipe is drained to its end even when the
    log cannot be written (a full disk): a copier that stopped reading
    would block the process on its next print. Returns proc."""
    def copy():
        try:
            f = open(path, "w", errors="replace")
        except OSError:
            f = None
        for line in iter(proc.stdout.readline, b""):
            try:
                if f:
                    f.write(f"[{time.time() - T0:8.1f}s] " + line.decode(errors="replace"))
                    f.flush()
            except OSError:
                f = None
        if f:
            f.close()
    threading.Thread(target=copy, daemon=True).start()
    return proc


def unfinished_report(db, sids):
    """For each job without its result: what the database last heard of it
    (status, phase, detail, attempts, the runner holding its lease, how long
    ago), so that a stall says where it stalled."""
    if not sids:
        return
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        rows = con.execute("SELECT id, lab, filename, status, phase, detail, attempts, lease_runner, "
                           "updated_at FROM submissions WHERE id IN (%s)" % ",".join("?" * len(sids)),
                           sids).fetchall()
        con.close()
    except sqlite3.Error as e:
        log(f"unfinished: the database cannot be read ({e})")
        return
    for sid, lab, fn, st, ph, det, att, lease, upd in rows:
        log(f"unfinished: job {sid} {lab}/{fn}: {st} {ph!r} {det[:120]!r}, attempt {att}, "
            f"runner {lease or '-'}, last update {time.time() - upd:.0f} s ago")


def stall_report(cache, path):
    """When jobs are unfinished at the end: what each GPU's ledgers hold
    (memory reservations, the admission queue, the shared lock's users,
    timing runs waiting or running, profiles; each line's process alive or
    not, and its command), who holds or waits for each GPU lock
    (/proc/locks), and every process of the host as a tree, into path. A
    stall on the device is seen once and costs minutes to repeat: this
    says where it stalled (docs/log/2026-11-30-cpu-stall.md, section 4)."""
    out = []

    def cmd(pid):
        try:
            return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:160]
        except OSError:
            return "(gone)"

    try:
        names = sorted(os.listdir(cache))
    except OSError as e:
        names = []
        out.append(f"cache {cache}: {e}")
    for name in names:
        if not name.startswith("gpu-") or name.endswith(".json"):
            continue
        full = os.path.join(cache, name)
        try:
            text = open(full, errors="replace").read(65536) if os.path.isfile(full) else ""
            ino = os.stat(full).st_ino
        except OSError:
            continue
        out.append(f"== {name} (inode {ino})")
        for line in text.splitlines():
            pid = (line.split() or [""])[0]
            out.append(f"  {line}    <- {cmd(pid) if pid.isdigit() else ''}")
    out.append("== /proc/locks")
    try:
        out += ["  " + x for x in open("/proc/locks").read().splitlines()]
    except OSError as e:
        out.append(f"  {e}")
    out.append("== every process (the runners' job children, their sandboxes)")
    ps = subprocess.run(["ps", "-eo", "pid,ppid,stat,etime,wchan:24,args", "--forest"],
                        capture_output=True, text=True)
    out += ["  " + x[:220] for x in ps.stdout.splitlines()]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    log(f"unfinished: the GPUs' ledgers, locks and every process are in {path}")


def median_decided(results):
    """The graded jobs whose speed tier the median decided: re-timed as often
    as allowed, their interval still held a tier threshold
    (runner/timing/retime.c retime_run), so another run may give them
    another tier. Shown, not judged (a file's expect: line judges its tier):
    a lab whose best solutions land here has a threshold inside its noise
    (docs/log/2026-12-02-flat-records.md, the profiling lab)."""
    out = []
    for v in results.values():
        t = ((v.get("result") or {}).get("cugrade") or {}).get("timing") or {}
        why = t.get("retime_reason") or ""
        if "decided by the median" in why:
            m = re.search(r"(\w+ = [^,]+, its \d+% CI [^ ]+ holds the tier threshold [^;]+)", why)
            out.append("%s/%s: %s" % (v.get("lab"), v.get("filename"), m.group(1) if m else why[:160]))
    return sorted(out)


def leftovers():
    """Processes of sandboxed runs still alive once every job has its result
    (the hostile suite's spawned threads, forks and daemons must die with
    their run): a box uid (runner/sandbox/sandbox.h: SANDBOX_BOX_UID_BASE, 1000
    boxes), nobody, or a run cgroup cugrade-PID-N. None when not root (the
    sandbox then runs as the caller). Waits up to 10 s for the kernel to
    reap."""
    if os.geteuid() != 0:
        return None
    base = int(os.environ.get("CUGRADE_SANDBOX_UID_BASE", "1900000000"))
    for _ in range(50):
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/status") as f:
                    st = f.read()
                with open(f"/proc/{pid}/cgroup") as f:
                    cg = f.read()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            m = re.search(r"^Uid:\s+(\d+)", st, re.M)
            uid = int(m.group(1)) if m else -1
            if base <= uid < base + 1000 or uid == 65534 or re.search(r"/cugrade-\d+-\d+\s*$", cg, re.M):
                left.append(f"{pid} uid {uid} {cmd[:80]}")
        if not left:
            return left
        time.sleep(0.2)
    return left


def exp_str(exp):
    return " ".join(f"{k}={v}" for k, v in exp.items() if k not in ("note",))


def obs_str(exp, obs):
    return " ".join(f"{k}={obs.get(k)}" for k in exp if k not in ("note", "after") and not
                    (k in ("tier", "tier2") and exp[k] == "any"))


def print_table(rows):
    head = ("file", "status", "score", "key metric", "expected", "match")
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    w[4] = min(w[4], 70)
    line = lambda r: " | ".join(str(c)[:w[i]].ljust(w[i]) for i, c in enumerate(r))
    print(line(head))
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(line(r))


if __name__ == "__main__":
    sys.exit(main())
