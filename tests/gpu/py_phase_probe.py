"""Where a Python run's time goes (issue 25; GPU host only, no sandbox, no
server): a table, not a test.

    python3 tests/gpu/py_phase_probe.py [LAB/FILE.py ...]

For each file of tests/gpu/solutions-py, runs labs/common/py/owner.py in
check mode (the lab's cases) and in time mode (its timing case), each as its
own process with the owner's steps wrapped in a clock, and prints the
seconds of each step: the owner's start (interpreter, lab), its backend
(CuPy's import and context), the tenant's start, the wait for its first
answer (runtime_ready: Numba, CuPy and the tenant's context, asked as it
starts, so this is only what the owner's own start did not cover), the
student's module, the
warm-up (the JIT), the cases or the timing. A second table splits a
timing run's samples (time_sample, all of them, the untimed batches
included): the inputs' fill, the lab's reference, the poison, the wait
for our own GPU work, the probe, the L2 flush, the clocked call and the
check (sample_ok). Then the bare costs: an interpreter with NumPy, Numba,
CuPy, and each library's context.

PROBE_OWNER_ROOT=DIR runs the owner and the labs of another tree (an
earlier commit's `git archive`), for a before and after in one call.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = os.path.join(os.environ.get("PROBE_OWNER_ROOT") or ROOT, "labs", "common", "py")
SEED = "0123456789abcdef0123456789abcdef"
DEFAULT = ["reduction/fast_numba.py", "reduction/cupy_sum.py", "embedding/cupy_take.py"]
PARTS = ["fill", "reference", "poison", "sync", "probe", "map_new", "flush_l2", "call",
         "sample_ok", "time_sample"]
STEPS = ["backend", "time_cpu", "time_prepare", "start_tenant", "runtime_ready", "round_trip", "load", "warm_up", "run_check", "run_time"]


def child(mode, lab, path, case):
    """The owner, its steps timed; the times go to fd 4 as JSON at exit."""
    t_start = time.perf_counter()
    sys.path.insert(0, PY)
    import owner
    times = {"import_owner": time.perf_counter() - t_start}

    def clock(name, fn):
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                times[name] = times.get(name, 0.0) + time.perf_counter() - t0
        return wrapped

    for n in STEPS:
        setattr(owner, n, clock(n, getattr(owner, n)))
    # time_sample's parts, counted only inside it
    inside = {"on": False}

    def part(name, fn):
        c = clock(name, fn)

        def wrapped(*a, **k):
            return c(*a, **k) if inside["on"] else fn(*a, **k)
        return wrapped

    sample = clock("time_sample", owner.time_sample)

    def time_sample(*a, **k):
        inside["on"] = True
        times["samples"] = times.get("samples", 0) + 1
        try:
            return sample(*a, **k)
        finally:
            inside["on"] = False
    owner.time_sample = time_sample
    owner.Case.fill = part("fill", owner.Case.fill)
    owner.Case.poison = part("poison", owner.Case.poison)
    owner.Probe.read = part("probe", owner.Probe.read)
    owner.Timed.map_new = part("map_new", owner.Timed.map_new)
    owner.Tenant.ask = part("call", owner.Tenant.ask)
    make_backend, load_lab = owner.backend, owner.load_lab

    def backend(*a, **k):
        be = make_backend(*a, **k)
        be.sync = part("sync", be.sync)
        be.flush_l2 = part("flush_l2", be.flush_l2)
        return be

    def lab_loaded(*a, **k):
        doc, lab, cases = load_lab(*a, **k)
        for n in ("reference", "sample_ok"):
            if n in lab:
                lab[n] = part(n, lab[n])
        return doc, lab, cases
    owner.backend, owner.load_lab = backend, lab_loaded
    chan, tfd = (int(x) for x in os.environ.pop("PROBE_FDS").split(","))
    os.dup2(chan, 3)
    os.close(chan)
    out = os.fdopen(tfd, "w")
    args = [lab, mode, "--file", path, "--seed", SEED]
    args += ["--cases", case] if mode == "check" else ["--case", case]
    sys.argv = ["owner.py"] + args
    t0 = time.perf_counter()
    try:
        owner.main()
    except SystemExit:
        pass
    finally:
        times["total"] = time.perf_counter() - t0 + times["import_owner"]
        out.write(json.dumps(times))
        out.close()


def run_child(mode, lab, path, case):
    r, w = os.pipe()
    with tempfile.TemporaryFile() as chan:
        t0 = time.perf_counter()
        env = dict(os.environ, PROBE_FDS="%d,%d" % (chan.fileno(), w))
        p = subprocess.Popen([sys.executable, "-B", __file__, "--child", mode, lab, path, case],
                             pass_fds=(chan.fileno(), w), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        os.close(w)
        data = os.read(r, 1 << 16)
        os.close(r)
        err = p.communicate()[1]
        wall = time.perf_counter() - t0
        chan.seek(0)
        recs = chan.read().decode("utf-8", "replace")
    try:
        times = json.loads(data)
    except ValueError:
        times = {}
    times["wall"] = wall
    if p.returncode != 0:
        times["rc"] = p.returncode
        times["err"] = err.decode("utf-8", "replace")[-400:]
    times["records"] = recs.count("\n")
    return times


def bare(code):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-B", "-c", code], check=False)
    return time.perf_counter() - t0


def main():
    files = sys.argv[1:] or DEFAULT
    rows = []
    for f in files:
        lab = f.split("/")[0]
        path = os.path.join(ROOT, "tests", "gpu", "solutions-py", f)
        with open(os.path.join(ROOT, "labs", lab, "lab.json")) as fh:
            doc = json.load(fh)
        cases = os.environ.get("PROBE_CASES") or ",".join(c["name"] for c in doc["cases"])
        timed = os.environ.get("PROBE_TIME_CASE") or doc.get("timing_case", "")
        # A fresh HOME per file: the tenant's CuPy cache (HOME/.cupy) starts
        # empty, the timing run finds the check run's kernels, and a second
        # check run shows what a seeded cache would save.
        os.environ["HOME"] = tempfile.mkdtemp(prefix="probe-home-")
        for mode, case in (("check", cases), ("time", timed), ("check", cases)):
            if mode == "time" and not case:
                continue
            t = run_child(mode, lab, path, case)
            rows.append((f, mode if not any(r[0] == f and r[1] == mode for r in rows)
                         else mode + " again", t))
            print(json.dumps({"file": f, "mode": mode, **t}), flush=True)
    print()
    print("| file | mode | " + " | ".join(["import_owner"] + STEPS + ["total", "wall"]) + " |")
    print("|---|---|" + "---|" * (len(STEPS) + 3))
    for f, mode, t in rows:
        cells = ["%.2f" % t[k] if k in t else "" for k in ["import_owner"] + STEPS + ["total", "wall"]]
        print("| %s | %s | %s |" % (f, mode, " | ".join(cells)))
    print()
    print("time_sample's parts (s, summed over its calls; fill and poison only queue "
          "the GPU work that sync then waits for):")
    print()
    print("| file | samples | " + " | ".join(PARTS) + " |")
    print("|---|---|" + "---|" * len(PARTS))
    for f, mode, t in rows:
        if "time_sample" in t:
            print("| %s | %d | %s |" % (f, t.get("samples", 0),
                                        " | ".join("%.3f" % t.get(k, 0.0) for k in PARTS)))
    print()
    print("| bare cost | s |")
    print("|---|---|")
    for name, code in (("python -I (nothing)", "pass"),
                       ("import numpy", "import numpy"),
                       ("import numba.cuda", "from numba import cuda"),
                       ("import cupy", "import cupy"),
                       ("import numba.cuda + cupy", "from numba import cuda; import cupy"),
                       ("cupy + context", "import cupy; cupy.cuda.runtime.free(0)"),
                       ("numba + context", "from numba import cuda; cuda.current_context()"),
                       ("both + both contexts", "from numba import cuda; import cupy; "
                        "cuda.current_context(); cupy.zeros(1)")):
        print("| %s | %.2f |" % (name, min(bare(code) for _ in range(2))), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
    else:
        main()
