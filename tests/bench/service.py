"""The grading service as `make run` starts it, for the GPU benchmarks of
tests/bench (alone_bench.py, deadline_bench.py): the real server on a fresh
database, `cugrade-runner prepare` on every GPU (labs built, device records,
baselines and limits measured: what a first job would otherwise wait for),
then one runner per GPU (`--gpu g`, CUGRADE_RUNNERS_PER_HOST = the GPUs, as
deploy/run.sh does), `per_gpu` each (default 1). Binaries and their
environment from tests/gpu/e2e.py (dist/ through tests/tools/dist_env.sh).
Standard library only."""
import os, re, sqlite3, subprocess, sys, time, urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests/gpu"))
import e2e  # noqa: E402  (binaries, api(), FINAL, expectations)


class Service:
    """start() the server, prepare, the runners; stop() them. logs: where
    bench-server.log, bench-prepare<g>.log and bench-runner<k>.log go."""

    def __init__(self, tmp, logs, ngpus=None, per_gpu=1):
        self.tmp, self.logs = tmp, logs
        # CUGRADE_BENCH_GPUS="1": these GPU indices only (two benches side by
        # side on one host, each on its own GPU); else the first ngpus.
        pick = [int(x) for x in os.environ.get("CUGRADE_BENCH_GPUS", "").split(",") if x.strip().isdigit()]
        self.gpus = pick or list(range(ngpus or e2e.gpu_count()))
        self.ngpus = len(self.gpus)
        self.per_gpu = per_gpu
        self.env = e2e.bin_env()
        # A bench beside another on the same host says how many runners
        # share its cores (CUGRADE_RUNNERS_PER_HOST set by the caller).
        self.env.setdefault("CUGRADE_RUNNERS_PER_HOST", str(self.ngpus))
        self.procs = []
        self.db = os.path.join(tmp, "cugrade.db")
        self.base = self.admin = None
        self.prepare_s = 0.0
        self.runner_of = {}  # submission id -> the runner that last held its lease

    def _token(self, name, role):
        p = subprocess.run([e2e.SERVER, "user", "add", "--db", self.db, name, role], env=self.env,
                           capture_output=True, text=True)
        return re.search(r"(cgr_[0-9a-f]{64})", p.stdout + p.stderr).group(1)

    def start(self):
        """Server up, every GPU prepared, runners claiming. Returns self."""
        env, tmp = self.env, self.tmp
        os.makedirs(self.logs, exist_ok=True)  # OUT=DIR given, not made yet
        p = subprocess.run([e2e.SERVER, "init", "--db", self.db], env=env, capture_output=True, text=True)
        self.admin = re.search(r"(cga_[0-9a-f]{64})", p.stdout + p.stderr).group(1)
        port = e2e.free_port()
        self.base = f"http://127.0.0.1:{port}"
        slog = open(os.path.join(self.logs, "bench-server.log"), "w")
        self.procs.append(subprocess.Popen(
            [e2e.SERVER, "serve", "--db", self.db, "--listen", f"127.0.0.1:{port}", "--labs",
             os.path.join(ROOT, "labs"), "--rubrics", os.path.join(ROOT, "rubrics")],
            env=env, stdout=slog, stderr=slog, cwd=ROOT))
        for _ in range(100):
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        self.cache = os.environ.get("CUGRADE_CACHE") or os.path.join(tmp, "cache")
        common = ["--cache", self.cache, "--root", ROOT]
        t0 = time.time()
        preps = []
        for g in self.gpus:  # every GPU at once: they share the lab builds' lock
            plog = open(os.path.join(self.logs, f"bench-prepare{g}.log"), "w")
            preps.append(subprocess.Popen([e2e.RUNNER, "prepare", "--gpu", str(g)] + common +
                                          ["--work", os.path.join(tmp, f"work-prep{g}")],
                                          env=env, stdout=plog, stderr=plog, cwd=ROOT))
        for p in preps:
            p.wait()
        self.prepare_s = time.time() - t0
        e2e.log(f"prepare on {self.ngpus} GPU(s): {self.prepare_s:.0f} s")
        for g in self.gpus:
            for line in e2e.prepare_notes(os.path.join(self.logs, f"bench-prepare{g}.log")):
                e2e.log(f"prepare GPU {g}: {line}")
        for gi, g in enumerate(self.gpus):
            for i in range(self.per_gpu):
                k = gi * self.per_gpu + i
                tf = os.path.join(tmp, f"runner{k}.token")
                with open(tf, "w") as f:
                    f.write(self._token(f"runner{k}", "runner") + "\n")
                os.chmod(tf, 0o600)
                rl = open(os.path.join(self.logs, f"bench-runner{k}.log"), "w")
                self.procs.append(subprocess.Popen(
                    [e2e.RUNNER, "--server", self.base, "--token-file", tf, "--work",
                     os.path.join(tmp, f"work-{k}"), "--name", f"gpu{g}-r{i}", "--gpu", str(g)] + common,
                    env=env, stdout=rl, stderr=rl, cwd=ROOT))
        e2e.log(f"{self.per_gpu} runner(s) on each of {self.ngpus} GPU(s)")
        return self

    def students(self, n):
        """n new students' tokens."""
        st, users = e2e.api(self.base, "POST", "/api/admin/users", self.admin,
                            {"users": [{"name": f"s{time.time_ns()}-{i}", "role": "student"} for i in range(n)]})
        return [u["token"] for u in users["users"]]

    def submit(self, token, lab, path):
        """POST the file; returns (submission id or None, the time it was sent)."""
        with open(path, "rb") as f:
            src = f.read()
        t = time.time()
        st, r = e2e.api(self.base, "POST", f"/api/labs/{lab}/submissions?filename={os.path.basename(path)}",
                        token, src, "application/octet-stream")
        return (r.get("id") if st == 202 else None), t

    def get(self, sid):
        st, sub = e2e.api(self.base, "GET", f"/api/submissions/{sid}", self.admin)
        return sub if st == 200 else None

    def note_leases(self):
        """Remember which runner holds each leased submission (the database's
        lease_runner, cleared when the job ends): per-GPU counts."""
        try:
            con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=1)
            for sid, r in con.execute("SELECT id, lease_runner FROM submissions WHERE lease_runner IS NOT NULL"):
                self.runner_of[sid] = r
            con.close()
        except sqlite3.Error:
            pass

    def gpu_of(self, sid):
        """The GPU index whose runner graded sid, or None when not seen."""
        m = re.match(r"gpu(\d+)-", self.runner_of.get(sid) or "")
        return int(m.group(1)) if m else None

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
