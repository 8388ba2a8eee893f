#!/usr/bin/env python3
"""How far the profiling lab's speed-up moves from run to run (a benchmark:
prints a table, asserts nothing; GPU host, no sandbox, no server).

    /opt/torch/.venv/bin/python3 tests/bench/profiling_noise.py
    FILES="solutions-py/profiling/fast.py ..." RUNS=3 STEPS="60 150" LOAD="0 12" python3 ...

Runs the lab's own owner (labs/profiling/lab.py, time mode: the starter's
timed calls, then the student's, as a graded timing run does) RUNS times
for each file (paths under tests/gpu/, or labs/profiling/starter.py: the
starter against itself), for each `time_steps` of STEPS (a copy of the lab
with that value in lab.json) and each LOAD: that many CPU-bound processes
spinning beside it, as a burst's check runs do. The owner runs at nice -10
when root, as a timing run inside the GPU's exclusive hold does
(docs/runner.md, "CPU priorities"); the spinners at 0.

Per run: the speed-up the grade uses (the starter's median ms per step over
the student's), the student's and the starter's medians and the spread of
their samples (max/min), the ratio of the two fastest samples instead of
the medians, and the owner's wall time. Then per file and setting: the
lowest, median and highest speed-up, the number a tier threshold must stay
clear of (docs/log/2026-12-02-profiling-tiers.md).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
FILES = os.environ.get("FILES", "solutions-py/profiling/fast.py solutions-py/profiling/item_only.py "
                       "solutions-py/profiling/syncs_only.py labs/profiling/starter.py").split()
RUNS = int(os.environ.get("RUNS", "3"))
STEPS = [int(x) for x in os.environ.get("STEPS", "60").split()]
LOAD = [int(x) for x in os.environ.get("LOAD", "0").split()]
# PIN="-" (unpinned) and/or CPU lists such as "2,3": the owner and both
# trainers on those CPUs only, as a timing run could be.
PIN = os.environ.get("PIN", "-").split()
SEED = "0123456789abcdef0123456789abcdef"
SPIN = "while True:\n    pass\n"


def lab_copy(tmp, steps):
    """labs/profiling and labs/common in TMP/s<steps>/labs, time_steps set."""
    dst = os.path.join(tmp, "s%d" % steps, "labs")
    if not os.path.isdir(dst):
        for d in ("profiling", "common"):
            shutil.copytree(os.path.join(ROOT, "labs", d), os.path.join(dst, d),
                            ignore=shutil.ignore_patterns("*.o", "*.a", "build"))
        p = os.path.join(dst, "profiling", "lab.json")
        with open(p) as f:
            doc = json.load(f)
        doc["train"]["time_steps"] = steps
        with open(p, "w") as f:
            json.dump(doc, f)
    return os.path.join(dst, "profiling", "lab.py")


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    out = []
    while data:
        line, _, data = data.partition(b"\n")
        if not line.strip():
            continue
        r = json.loads(line)
        out.append(r)
        data = data[int(r.get("bytes", 0)):]
    return out


def cpus(pin):
    return None if pin == "-" else {int(c) for c in pin.split(",")}


def one(script, path, tmp, pin="-"):
    chan = os.path.join(tmp, "chan")
    t0 = time.perf_counter()
    with open(chan, "wb") as f:
        p = subprocess.run([sys.executable, "-I", "-B", script, "profiling", "time", "--case", "results",
                            "--max-ms", "3000", "--file", path],
                           pass_fds=(3,), stdin=subprocess.DEVNULL, capture_output=True, timeout=300,
                           env=dict(os.environ, CUGRADE_SEED=SEED),
                           preexec_fn=lambda: (os.dup2(f.fileno(), 3),
                                               os.nice(-10) if os.geteuid() == 0 else None,
                                               os.sched_setaffinity(0, cpus(pin)) if cpus(pin) else None))
    wall = time.perf_counter() - t0
    t = [r for r in records(chan) if r.get("type") == "timing"]
    if not t:
        return {"error": p.stderr.decode(errors="replace")[-300:].replace("\n", " ")}
    t = t[0]
    s, b = t["samples_ms"], t["baseline_samples_ms"]
    return {"ratio": t["baseline_ms"] / t["median_ms"], "ratio_min": min(b) / min(s),
            "student": t["median_ms"], "starter": t["baseline_ms"], "n": len(s),
            "spread": max(s) / min(s), "bspread": max(b) / min(b), "wall": wall}


def main():
    tmp = tempfile.mkdtemp(prefix="cugrade-pnoise-")
    rows = []
    print("%-36s %5s %4s %5s %3s %7s %7s %9s %9s %6s %7s %7s %6s" % (
        "file", "steps", "load", "pin", "#", "speedup", "by min", "student", "starter", "n", "spread",
        "bspread", "wall"))
    try:
        for load in LOAD:
            spin = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(load)]
            try:
                for steps, pin in [(s, p) for s in STEPS for p in PIN]:
                    script = lab_copy(tmp, steps)
                    for f in FILES:
                        path = os.path.join(ROOT, f if f.startswith("labs/") else os.path.join("tests/gpu", f))
                        for k in range(RUNS):
                            r = one(script, path, tmp, pin)
                            r.update(file=f, steps=steps, load=load, pin=pin)
                            rows.append(r)
                            if "error" in r:
                                print("%-36s %5d %4d %5s %3d error: %s" % (f, steps, load, pin, k + 1, r["error"]))
                            else:
                                print("%-36s %5d %4d %5s %3d %7.3f %7.3f %9.3f %9.3f %6d %7.2f %7.2f %6.1f" % (
                                    f, steps, load, pin, k + 1, r["ratio"], r["ratio_min"], r["student"],
                                    r["starter"], r["n"], r["spread"], r["bspread"], r["wall"]))
                            sys.stdout.flush()
            finally:
                for p in spin:
                    p.kill()
                    p.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nspeed-up per file and setting: lowest / median / highest (by the fastest samples)")
    for load, steps, pin in [(lo, s, p) for lo in LOAD for s in STEPS for p in PIN]:
        for f in FILES:
            xs = [r for r in rows if r["file"] == f and r["steps"] == steps and r["load"] == load
                  and r["pin"] == pin and "ratio" in r]
            if xs:
                v = sorted(r["ratio"] for r in xs)
                m = sorted(r["ratio_min"] for r in xs)
                print("  %-36s steps %4d load %3d pin %s: %.3f / %.3f / %.3f  (%.3f / %.3f / %.3f)" % (
                    f, steps, load, pin, v[0], statistics.median(v), v[-1], m[0], statistics.median(m), m[-1]))
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "profiling_noise.json"), "w") as fo:
            json.dump(rows, fo, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
