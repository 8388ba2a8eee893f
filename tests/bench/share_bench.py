#!/usr/bin/env python3
"""share_bench.py - what N jobs' GPU processes at once cost on one GPU.

Why (issue 25): in a deadline burst a CUDA reduction's check run took
24-29 s against 0.5 s alone, with the GPU running a kernel only 26% of the
time and the host's CPUs 38% busy. This bench takes the runner, the server
and the sandbox away and runs the lab's trusted programs bare, N workers at
once, to say which of the job's processes slow each other down and how:

  ctx      `prog device`: process start and CUDA context, nothing else
  check    `prog check` over every case of the lab (the check run's work)
  small    `prog check` over the cases that are not the largest one
  judge    `prog check` then the judge over its channel, one after the other
  sanit    `check` beside compute-sanitizer memcheck and racecheck of the
           sanitize case, the three at once (what a job's GPU lane starts)
  drv      tests/bench/ctx_probe (built beside the lab as LABDIR/../ctx_probe):
           the driver's steps timed one by one (cuInit, the context, a
           1 GiB allocation, its free, the context's release)

prog is the lab's `baseline-optimized` (the reference solution linked with
the harness, as labs/build-lab.sh makes it): a correct student's program.
For each scenario and N it prints the batch's wall time, the median and
largest per-process wall time, the CPU seconds the processes used, and the
GPU's utilisation sampled by nvidia-smi every 100 ms.

  python3 tests/bench/share_bench.py LABDIR [LAB]
  env: NS="1 2 4 8 16"  SCENARIOS="ctx check small judge sanit drv"
       CS=compute-sanitizer (path)  GPUS="0" (workers spread over these, in
       turn)  HOLD=1 (a process keeps a context on each GPU, as the runner's
       gpu-hold does; 0: none)  OUT=DIR (the processes' stderr)

A table, not a test.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cases_of(lab):
    with open(os.path.join(ROOT, "labs", lab, "lab.json")) as f:
        spec = json.load(f)
    names = [c["name"] for c in spec["cases"]]
    biggest = max(spec["cases"], key=lambda c: sum(v for v in c["params"].values()
                                                   if isinstance(v, (int, float))))
    return names, [n for n in names if n != biggest["name"]], spec.get("sanitize_case", names[0])


class Sampler(threading.Thread):
    """nvidia-smi's utilisation.gpu and memory.used every 100 ms (the GPUs'
    mean and sum)."""

    def __init__(self, gpus):
        super().__init__(daemon=True)
        self.util, self.mem = [], []
        self.proc = None
        if not shutil.which("nvidia-smi"):
            return
        self.proc = subprocess.Popen(
            ["nvidia-smi", "-i", ",".join(map(str, gpus)), "--query-gpu=utilization.gpu,memory.used",
             "--format=csv,noheader,nounits", "-lms", "100"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self):
        if not self.proc:
            return
        for line in self.proc.stdout:
            try:
                u, m = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.util.append(u)
            self.mem.append(m)

    def stop(self):
        if not self.proc:
            return
        self.proc.terminate()
        self.proc.wait()


def timed(argv, env, log, chan=None, out=None):
    """Run argv with fd 3 on chan (or /dev/null) and stdout on out (or log);
    return (wall s, exit code)."""
    sh = ["sh", "-c", 'c=$1; shift; exec "$@" 3>"$c"', "sh", chan or os.devnull]
    t = time.monotonic()
    rc = subprocess.call(sh + argv, env=env, stdout=out or log, stderr=log)
    return time.monotonic() - t, rc


def worker(scn, i, labdir, cases, env, outdir, res):
    env = dict(env, CUDA_VISIBLE_DEVICES=str(scn["gpus"][i % len(scn["gpus"])]))
    seed = "%016x" % (0x5eed0000 + i)
    prog = os.path.join(labdir, "baseline-optimized")
    log = open(os.path.join(outdir, "%s-%d.log" % (scn["name"], i)), "w")
    chan = os.path.join(outdir, "%s-%d.chan" % (scn["name"], i))
    all_cases, small_cases, san_case = cases
    walls, bad = [], 0
    steps = None
    if scn["name"] == "ctx":
        w, rc = timed([prog, "device"], env, log)
        walls.append(w)
        bad += rc != 0
    elif scn["name"] == "drv":
        with tempfile.TemporaryFile("w+") as out:
            w, rc = timed([os.path.join(os.path.dirname(labdir), "ctx_probe")], env, log, out=out)
            out.seek(0)
            try:
                steps = [float(x) for x in out.read().split()]
            except ValueError:
                steps = None
        walls.append(w)
        bad += rc != 0 or steps is None or len(steps) != 5
    elif scn["name"] in ("check", "small", "judge"):
        cs = ",".join(all_cases if scn["name"] != "small" else small_cases)
        w, rc = timed([prog, "check", "--seed", seed, "--cases", cs], env, log, chan)
        walls.append(w)
        bad += rc != 0
        if scn["name"] == "judge":
            w2, rc2 = timed([os.path.join(labdir, "judge"), "--seed", seed, "--channel", chan,
                             "--cases", cs], env, log)
            walls[0] += w2
            bad += rc2 != 0
    elif scn["name"] == "sanit":
        cs_bin = os.environ.get("CS", "compute-sanitizer")
        runs = [([prog, "check", "--seed", seed, "--cases", ",".join(all_cases)], chan)]
        for tool in ("memcheck", "racecheck"):
            runs.append(([cs_bin, "--tool", tool, "--error-exitcode", "86", "--print-limit", "20",
                          prog, "check", "--seed", seed, "--cases", san_case, "--no-guard"],
                         chan + "." + tool))
        out = [None] * len(runs)

        def one(k):
            out[k] = timed(runs[k][0], env, log, runs[k][1])
        ts = [threading.Thread(target=one, args=(k,)) for k in range(len(runs))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        walls.append(max(w for w, _ in out))
        bad += sum(rc != 0 for _, rc in out)
    log.close()
    res[i] = (walls[0], bad, steps)


def run(scn, n, labdir, cases, env, outdir):
    res = [None] * n
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    smp = Sampler(scn["gpus"])
    smp.start()
    time.sleep(0.3)
    t = time.monotonic()
    ts = [threading.Thread(target=worker, args=(scn, i, labdir, cases, env, outdir, res))
          for i in range(n)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    wall = time.monotonic() - t
    smp.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    per = [w for w, _, _ in res]
    util = statistics.mean(smp.util) if smp.util else float("nan")
    mem = max(smp.mem) / 1024 if smp.mem else float("nan")
    steps = [st for _, _, st in res if st and len(st) == 5]
    med = [statistics.median(col) for col in zip(*steps)] if steps else []
    return {"scenario": scn["name"], "n": n, "wall": wall, "median": statistics.median(per),
            "max": max(per), "cpu": cpu, "util": util, "mem_gb": mem,
            "failed": sum(b for _, b, _ in res), "steps_ms": med}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    labdir = os.path.abspath(sys.argv[1])
    lab = sys.argv[2] if len(sys.argv) > 2 else "reduction"
    cases = cases_of(lab)
    ns = [int(x) for x in os.environ.get("NS", "1 2 4 8 16").split()]
    names = os.environ.get("SCENARIOS", "ctx check small judge sanit drv").split()
    gpus = [int(x) for x in os.environ.get("GPUS", "0").split()]
    outdir = os.environ.get("OUT") or tempfile.mkdtemp(prefix="share-bench.")
    os.makedirs(outdir, exist_ok=True)
    env = dict(os.environ)
    holders = []
    if os.environ.get("HOLD", "1") == "1":
        for g in gpus:
            holders.append(subprocess.Popen([os.path.join(os.path.dirname(labdir), "ctx_probe"),
                                             "hold"], env=dict(env, CUDA_VISIBLE_DEVICES=str(g))))
        time.sleep(2)
    # The full case set holds ~10 GB a process (the 2.5e9 case): past 8 at
    # once the GPU's memory, not its sharing, would be measured.
    cap = {"check": 8, "judge": 8, "sanit": 8}
    rows = []
    print("GPUs %s, holder %s" % (gpus, "on" if holders else "off"))
    print("%-6s %3s %8s %9s %8s %8s %7s %7s %6s  %s" % (
        "scn", "N", "wall s", "median s", "max s", "cpu s", "util %", "mem GB", "fail",
        "drv medians, ms: init ctx alloc free release"))
    for name in names:
        for n in ns:
            if n > cap.get(name, 1 << 30) * len(gpus):
                continue
            r = run({"name": name, "gpus": gpus}, n, labdir, cases, env, outdir)
            rows.append(r)
            print("%-6s %3d %8.2f %9.2f %8.2f %8.1f %7.1f %7.1f %6d  %s" % (
                r["scenario"], r["n"], r["wall"], r["median"], r["max"], r["cpu"], r["util"],
                r["mem_gb"], r["failed"], " ".join("%.0f" % x for x in r["steps_ms"])),
                flush=True)
    for h in holders:
        h.terminate()
        h.wait()
    with open(os.path.join(outdir, "share.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
