#!/usr/bin/env python3
"""Deadline night on one GPU host (a benchmark: prints a table, asserts
nothing). Starts the service as make run does (tests/bench/service.py: the
real server, `prepare` on every GPU -- labs built, baselines and limits
measured -- then CUGRADE_BENCH_RUNNERS runners on each GPU, default 1;
CUGRADE_GPUS=N uses the first N GPUs), then sends a burst of BURST submissions (default 200), one
student each, mixing tests/gpu/solutions/*/*.cu round-robin with HOSTILE
percent (default 10) of hostile ones (tests/gpu/solutions/reduction:
host_loop, gpu_loop, flood, gpu_membomb, host_membomb, fork_bomb). Prints:
throughput per minute, p50/p95 submit-to-final of the correct submissions,
p99 of compile errors and rejections, the graded jobs whose profile came
within 60 s of their verdict, GPU busy share (nvidia-smi sampled
every 0.5 s while work was queued), and false runtime_errors (a file whose
`// expect:` header says graded that ended runtime_error, timeout or
system_error), the throughput of each GPU's runners, and the warm pool's
hit rate (the Python jobs whose check and timing runs it had started).
Run it twice, HOSTILE=10 and HOSTILE=0, to compare.
LANG_BURST=py sends tests/gpu/solutions-py/*/*.py instead (hostile_*.py as
the hostile share). CUGRADE_BENCH_GPUS=1 serves from GPU 1 alone, so two
benches can run side by side on a two-GPU host (set
CUGRADE_RUNNERS_PER_HOST=2 in both: each runner then takes half the cores).
With OUT set, OUT/deadline-*-subs.json keeps every submission's phases
and, for each one that missed its expectation, what its result says
("why": message, output, the owner's or harness's output, sanitizer
findings).

    sh tests/bench/deadline_bench.sh          # on the GPU host, after make dist
"""
import collections, json, os, statistics, subprocess, sys, tempfile, threading, time, types

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests/gpu"))
import e2e  # noqa: E402  (server/runner start-up helpers, expectations)
sys.path.insert(0, os.path.join(ROOT, "tests/bench"))
import service  # noqa: E402  (the service as make run starts it)
import cpu_census  # noqa: E402  (the host's CPU by kind of process)

BURST = int(os.environ.get("BURST", "200"))
HOSTILE = float(os.environ.get("HOSTILE", "10"))
NRUN = int(os.environ.get("CUGRADE_BENCH_RUNNERS", "1"))  # per GPU
HOSTILE_FILES = ["host_loop.cu", "gpu_loop.cu", "flood.cu", "gpu_membomb.cu", "host_membomb.cu",
                 "fork_bomb.cu"]
OUT = os.environ.get("OUT") or None
PROFILE_WAIT = 60.0  # issue 25: a profile within 60 s of its verdict


def why(sub):
    """What a result that missed its expectation says (kept in the -subs.json:
    a burst's false verdicts can be read without another run on the GPU)."""
    r = (sub or {}).get("result") or {}
    c = r.get("cugrade") or {}
    return {"status": (sub or {}).get("status"), "message": (r.get("status_message") or "")[:300],
            "output": (r.get("output") or "")[:600],
            "program_output": (c.get("program_output") or "")[:1500],
            "sanitizer": [f.get("message", "")[:300] for t in (c.get("sanitizer") or [])
                          if isinstance(t, dict) for f in (t.get("findings") or [])[:3]]}

def handed_back(logs):
    """How many jobs the runners handed back (the server logs each)."""
    try:
        with open(os.path.join(logs, "bench-server.log"), errors="replace") as f:
            return sum(1 for line in f if "handed back by runner" in line and "refused" not in line)
    except OSError:
        return "n/a"


def hostile(name):
    """A hostile file of either burst: the CUDA list, or a Python hostile_*."""
    return name in HOSTILE_FILES or name.startswith("hostile_")


def pool_hits(subs):
    """Issue 25's pool hit rate: of the finished Python jobs (a result with
    `cugrade.warm_runs`), how many had their check run, and their timing
    run, started by the runner's pool before the claim."""
    runs = [s["warm"] for s in subs if isinstance(s.get("warm"), list)]
    if not runs:
        return "no Python job"
    return "%d / %d of %d" % (sum("check" in w for w in runs), sum("timing" in w for w in runs),
                              len(runs))


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def ledger_mb(path):
    """The MiB a GPU's admission ledger (CACHE/gpu-N.admit: "pid token mb"
    lines) holds for live processes, as runner/gpu/admit.c counts it."""
    mb = 0
    try:
        for line in open(path).read().splitlines():
            pid, _, m = line.split()
            if os.path.exists(f"/proc/{pid}"):
                mb += int(m)
    except (OSError, ValueError):
        pass
    return mb


def sample_gpu(stop, samples, gpus, cache):
    """Per 0.5 s: the mean utilisation over the GPUs used, and per GPU the
    memory in use (nvidia-smi) beside what admission's ledger reserved: is
    what a job reserves what its processes hold?"""
    while not stop.is_set():
        try:
            out = subprocess.run(["nvidia-smi", "-i", ",".join(str(g) for g in gpus),
                                  "--query-gpu=utilization.gpu,memory.used",
                                  "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5).stdout
            rows = [[float(x) for x in line.split(",")] for line in out.strip().splitlines()]
            mem = [(u[1], ledger_mb(os.path.join(cache, f"gpu-{g}.admit"))) for g, u in zip(gpus, rows)]
            samples.append((time.time(), sum(u[0] for u in rows) / len(rows), mem))
        except Exception:
            pass
        stop.wait(0.5)


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait


def sample_cpu(stop, samples):
    """The host's CPU busy share, per 0.5 s: is the CPU lane short of cores?"""
    last = cpu_times()
    while not stop.wait(0.5):
        now = cpu_times()
        dt = now[0] - last[0]
        if dt > 0:
            samples.append((time.time(), 100.0 * (1 - (now[1] - last[1]) / dt)))
        last = now


# ------------------------------------------------------------------ the burst

def burst_order(py):
    """(the BURST (lab, path) pairs in the order they are sent, how many are
    hostile). LANG_BURST=py: tests/gpu/solutions-py, its hostile_* files as
    the hostile share; else CUDA C."""
    sol = os.path.join(ROOT, "tests/gpu/solutions-py" if py else "tests/gpu/solutions")
    normal, bad = [], []
    for lab in sorted(os.listdir(sol)):
        for f in sorted(os.listdir(os.path.join(sol, lab))):
            if f.endswith(".py" if py else ".cu"):
                (bad if hostile(f) else normal).append((lab, os.path.join(sol, lab, f)))
    nh = int(round(BURST * HOSTILE / 100.0))
    picks = [bad[i % len(bad)] for i in range(nh)] + [normal[i % len(normal)] for i in range(BURST - nh)]
    # Spread the hostile ones evenly through the burst, as they would arrive.
    at = {int(i * BURST / nh) for i in range(nh)} if nh else set()
    hi, ni = iter(picks[:nh]), iter(picks[nh:])
    return [next(hi) if i in at else next(ni) for i in range(BURST)], nh


def watch(svc, subs):
    """Poll the submissions until each is final and, for a graded one, its
    profile is no longer pending (a graded job's profile comes after its
    verdict, grade.h "score first": watched for at most PROFILE_WAIT seconds
    after the verdict), within BENCH_TIMEOUT. Returns (done {id: (time,
    status)}, prof_at {id: seconds after the verdict}, prof_final {id:
    the profile's status})."""
    done, prof_at, prof_final = {}, {}, {}
    deadline = time.time() + float(os.environ.get("BENCH_TIMEOUT", "520"))

    def watching():
        now = time.time()
        return [s for s in subs if s["id"] is not None and
                (s["id"] not in done or (done[s["id"]][1] == "graded" and s["id"] not in prof_final
                                         and now - done[s["id"]][0] < PROFILE_WAIT))]

    while time.time() < deadline and watching():
        svc.note_leases()
        for s in watching():
            st, sub = e2e.api(svc.base, "GET", f"/api/submissions/{s['id']}", svc.admin)
            if st != 200:
                continue
            if s["id"] not in done and sub.get("status") in e2e.FINAL:
                done[s["id"]] = (time.time(), sub.get("status"))
            if s["id"] in done and done[s["id"]][1] == "graded":
                pf = (((sub.get("result") or {}).get("cugrade") or {}).get("profile") or {})
                stt = pf.get("status") if isinstance(pf, dict) else None
                if stt and stt != "pending":
                    prof_at[s["id"]] = time.time() - done[s["id"]][0]
                    prof_final[s["id"]] = stt
        time.sleep(0.5)
    return done, prof_at, prof_final


def latencies(subs, done):
    """Submit-to-final per kind of file, the false verdicts, the unfinished."""
    r = types.SimpleNamespace(ok=[], ce=[], cerr=[], false_rt=[], unfinished=0)
    for s in subs:
        if s["id"] not in done:
            r.unfinished += 1
            continue
        t_end, status = done[s["id"]]
        lat = t_end - s["t"]
        exp = s["exp"]
        if exp.get("status") == "graded" and exp.get("correctness") == "pass":
            r.ok.append(lat)
        if exp.get("status") in ("compile_error", "rejected"):
            r.ce.append(lat)
        if exp.get("status") == "compile_error":
            r.cerr.append(lat)
        if not hostile(s["file"]) and "graded" in exp.get("status", "").split("|") and \
                status in ("runtime_error", "timeout", "system_error") and \
                status not in exp.get("status", "").split("|"):
            r.false_rt.append(f"{s['lab']}/{s['file']}: {status}")
    return r


def results(svc, subs, done):
    """Each finished one's result: against its file's `expect:` header (as
    make test-gpu checks them, but profiles: they come after the verdict),
    and where its time went (the result document's `phases`, to say what
    bounds throughput), its GPU baseline batches, holds, samples, profile
    and warm runs. Sets s["phases"], s["why"], s["profile"],
    s["profile_doc"] and s["warm"] on the subs it concerns."""
    r = types.SimpleNamespace(exp_met=0, exp_missed=[], phase_sum={}, phase_n=0, batch_kinds={},
                              batch_ages=[], holds=[], hold_by_lab={}, samples_by_lab={})
    for s in subs:
        if s["id"] not in done:
            continue
        st, sub = e2e.api(svc.base, "GET", f"/api/submissions/{s['id']}", svc.admin)
        want = {k: v for k, v in s["exp"].items() if k != "profile"}
        if want:
            if e2e.matches(want, e2e.observe(sub or {})):
                r.exp_met += 1
            else:
                r.exp_missed.append(f"{s['lab']}/{s['file']}: {e2e.obs_str(want, e2e.observe(sub or {}))}")
                s["why"] = why(sub)
        cg = ((sub or {}).get("result") or {}).get("cugrade") or {}
        if isinstance(cg.get("warm_runs"), list):
            s["warm"] = cg["warm_runs"]
        s["phases"] = cg.get("phases") or {}
        if done[s["id"]][1] == "graded":
            graded_result(r, s, cg)
    return r


def graded_result(r, s, cg):
    """results' part for a graded job: its GPU baseline batches (timed in
    its own exclusive hold, or taken from another job's: shared), its
    profile, its exclusive hold and its steps, its samples, its phases."""
    timing = cg.get("timing") if isinstance(cg.get("timing"), dict) else {}
    ph = s["phases"]
    for tm in timing.get("timings") or []:
        if isinstance(tm, dict) and tm.get("name") not in ("student", "cpu"):
            key = "shared" if tm.get("shared_age_s") is not None and not tm.get("interleaved") \
                else "own" if tm.get("interleaved") else "cached"
            r.batch_kinds[key] = r.batch_kinds.get(key, 0) + 1
            if key == "shared":
                r.batch_ages.append(tm["shared_age_s"])
    pf = cg.get("profile") or {}
    if isinstance(pf, dict) and pf:
        s["profile"] = ("busy" if "busy" in (pf.get("message") or "")
                        else (pf.get("status") or "?"))
        s["profile_doc"] = {k: pf.get(k) for k in ("wait_seconds", "seconds", "yields")}
    if isinstance(ph, dict) and isinstance(ph.get("time_run"), (int, float)):
        r.holds.append(ph["time_run"] + (ph.get("time_baselines") or 0))
    hs = cg.get("hold_s")
    if isinstance(hs, dict) and hs:
        r.hold_by_lab.setdefault(s["lab"], []).append(hs)
    if isinstance(timing.get("samples"), int) and timing["samples"] > 0:
        r.samples_by_lab.setdefault(s["lab"], []).append(timing["samples"])
    if isinstance(ph, dict) and ph:
        r.phase_n += 1
        for k, v in ph.items():
            if isinstance(v, (int, float)):
                r.phase_sum[k] = r.phase_sum.get(k, 0.0) + v


# ------------------------------------------------------------------ the table

def autogroup():
    """Does a run's nice reach the scheduler? (docs/runner.md, CPU priorities)"""
    try:
        return {"1": "on", "0": "off"}.get(open("/proc/sys/kernel/sched_autogroup_enabled").read().strip(), "?")
    except OSError:
        return "absent"


def rows_service(b):
    """Throughput, latencies, the GPUs' and the host's use, the verdicts."""
    span = max(b.t_last - b.t_first, 1e-9)
    lat, busy, mem, over, cpu = b.lat, b.busy, b.mem, b.over, b.cpu
    # Per GPU: the jobs its runners finished (the lease last seen in the
    # database; "?" when a job ended between two looks) per minute.
    per_gpu = collections.Counter(b.svc.gpu_of(s["id"]) for s in b.subs if s["id"] in b.done)
    return [
        ("GPUs, runners per GPU", f"{b.svc.ngpus}, {NRUN}"),
        ("prepare (every GPU at once), s", f"{b.svc.prepare_s:.0f}"),
        ("host: cores, autogroup", f"{os.cpu_count()}, {autogroup()}"),
        ("submissions (hostile)", f"{BURST} ({b.nh})"),
        ("finished / unfinished", f"{len(b.done)} / {lat.unfinished}"),
        ("throughput, jobs/min", f"{len(b.done) / span * 60:.1f}"),
        ("throughput per GPU, jobs/min", ", ".join(
            f"GPU {'?' if g is None else g}: {n / span * 60:.1f}"
            for g, n in sorted(per_gpu.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))),
        ("correct: p50 / p95 submit-to-graded, s", f"{pct(lat.ok, 50):.1f} / {pct(lat.ok, 95):.1f} (n={len(lat.ok)})"),
        ("compile errors + rejections: p50 / p99, s", f"{pct(lat.ce, 50):.1f} / {pct(lat.ce, 99):.1f} (n={len(lat.ce)})"),
        ("compile errors alone: p50 / p99, s", f"{pct(lat.cerr, 50):.1f} / {pct(lat.cerr, 99):.1f} (n={len(lat.cerr)})"),
        ("GPU busy share (util > 0), mean util", f"{(sum(1 for u in busy if u > 0) / len(busy) * 100) if busy else float('nan'):.0f}% / {statistics.mean(busy) if busy else float('nan'):.0f}% (n={len(busy)})"),
        # Memory in use against the ledger's reservations (both MiB,
        # every GPU's samples): used above reserved is memory no
        # reservation accounts for (a context or a pool bigger than
        # lock.c assumes, or the runners' own baselines and profiles).
        ("GPU memory used / reserved, MiB: peak; p50 of used - reserved; samples used > reserved",
         (f"{max(u for u, _ in mem):.0f} / {max(r for _, r in mem):.0f}; "
          f"{pct([u - r for u, r in mem], 50):.0f}; "
          f"{sum(1 for u, r in mem if u > r)} of {len(mem)}") if mem else "n/a"),
        ("  used > reserved: first / last at s into the burst; the most, MiB",
         f"{over[0][0]:.0f} / {over[-1][0]:.0f}; {max(x for _, x in over):.0f}" if over else "never"),
        ("host CPU busy, mean / p90", f"{statistics.mean(cpu) if cpu else float('nan'):.0f}% / "
         f"{pct(cpu, 90) if cpu else float('nan'):.0f}% (n={len(cpu)})"),
        ("expectations met (expect: headers, profiles aside)",
         f"{b.res.exp_met} of {b.res.exp_met + len(b.res.exp_missed)}"
         + ("; missed: " + "; ".join(sorted(set(b.res.exp_missed))[:8]) if b.res.exp_missed else "")),
        ("false runtime_errors", f"{len(lat.false_rt)}" + (": " + "; ".join(lat.false_rt[:5]) if lat.false_rt else "")),
        # Of those, ours (the student was not charged: a dead GPU, a
        # crashed helper) against verdicts that blame the student.
        ("  of which system_error (ours)", f"{sum(1 for x in lat.false_rt if x.endswith(': system_error'))}"),
        ("wall, s", f"{b.t_last - b.t_first:.0f}"),
        # Hand-back (docs/runner.md): jobs a runner gave back while they
        # waited for its GPU's memory and another GPU had room.
        ("jobs handed back to another GPU (the server's log)", f"{handed_back(b.svc.logs)}"),
        ("Python jobs whose check / timing run the pool started (warm_runs)", pool_hits(b.subs)),
    ]


def rows_profiles(b):
    """The profiles: within PROFILE_WAIT of the verdict, their final ones."""
    subs, done, prof_at, prof_final = b.subs, b.done, b.prof_at, b.prof_final
    ok_after = [prof_at[k] for k, v in prof_final.items() if v == "ok"]
    in_time = sum(1 for k, v in prof_final.items() if v == "ok" and prof_at[k] <= PROFILE_WAIT)
    # The profiles that came (status ok): their time in line and their run.
    pf_docs = [s["profile_doc"] for s in subs if s.get("profile") == "ok" and s.get("profile_doc")]
    pf_wait = [d["wait_seconds"] for d in pf_docs if d.get("wait_seconds") is not None]
    pf_run = [d["seconds"] for d in pf_docs if d.get("seconds") is not None]
    return [
        ("graded jobs with a profile (status ok) within 60 s of the verdict",
         f"{in_time} of {sum(1 for v in done.values() if v[1] == 'graded')} (after the verdict p50/p95: "
         f"{pct(ok_after, 50):.1f} / {pct(ok_after, 95):.1f} s); final statuses: "
         + (", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(prof_final.values()).items()))
            or "none")),
        # The denominator issue 25 means: the graded jobs that have a
        # profile at all (those that passed and were timed), less the
        # Python ones, whose profile is unavailable by design
        # (job_profile.c: "Python submissions are not profiled here").
        ("profiled jobs with a profile (status ok) within 60 s of the verdict",
         f"{in_time} of {sum(1 for s in subs if s.get('profile') and not s['file'].endswith('.py'))}"
         f" (Python jobs, never profiled, left out: "
         f"{sum(1 for s in subs if s.get('profile') and s['file'].endswith('.py'))})"),
        ("final profiles: in line, s p50/p95; run, s p50/p95; passes given up",
         f"{pct(pf_wait, 50):.1f} / {pct(pf_wait, 95):.1f}; {pct(pf_run, 50):.1f} / "
         f"{pct(pf_run, 95):.1f}; {sum(d.get('yields') or 0 for d in pf_docs)} (n={len(pf_docs)})"),
        ("graded jobs' profiles", ", ".join(f"{k} {v}" for k, v in sorted(
            collections.Counter(s.get("profile") for s in subs if s.get("profile")).items()))
         or "none"),
    ]


def rows_phases(b):
    """Where the graded jobs' time went: holds, baselines, phases per lab."""
    res = b.res
    holds, batch_kinds, batch_ages = res.holds, res.batch_kinds, res.batch_ages
    per_lab = {}
    for s in b.subs:
        if s["id"] in b.done and b.done[s["id"]][1] == "graded" and s.get("phases"):
            per_lab.setdefault(s["lab"], []).append(s["phases"])
    return [
        ("exclusive hold per timed job (time_run + time_baselines), mean / p95, s",
         f"{statistics.mean(holds) if holds else float('nan'):.2f} / {pct(holds, 95):.2f} (n={len(holds)})"),
        ("GPU baseline batches: own / shared (age p50) / cached",
         f"{batch_kinds.get('own', 0)} / {batch_kinds.get('shared', 0)}"
         f" ({pct(batch_ages, 50) if batch_ages else float('nan'):.1f} s) / {batch_kinds.get('cached', 0)}"),
        # Per lab: who waits for admission, whose check runs are long,
        # who waits for its own sanitizers and who for the exclusive
        # hold (others' GPU work draining).
        ("graded jobs' mean admit_wait / gpu_wait / check_run / sanitize_wait / hold_wait / total "
         "per lab, s", "; ".join(
             f"{lab} " + " / ".join(f"{statistics.mean(ph.get(k, 0) for ph in phs):.0f}" for k in (
                 "admit_wait", "gpu_wait", "check_run", "sanitize_wait", "hold_wait", "total")) +
             f" (n={len(phs)})" for lab, phs in sorted(per_lab.items())) or "n/a"),
        # Per lab: what each holds the GPU alone for (the sum of the
        # holds bounds a Python burst: docs/log/2026-12-01-hold-priority.md).
        ("timed jobs' mean time_run / retime per lab, s; re-timed", "; ".join(
            f"{lab} {statistics.mean(ph['time_run'] for ph in phs):.2f} / "
            f"{statistics.mean(ph.get('retime', 0) for ph in phs):.1f}; "
            f"{sum(1 for ph in phs if ph.get('retime'))} of {len(phs)}"
            for lab, phs in sorted((lab, [ph for ph in phs if ph.get('time_run')])
                                   for lab, phs in per_lab.items()) if phs) or "n/a"),
        # How many samples each timing got: the budget (3 s) ends a
        # timing at 3 when its samples are slow (a check compiled in
        # the hold did that to every pipeline job until 115fc2b).
        ("timed jobs' samples per lab: median (min)", "; ".join(
            f"{lab} {statistics.median(ns):g} ({min(ns)})"
            for lab, ns in sorted(res.samples_by_lab.items())) or "n/a"),
        # Where the holds went (cugrade.hold_s: the owner's steps after
        # the gate, Python jobs), each step's mean per lab.
        ("timed jobs' mean hold steps per lab (cugrade.hold_s), s", "; ".join(
            f"{lab}: " + ", ".join(f"{k} {statistics.mean(h.get(k, 0) for h in hs):.2f}"
                                   for k in sorted({k for h in hs for k in h}))
            for lab, hs in sorted(res.hold_by_lab.items()) if hs) or "n/a"),
        ("graded jobs' mean phases, s", ", ".join(f"{k} {v / res.phase_n:.2f}" for k, v in
                                                 sorted(res.phase_sum.items(), key=lambda kv: -kv[1])[:9])
         + f" (n={res.phase_n})" if res.phase_n else "n/a"),
    ]


# ------------------------------------------------------------------ main

def run_burst(svc, order, nh):
    """Send the burst, watch it to its end with the GPUs', the host's and
    the processes' CPU sampled, and collect what the table needs."""
    b = types.SimpleNamespace(svc=svc, nh=nh)
    stoks = svc.students(BURST)
    time.sleep(3)  # runners up and idle
    stop, b.samples, cpu_samples = threading.Event(), [], []
    threading.Thread(target=sample_gpu, args=(stop, b.samples, svc.gpus, svc.cache), daemon=True).start()
    threading.Thread(target=sample_cpu, args=(stop, cpu_samples), daemon=True).start()
    b.census = cpu_census.Census()
    b.census.start()
    b.subs = []
    b.t_first = time.time()
    for i, (lab, path) in enumerate(order):
        sid, t = svc.submit(stoks[i], lab, path)
        b.subs.append({"lab": lab, "file": os.path.basename(path), "path": path, "id": sid,
                       "t": t, "exp": e2e.parse_expect(path)})
    e2e.log(f"submitted {len(b.subs)} in {time.time() - b.t_first:.1f} s")
    b.done, b.prof_at, b.prof_final = watch(svc, b.subs)
    stop.set()
    b.census.stop()
    b.t_last = max([v[0] for v in b.done.values()] or [time.time()])
    b.lat = latencies(b.subs, b.done)
    within = [(t, u, ms) for (t, u, ms) in b.samples if b.t_first <= t <= b.t_last]
    b.busy = [u for (_, u, _) in within]
    b.mem = [m for (_, _, ms) in within for m in ms]
    # When more was in use than reserved: seconds into the burst, the excess.
    b.over = [(t - b.t_first, u - r) for (t, _, ms) in within for u, r in ms if u > r]
    b.res = results(svc, b.subs, b.done)
    b.cpu = [u for (t, u) in cpu_samples if b.t_first <= t <= b.t_last]
    return b


def main():
    py = os.environ.get("LANG_BURST", "cu") == "py"
    order, nh = burst_order(py)
    tmp = tempfile.mkdtemp(prefix="cugrade-deadline-")
    os.chmod(tmp, 0o755)
    # The service as make run starts it: prepare on every GPU, then NRUN
    # runners on each (tests/bench/service.py).
    svc = service.Service(tmp, OUT or tmp, per_gpu=NRUN)
    kind = "py" if py else "cu"
    try:
        svc.start()
        b = run_burst(svc, order, nh)
        if OUT:  # the raw data first: a table that fails to print loses nothing
            with open(os.path.join(OUT, f"deadline-{kind}{int(HOSTILE)}-subs.json"), "w") as f:
                json.dump([dict(s, done=b.done.get(s["id"])) for s in b.subs], f, indent=1, default=str)
        rows = rows_service(b) + rows_profiles(b) + rows_phases(b)
        w = max(len(a) for a, _ in rows)
        print(f"\ndeadline_bench {'Python' if py else 'CUDA'} BURST={BURST} HOSTILE={HOSTILE:g}% GPUs {svc.gpus}")
        for a, v in rows:
            print(f"{a:<{w}} | {v}")
        print(b.census.table())
        if OUT:
            with open(os.path.join(OUT, f"deadline-{kind}{int(HOSTILE)}.json"), "w") as f:
                json.dump({"rows": rows, "cpu_census": b.census.rows(),
                           "subs": [dict(s, done=b.done.get(s["id"])) for s in b.subs],
                           "gpu_samples": b.samples}, f, indent=1, default=str)
        return 0
    finally:
        svc.stop()


if __name__ == "__main__":
    sys.exit(main())
