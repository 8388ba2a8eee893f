#!/usr/bin/env python3
"""The front pass's cost on this host (a benchmark: prints a table, asserts
nothing). docs/runner.md "Two lanes": in the deadline burst the runner
claims ~19 jobs/s, one per front pass ended, 16 at a time; this says what
one pass costs here and whether anything makes it cheaper.

    sh tests/bench/front_bench.sh        (dist/ when built, like the others)
    env: N (passes per row, default 8), P (passes at once in the parallel
         rows, default the host's cores), FILES (default matmul/fast.cu and
         matmul/syntax_error.cu of tests/gpu/solutions)

Rows, per file:
  - one at a time: the median of `phases.front` of `cugrade-runner grade
    --stop-after compile` (the sandbox, nvcc --dryrun, the preprocessor,
    cudafe++), and the CPU seconds of the whole grade process tree;
  - P at once, twice: passes per second over the batch's wall time.
Plus the host: cores, CPU model, transparent huge pages, autogroup, and
the two programs alone outside the sandbox (sequential, median wall and
CPU).

Under load (LOAD, default twice the cores; 0 skips): LOAD full compiles of
matmul/fast.cu (`--stop-after compile`, no front pass), each restarted as
it ends, stand in for the CPU lane on deadline night while the front
passes of the last file run one at a time: median and p90 of
`phases.front`, with the priorities (full compile at nice 10, front pass
at -5: the defaults) and without (both 0). Where the priorities take
effect the first is the shorter.
"""
import json, os, re, resource, statistics, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.environ.get("CUGRADE_RUNNER_BIN", os.path.join(ROOT, "build/cugrade-runner"))
N = int(os.environ.get("N", "8"))
P = int(os.environ.get("P", str(os.cpu_count() or 1)))
FILES = os.environ.get("FILES", "matmul/fast.cu matmul/syntax_error.cu").split()


def bin_env(extra):
    env = dict(os.environ, CUGRADE_NO_GPU="1", **extra)
    for kv in filter(None, os.environ.get("CUGRADE_BIN_ENV", "").split(";")):
        k, v = kv.split("=", 1)
        env[k] = v
    return env


def grade_cmd(tmp, lab, path, i, stop="front"):
    return [RUNNER, "grade", "--lab", lab, "--file", path, "--stop-after", stop, "--root", ROOT,
            "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, f"work-{i}"),
            "--arch", "sm_90"]


def front_of(out):
    try:
        return json.loads(out)["result"]["cugrade"]["phases"]["front"]
    except (ValueError, KeyError, TypeError):
        return None


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sequential(tmp, lab, path, env):
    fronts, cpus = [], []
    for i in range(N):
        c0 = cpu_children()
        p = subprocess.run(grade_cmd(tmp, lab, path, i), capture_output=True, text=True, env=env)
        cpus.append(cpu_children() - c0)
        f = front_of(p.stdout)
        if f is not None:
            fronts.append(f)
    return fronts, cpus


def parallel(tmp, lab, path, env):
    rates = []
    for _ in range(2):
        t0 = time.time()
        ps = [subprocess.Popen(grade_cmd(tmp, lab, path, i), stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env=env) for i in range(P)]
        ok = sum(1 for p in ps if front_of(p.communicate()[0]) is not None)
        rates.append(ok / (time.time() - t0))
    return rates


def outside(tmp, path):
    """The two steps alone, as nvcc --dryrun gives them, outside the sandbox."""
    d = tempfile.mkdtemp(dir=tmp)
    src = os.path.join(d, os.path.basename(path))
    open(src, "w").write(open(path).read())
    dry = subprocess.run(["nvcc", "-c", "-arch=sm_90", os.path.basename(src), "-o", "k.o", "--dryrun"],
                         capture_output=True, text=True, cwd=d).stderr
    steps = []
    for line in dry.splitlines():
        if line.startswith("#$ ") and not re.match(r"#\$ [A-Za-z_][A-Za-z_0-9]*=", line):
            steps.append(line[3:])
            if line[3:].startswith("cudafe++ "):
                break
    script = os.path.join(d, "front.sh")
    open(script, "w").write("\n".join(steps) + "\n")
    walls, cpus = [], []
    for _ in range(N):
        c0, t0 = cpu_children(), time.time()
        subprocess.run(["sh", script], cwd=d, capture_output=True)
        walls.append(time.time() - t0)
        cpus.append(cpu_children() - c0)
    return walls, cpus


def under_load(tmp, lab, path, nice_env):
    """Front passes of path one at a time while LOAD full compiles run."""
    load = int(os.environ.get("LOAD", str(2 * (os.cpu_count() or 1))))
    if load <= 0:
        return None
    sol = os.path.join(ROOT, "tests/gpu/solutions")
    stop = threading.Event()
    benv = bin_env(dict(nice_env, CUGRADE_FRONT_SECONDS="0"))

    def churn(k):
        while not stop.is_set():
            subprocess.run(grade_cmd(tmp, "matmul", os.path.join(sol, "matmul/fast.cu"), f"load-{k}",
                                     stop="compile"), capture_output=True, env=benv)

    ts = [threading.Thread(target=churn, args=(k,)) for k in range(load)]
    for t in ts:
        t.start()
    time.sleep(3)  # every load compile under way
    fronts = []
    env = bin_env(nice_env)
    for i in range(N):
        p = subprocess.run(grade_cmd(tmp, lab, path, 100 + i), capture_output=True, text=True, env=env)
        f = front_of(p.stdout)
        if f is not None:
            fronts.append(f)
    stop.set()
    for t in ts:
        t.join()
    return load, fronts


def med(x):
    return f"{statistics.median(x):.3f}" if x else "n/a"


def main():
    tmp = tempfile.mkdtemp(prefix="cugrade-front-bench-")
    os.chmod(tmp, 0o755)
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    try:
        thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    except OSError:
        thp = "?"
    try:
        ag = {"1": "on", "0": "off"}.get(open("/proc/sys/kernel/sched_autogroup_enabled").read().strip(), "?")
    except OSError:
        ag = "absent"
    rows = [("host", f"{os.cpu_count()} cores, {model}, THP {thp}, autogroup {ag}")]
    sol = os.path.join(ROOT, "tests/gpu/solutions")
    # The lab is built by the first grade (cached after).
    subprocess.run(grade_cmd(tmp, "matmul", os.path.join(sol, FILES[0]), 0), capture_output=True,
                   env=bin_env({}))
    for f in FILES:
        lab, path = f.split("/")[0], os.path.join(sol, f)
        w, c = outside(tmp, path)
        rows.append((f"{f}: preprocessor + cudafe++ outside the sandbox, wall / CPU s", f"{med(w)} / {med(c)}"))
        env = bin_env({})
        fr, cpu = sequential(tmp, lab, path, env)
        rows.append((f"{f}: front one at a time, median / max s; grade CPU s",
                     f"{med(fr)} / {max(fr) if fr else float('nan'):.3f}; {med(cpu)} (n={len(fr)})"))
        r = parallel(tmp, lab, path, env)
        rows.append((f"{f}: {P} at once, passes/s", " / ".join(f"{x:.1f}" for x in r)))
    last = FILES[-1]
    lab, path = last.split("/")[0], os.path.join(sol, last)
    for label, ne in (("priorities (compile 10, front -5)", {}),
                      ("the full compile at 0 (front -5)", {"CUGRADE_COMPILE_NICE": "0"})):
        r = under_load(tmp, lab, path, ne)
        if r:
            load, fr = r
            p90 = sorted(fr)[int(0.9 * (len(fr) - 1))] if fr else float("nan")
            rows.append((f"{last} under {load} full compiles, {label}: front median / p90 s",
                         f"{med(fr)} / {p90:.3f} (n={len(fr)})"))
    w = max(len(a) for a, _ in rows)
    print("\nfront_bench")
    for a, b in rows:
        print(f"{a:<{w}} | {b}")
    subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    sys.exit(main())
