#!/usr/bin/env python3
"""Deadline night on one GPU host (a benchmark: prints a table, asserts
nothing). Starts the real server and CUGRADE_BENCH_RUNNERS runners on GPU 0
(default 1: one runner per GPU, as make run starts it), waits for `prepare` (labs built, baselines and limits
measured), then sends a burst of BURST submissions (default 200), one
student each, mixing tests/gpu/solutions/*/*.cu round-robin with HOSTILE
percent (default 10) of hostile ones (tests/gpu/solutions/reduction:
host_loop, gpu_loop, flood, gpu_membomb, host_membomb, fork_bomb). Prints:
throughput per minute, p50/p95 submit-to-final of the correct submissions,
p99 of compile errors and rejections, GPU busy share (nvidia-smi sampled
every 0.5 s while work was queued), and false runtime_errors (a file whose
`// expect:` header says graded that ended runtime_error, timeout or
system_error). Run it twice, HOSTILE=10 and HOSTILE=0, to compare.

    sh tests/bench/deadline_bench.sh          # on the GPU host, after make dist
"""
import json, os, re, statistics, subprocess, sys, tempfile, threading, time, urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests/gpu"))
import e2e  # noqa: E402  (server/runner start-up helpers, expectations)

BURST = int(os.environ.get("BURST", "200"))
HOSTILE = float(os.environ.get("HOSTILE", "10"))
NRUN = int(os.environ.get("CUGRADE_BENCH_RUNNERS", "1"))
HOSTILE_FILES = ["host_loop.cu", "gpu_loop.cu", "flood.cu", "gpu_membomb.cu", "host_membomb.cu",
                 "fork_bomb.cu"]
OUT = os.environ.get("OUT") or None


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def sample_gpu(stop, samples):
    while not stop.is_set():
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                  "-i", "0"], capture_output=True, text=True, timeout=5).stdout
            samples.append((time.time(), float(out.strip().splitlines()[0])))
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


def main():
    sol = os.path.join(ROOT, "tests/gpu/solutions")
    normal, hostile = [], []
    for lab in sorted(os.listdir(sol)):
        for f in sorted(os.listdir(os.path.join(sol, lab))):
            if f.endswith(".cu"):
                (hostile if f in HOSTILE_FILES else normal).append((lab, os.path.join(sol, lab, f)))
    nh = int(round(BURST * HOSTILE / 100.0))
    picks = [hostile[i % len(hostile)] for i in range(nh)] + [normal[i % len(normal)] for i in range(BURST - nh)]
    # Spread the hostile ones evenly through the burst, as they would arrive.
    at = {int(i * BURST / nh) for i in range(nh)} if nh else set()
    hi, ni = iter(picks[:nh]), iter(picks[nh:])
    order = [next(hi) if i in at else next(ni) for i in range(BURST)]

    tmp = tempfile.mkdtemp(prefix="cugrade-deadline-")
    os.chmod(tmp, 0o755)
    env = e2e.bin_env()
    procs = []
    logs = OUT or tmp
    try:
        db = os.path.join(tmp, "cugrade.db")
        p = subprocess.run([e2e.SERVER, "init", "--db", db], env=env, capture_output=True, text=True)
        admin = re.search(r"(cga_[0-9a-f]{64})", p.stdout + p.stderr).group(1)
        toks = []
        for i in range(NRUN):
            p = subprocess.run([e2e.SERVER, "user", "add", "--db", db, f"runner{i}", "runner"], env=env,
                               capture_output=True, text=True)
            tf = os.path.join(tmp, f"runner{i}.token")
            with open(tf, "w") as f:
                f.write(re.search(r"(cgr_[0-9a-f]{64})", p.stdout + p.stderr).group(1) + "\n")
            os.chmod(tf, 0o600)
            toks.append(tf)
        port = e2e.free_port()
        base = f"http://127.0.0.1:{port}"
        slog = open(os.path.join(logs, "bench-server.log"), "w")
        procs.append(subprocess.Popen([e2e.SERVER, "serve", "--db", db, "--listen", f"127.0.0.1:{port}",
                                       "--labs", os.path.join(ROOT, "labs"), "--rubrics",
                                       os.path.join(ROOT, "rubrics")], env=env, stdout=slog, stderr=slog, cwd=ROOT))
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        cache = os.environ.get("CUGRADE_CACHE") or os.path.join(tmp, "cache")
        common = ["--gpu", "0", "--cache", cache, "--root", ROOT]
        t_prep = time.time()
        with open(os.path.join(logs, "bench-prepare.log"), "w") as plog:
            subprocess.run([e2e.RUNNER, "prepare"] + common + ["--work", os.path.join(tmp, "work-prep")],
                           env=env, stdout=plog, stderr=plog, cwd=ROOT)
        e2e.log(f"prepare: {time.time() - t_prep:.0f} s")
        for i in range(NRUN):
            rl = open(os.path.join(logs, f"bench-runner{i}.log"), "w")
            procs.append(subprocess.Popen([e2e.RUNNER, "--server", base, "--token-file", toks[i], "--work",
                                           os.path.join(tmp, f"work-{i}"), "--name", f"gpu0-r{i}"] + common,
                                          env=env, stdout=rl, stderr=rl, cwd=ROOT))
        st, users = e2e.api(base, "POST", "/api/admin/users", admin,
                            {"users": [{"name": f"s{i}", "role": "student"} for i in range(BURST)]})
        stoks = [u["token"] for u in users["users"]]
        time.sleep(3)  # runners up and idle

        stop, samples = threading.Event(), []
        th = threading.Thread(target=sample_gpu, args=(stop, samples), daemon=True)
        th.start()
        cpu_samples = []
        threading.Thread(target=sample_cpu, args=(stop, cpu_samples), daemon=True).start()
        subs = []
        t_first = time.time()
        for i, (lab, path) in enumerate(order):
            with open(path, "rb") as f:
                src = f.read()
            name = os.path.basename(path)
            t = time.time()
            st, r = e2e.api(base, "POST", f"/api/labs/{lab}/submissions?filename={name}", stoks[i], src,
                            "application/octet-stream")
            subs.append({"lab": lab, "file": name, "path": path, "id": r.get("id") if st == 202 else None,
                         "t": t, "exp": e2e.parse_expect(path)})
        e2e.log(f"submitted {len(subs)} in {time.time() - t_first:.1f} s")
        done = {}
        deadline = time.time() + float(os.environ.get("BENCH_TIMEOUT", "520"))
        while time.time() < deadline and len(done) < len([s for s in subs if s["id"]]):
            for s in subs:
                if s["id"] is None or s["id"] in done:
                    continue
                st, sub = e2e.api(base, "GET", f"/api/submissions/{s['id']}", admin)
                if st == 200 and sub.get("status") in e2e.FINAL:
                    done[s["id"]] = (time.time(), sub.get("status"))
            time.sleep(0.5)
        stop.set()
        t_last = max([v[0] for v in done.values()] or [time.time()])

        lat_ok, lat_ce, lat_cerr, false_rt, unfinished = [], [], [], [], 0
        for s in subs:
            if s["id"] not in done:
                unfinished += 1
                continue
            t_end, status = done[s["id"]]
            lat = t_end - s["t"]
            exp = s["exp"]
            if exp.get("status") == "graded" and exp.get("correctness") == "pass":
                lat_ok.append(lat)
            if exp.get("status") in ("compile_error", "rejected"):
                lat_ce.append(lat)
            if exp.get("status") == "compile_error":
                lat_cerr.append(lat)
            if s["file"] not in HOSTILE_FILES and "graded" in exp.get("status", "").split("|") and \
                    status in ("runtime_error", "timeout", "system_error") and \
                    status not in exp.get("status", "").split("|"):
                false_rt.append(f"{s['lab']}/{s['file']}: {status}")
        busy = [u for (t, u) in samples if t_first <= t <= t_last]
        # Where the time went: the mean of each phase over the graded jobs
        # (the result document's `phases`), to say what bounds throughput.
        phase_sum, phase_n = {}, 0
        batch_kinds, batch_ages, holds = {}, [], []
        for s in subs:
            if s["id"] in done and done[s["id"]][1] != "graded":
                st, sub = e2e.api(base, "GET", f"/api/submissions/{s['id']}", admin)
                s["phases"] = (((sub or {}).get("result") or {}).get("cugrade") or {}).get("phases") or {}
            if s["id"] in done and done[s["id"]][1] == "graded":
                st, sub = e2e.api(base, "GET", f"/api/submissions/{s['id']}", admin)
                ph = (((sub or {}).get("result") or {}).get("cugrade") or {}).get("phases") or {}
                s["phases"] = ph
                # The GPU baseline batches of the job: timed in its own
                # exclusive hold, or taken from another job's (shared).
                tms = ((((sub or {}).get("result") or {}).get("cugrade") or {}).get("timing") or {}).get("timings") or []
                for tm in tms:
                    if isinstance(tm, dict) and tm.get("name") not in ("student", "cpu"):
                        key = "shared" if tm.get("shared_age_s") is not None and not tm.get("interleaved") \
                            else "own" if tm.get("interleaved") else "cached"
                        batch_kinds[key] = batch_kinds.get(key, 0) + 1
                        if key == "shared":
                            batch_ages.append(tm["shared_age_s"])
                pf = (((sub or {}).get("result") or {}).get("cugrade") or {}).get("profile") or {}
                if isinstance(pf, dict) and pf:
                    s["profile"] = ("busy" if "busy" in (pf.get("message") or "")
                                    else (pf.get("status") or "?"))
                if isinstance(ph, dict) and isinstance(ph.get("time_run"), (int, float)):
                    holds.append(ph["time_run"] + (ph.get("time_baselines") or 0))
                if isinstance(ph, dict) and ph:
                    phase_n += 1
                    for k, v in ph.items():
                        if isinstance(v, (int, float)):
                            phase_sum[k] = phase_sum.get(k, 0.0) + v
        cpu = [u for (t, u) in cpu_samples if t_first <= t <= t_last]
        if OUT:  # the raw data first: a table that fails to print loses nothing
            with open(os.path.join(OUT, f"deadline-{int(HOSTILE)}-subs.json"), "w") as f:
                json.dump([dict(s, done=done.get(s["id"])) for s in subs], f, indent=1, default=str)
        try:  # does a run's nice reach the scheduler? (docs/runner.md, CPU priorities)
            ag = {"1": "on", "0": "off"}.get(open("/proc/sys/kernel/sched_autogroup_enabled").read().strip(), "?")
        except OSError:
            ag = "absent"
        rows = [
            ("runners on GPU 0", f"{NRUN}"),
            ("host: cores, autogroup", f"{os.cpu_count()}, {ag}"),
            ("submissions (hostile)", f"{BURST} ({nh})"),
            ("finished / unfinished", f"{len(done)} / {unfinished}"),
            ("throughput, jobs/min", f"{len(done) / max(t_last - t_first, 1e-9) * 60:.1f}"),
            ("correct: p50 / p95 submit-to-graded, s", f"{pct(lat_ok, 50):.1f} / {pct(lat_ok, 95):.1f} (n={len(lat_ok)})"),
            ("compile errors + rejections: p50 / p99, s", f"{pct(lat_ce, 50):.1f} / {pct(lat_ce, 99):.1f} (n={len(lat_ce)})"),
            ("compile errors alone: p50 / p99, s", f"{pct(lat_cerr, 50):.1f} / {pct(lat_cerr, 99):.1f} (n={len(lat_cerr)})"),
            ("GPU busy share (util > 0), mean util", f"{(sum(1 for u in busy if u > 0) / len(busy) * 100) if busy else float('nan'):.0f}% / {statistics.mean(busy) if busy else float('nan'):.0f}% (n={len(busy)})"),
            ("host CPU busy, mean / p90", f"{statistics.mean(cpu) if cpu else float('nan'):.0f}% / "
             f"{pct(cpu, 90) if cpu else float('nan'):.0f}% (n={len(cpu)})"),
            ("false runtime_errors", f"{len(false_rt)}" + (": " + "; ".join(false_rt[:5]) if false_rt else "")),
            # Of those, ours (the student was not charged: a dead GPU, a
            # crashed helper) against verdicts that blame the student.
            ("  of which system_error (ours)", f"{sum(1 for x in false_rt if x.endswith(': system_error'))}"),
            ("wall, s", f"{t_last - t_first:.0f}"),
            ("graded jobs' profiles", ", ".join(f"{k} {v}" for k, v in sorted(
                __import__("collections").Counter(s.get("profile") for s in subs if s.get("profile")).items()))
             or "none"),
            ("exclusive hold per timed job (time_run + time_baselines), mean / p95, s",
             f"{statistics.mean(holds) if holds else float('nan'):.2f} / {pct(holds, 95):.2f} (n={len(holds)})"),
            ("GPU baseline batches: own / shared (age p50) / cached",
             f"{batch_kinds.get('own', 0)} / {batch_kinds.get('shared', 0)}"
             f" ({pct(batch_ages, 50) if batch_ages else float('nan'):.1f} s) / {batch_kinds.get('cached', 0)}"),
            ("graded jobs' mean phases, s", ", ".join(f"{k} {v / phase_n:.2f}" for k, v in
                                                     sorted(phase_sum.items(), key=lambda kv: -kv[1])[:9])
             + f" (n={phase_n})" if phase_n else "n/a"),
        ]
        w = max(len(a) for a, _ in rows)
        print(f"\ndeadline_bench HOSTILE={HOSTILE:g}%")
        for a, b in rows:
            print(f"{a:<{w}} | {b}")
        if OUT:
            with open(os.path.join(OUT, f"deadline-{int(HOSTILE)}.json"), "w") as f:
                json.dump({"rows": rows, "subs": [dict(s, done=done.get(s["id"])) for s in subs]}, f, indent=1, default=str)
        return 0
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    sys.exit(main())
