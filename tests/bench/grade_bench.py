#!/usr/bin/env python3
"""Grading benchmark on a GPU host (tests/bench/grade_bench.sh runs it).

1. Latency: a correct matmul (tests/gpu/solutions/matmul/fast.cu) submitted
   through the real server to one real runner, one at a time, N times
   (default 10): submit-to-graded seconds, median, split by phase (the
   result's cugrade.phases), next to the floor = nvcc -c of the same file
   outside the sandbox (median of 3) + the GPU work (the sandboxed check and
   timing runs themselves, measured alone: `cugrade-runner grade` with a
   rubric without sanitizers, median of 3, since in a job the sanitizers run
   beside the check run). Target: latency <= 1.5x the floor.
2. Regrade stability: the same submission regraded N times
   (POST /api/admin/submissions/ID/regrade): spread of the metric
   (max-min over the median) and whether the speed tier flipped.

Environment as tests/gpu/e2e.py (CUGRADE_SERVER_BIN, CUGRADE_RUNNER_BIN,
CUGRADE_BIN_ENV, OUT), plus BENCH_N (default 10), BENCH_BUDGET (seconds for
the whole benchmark, default 1200: it reports what it measured by then),
BENCH_FILE (the solution to submit).
"""
import importlib.util, json, os, statistics, subprocess, sys, tempfile, time, shutil, re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
spec = importlib.util.spec_from_file_location("e2e", os.path.join(ROOT, "tests/gpu/e2e.py"))
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)

N = int(os.environ.get("BENCH_N", "10"))
BUDGET = float(os.environ.get("BENCH_BUDGET", "1200"))
FILE = os.environ.get("BENCH_FILE", os.path.join(ROOT, "tests/gpu/solutions/matmul/fast.cu"))
OUT = os.environ.get("OUT") or None
T0 = time.time()


def left():
    return BUDGET - (time.time() - T0)


def wait_final(base, admin, sid, since_status=None, timeout=300):
    t = time.time()
    while time.time() - t < timeout:
        st, sub = e2e.api(base, "GET", f"/api/submissions/{sid}", admin)
        if st == 200 and sub.get("status") in e2e.FINAL and (since_status is None or
                                                             sub.get("updated_at") != since_status):
            return sub
        # 20 ms: the poll's own step must not hide differences (it was 0.2 s).
        time.sleep(0.02)
    return None


class Service:
    """The real server and one real runner (prepared first) in tmp, the
    logs in logs; its base URL, admin token, two students' tokens, the
    runner's common arguments and env."""

    def __init__(self, tmp, logs):
        self.tmp, self.logs, self.procs = tmp, logs, []
        self.env = e2e.bin_env()

    def start(self):
        tmp, logs, env = self.tmp, self.logs, self.env
        db = os.path.join(tmp, "db")
        p = subprocess.run([e2e.SERVER, "init", "--db", db], env=env, capture_output=True, text=True)
        self.admin = re.search(r"(cga_[0-9a-f]{64})", p.stdout + p.stderr).group(1)
        p = subprocess.run([e2e.SERVER, "user", "add", "--db", db, "bench-runner", "runner"], env=env,
                           capture_output=True, text=True)
        tf = os.path.join(tmp, "runner.token")
        with open(tf, "w") as f:
            f.write(re.search(r"(cgr_[0-9a-f]{64})", p.stdout + p.stderr).group(1) + "\n")
        port = e2e.free_port()
        self.base = f"http://127.0.0.1:{port}"
        slog = open(os.path.join(logs, "bench-server.log"), "w")
        self.procs.append(subprocess.Popen([e2e.SERVER, "serve", "--db", db, "--listen",
                                            f"127.0.0.1:{port}", "--labs", os.path.join(ROOT, "labs"),
                                            "--rubrics", os.path.join(ROOT, "rubrics")],
                                           env=env, stdout=slog, stderr=slog))
        for _ in range(100):
            try:
                e2e.urllib.request.urlopen(self.base + "/healthz", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        # CUGRADE_CACHE: built labs and baselines kept between runs (0755 path).
        cache = os.environ.get("CUGRADE_CACHE") or os.path.join(tmp, "cache")
        self.common = ["--gpu", "0", "--cache", cache, "--root", ROOT]
        with open(os.path.join(logs, "bench-prepare.log"), "w") as plog:
            subprocess.run([e2e.RUNNER, "prepare"] + self.common + ["--work", os.path.join(tmp, "wp")],
                           env=env, stdout=plog, stderr=plog)
        rlog = open(os.path.join(logs, "bench-runner.log"), "w")
        self.procs.append(subprocess.Popen([e2e.RUNNER, "--server", self.base, "--token-file", tf,
                                            "--work", os.path.join(tmp, "w"), "--lazy-build"]
                                           + self.common, env=env, stdout=rlog, stderr=rlog))
        st, users = e2e.api(self.base, "POST", "/api/admin/users", self.admin,
                            {"users": [{"name": "bench1", "role": "student"},
                                       {"name": "bench2", "role": "student"}]})
        self.toks = [u["token"] for u in users["users"]]

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def floor_nvcc(tmp):
    """The floor's compile: nvcc -c of the student file, outside any
    sandbox, three times. Returns the three seconds."""
    nv = []
    for _ in range(3):
        t = time.time()
        subprocess.run(["/usr/local/cuda/bin/nvcc", "-c", "-O3", "-lineinfo", "-arch=sm_90", FILE,
                        "-o", os.path.join(tmp, "floor.o")], check=False,
                       env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
        nv.append(time.time() - t)
    return nv


def latency_runs(svc, src):
    """Step 1: the file submitted N times, one at a time. Returns the
    submit-to-graded seconds, each job's phases, and the first id."""
    lat, phases, first_id = [], [], None
    for i in range(N):
        if left() < 45:
            break
        t = time.time()
        st, r = e2e.api(svc.base, "POST", "/api/labs/matmul/submissions?filename=kernel.cu",
                        svc.toks[i % 2], src, "application/octet-stream")
        if st != 202:
            print(f"bench: submit failed {st} {r}", file=sys.stderr)
            break
        sub = wait_final(svc.base, svc.admin, r["id"])
        if sub is None:
            break
        lat.append(time.time() - t)
        ph = ((sub.get("result") or {}).get("cugrade") or {}).get("phases") or {}
        phases.append(ph)
        first_id = first_id or r["id"]
        e2e.log(f"latency run {i + 1}: {lat[-1]:.2f} s, status {sub['status']}")
    return lat, phases, first_id


def regrades(svc, first_id):
    """Step 2: the first submission regraded N times. Returns each
    regrade's metric value and tier."""
    metrics, tiers = [], []
    for i in range(N if first_id else 0):
        if left() < 35:
            break
        st, cur = e2e.api(svc.base, "GET", f"/api/submissions/{first_id}", svc.admin)
        before = cur.get("updated_at")
        st, r = e2e.api(svc.base, "POST", f"/api/admin/submissions/{first_id}/regrade", svc.admin, {})
        if st != 202:
            print(f"bench: regrade failed {st} {r}", file=sys.stderr)
            break
        time.sleep(0.3)
        sub = wait_final(svc.base, svc.admin, first_id, since_status=before)
        if sub is None:
            break
        cg = (sub.get("result") or {}).get("cugrade") or {}
        sp = (cg.get("speed") or [{}])[0]
        metrics.append(sp.get("value"))
        tiers.append(sp.get("tier"))
        e2e.log(f"regrade {i + 1}: {sp.get('metric')}={sp.get('value')} tier={sp.get('tier')}")
    return metrics, tiers


def floor_alone(svc):
    """The floor's GPU work alone: should anything of the job run beside
    the check or timing run, the job's own check_run/time_run phases would
    include that contention and inflate the floor. So the same file is
    graded by `cugrade-runner grade` with a rubric without sanitizers: its
    check and timing runs have the GPU to themselves (the serve runner is
    idle by now). Returns check_run + time_run of each of (up to) 3."""
    alone = []
    tmp = svc.tmp
    rub = json.load(open(os.path.join(ROOT, "rubrics/matmul.json")))
    rub["sanitizer"] = {"points": 0, "tools": []}
    rpath = os.path.join(tmp, "rubric-nosan.json")
    json.dump(rub, open(rpath, "w"))
    for i in range(3):
        if left() < 20:
            break
        p = subprocess.run([e2e.RUNNER, "grade", "--lab", "matmul", "--file", FILE, "--rubric", rpath,
                            "--work", os.path.join(tmp, "wg")] + svc.common, env=svc.env,
                           capture_output=True, text=True, timeout=120)
        try:
            ph = json.loads(p.stdout)["result"]["cugrade"]["phases"]
            alone.append(ph["check_run"] + ph["time_run"])
        except (ValueError, KeyError, TypeError):
            print(f"bench: floor grade failed: {p.stderr[-500:]}", file=sys.stderr)
    return alone


def report_latency(lat, phases, nvcc_s, alone):
    print("== grading latency (correct matmul, fast.cu, one runner, H200)")
    if not lat:
        print("no latency measured")
        return
    med = statistics.median(lat)
    keys = sorted({k for p in phases for k in p if k != "total"},
                  key=lambda k: -statistics.median([p.get(k, 0) for p in phases]))
    print(f"runs: {len(lat)}; submit-to-graded median {med:.2f} s (min {min(lat):.2f}, max {max(lat):.2f})")
    for k in keys:
        print(f"  {k:14s} {statistics.median([p.get(k, 0) for p in phases]):7.2f} s")
    in_job = statistics.median([p.get("check_run", 0) + p.get("time_run", 0) for p in phases])
    gpu_work = statistics.median(alone) if alone else in_job
    floor = nvcc_s + gpu_work
    print(f"floor: nvcc -c outside the sandbox {nvcc_s:.2f} s + GPU work (check and timing runs "
          f"{'alone, median of %d' % len(alone) if alone else 'IN THE JOB (none alone)'}) "
          f"{gpu_work:.2f} s = {floor:.2f} s; latency / floor = {med / floor:.2f} (target <= 1.5)")
    print(f"  (the same two runs inside the graded jobs: {in_job:.2f} s)")


def report_regrades(metrics, tiers):
    print("== regrade stability (same submission)")
    vals = [m for m in metrics if isinstance(m, (int, float))]
    if not vals:
        print("no regrade measured")
        return
    mv = statistics.median(vals)
    print(f"regrades: {len(vals)}; metric median {mv:.4g}, min {min(vals):.4g}, max {max(vals):.4g}, "
          f"spread {(max(vals) - min(vals)) / mv * 100:.1f}% of the median")
    print(f"tiers seen: {sorted(set(str(t) for t in tiers))}; flipped: {'yes' if len(set(tiers)) > 1 else 'no'}")


def main():
    tmp = tempfile.mkdtemp(prefix="cugrade-bench-")
    os.chmod(tmp, 0o755)
    svc = Service(tmp, OUT or tmp)
    try:
        svc.start()
        src = open(FILE, "rb").read()
        nv = floor_nvcc(tmp)
        lat, phases, first_id = latency_runs(svc, src)
        metrics, tiers = regrades(svc, first_id)
        alone = floor_alone(svc)
        report_latency(lat, phases, statistics.median(nv), alone)
        report_regrades(metrics, tiers)
        if OUT:
            with open(os.path.join(OUT, "bench.json"), "w") as f:
                json.dump({"latency_s": lat, "phases": phases, "nvcc_s": nv, "floor_gpu_alone_s": alone,
                           "metrics": metrics, "tiers": tiers}, f, indent=1)
        return 0
    finally:
        svc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
