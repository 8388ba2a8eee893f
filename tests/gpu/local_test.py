#!/usr/bin/env python3
"""On the GPU host: `cugrade test` of every tests/gpu/solutions/*/*.cu and
tests/gpu/solutions-py/*/*.py through the real server (repo labs and
labs/bundle.json), on this GPU, with the python3 that has NumPy, Numba and
CuPy (the one running this script; the client runs local.py with it).

    python3 tests/gpu/local_test.py [-j N] [FILTER]   (FILTER: a substring of the path)

Prints one line per file: the file, the grader's verdict from its `expect:`
line, the local status and per-case results, the wall time of the local
run, and "ok" or "DISAGREE". A disagreement is: a compile_error or rejected
on one side only; or expect correctness=pass while a public case failed
here. (A file that fails only hidden or timed cases on the grader passes
here: that is no disagreement.) Compare the wall times with e2e.py's
submit-to-verdict times. Exit status 1 on any disagreement. A local run
that printed no JSON shows its exit status and the last lines of its
stderr and stdout. -j N runs N files at once (each its own `cugrade test`;
their wall times then include sharing the GPU and the CPUs).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "client"))
from client_test import Server, Cli  # noqa: E402


def expect(path):
    with open(path) as f:
        head = f.read(2000)
    st = re.search(r"expect:.*?status=(\w+)", head)
    co = re.search(r"expect:.*?correctness=(\w+)", head)
    return (st.group(1) if st else None), (co.group(1) if co else None)


def files(flt):
    """(top, lab, name, path) of every solution file whose path has flt."""
    for top in ("solutions", "solutions-py"):
        base = os.path.join(ROOT, "tests", "gpu", top)
        for lab in sorted(os.listdir(base)):
            for name in sorted(os.listdir(os.path.join(base, lab))):
                path = os.path.join(base, lab, name)
                if name.endswith((".cu", ".py")) and flt in path:
                    yield top, lab, name, path


def local_run(cli, lab, path):
    """The local run's JSON document (or one saying why there is none) and
    its wall seconds."""
    t0 = time.monotonic()
    r = cli.run("test", lab, path, "--json", timeout=1800)
    wall = time.monotonic() - t0
    try:
        return json.loads(r.stdout), wall
    except ValueError:
        tail = (r.stderr.strip().splitlines()[-6:] + ["stdout:"] + r.stdout.strip().splitlines()[-6:])
        return {"status": "error (exit %s)" % r.returncode, "why": tail}, wall


def row(top, lab, name, path, d, wall):
    """The file's line and whether the two sides agree."""
    status, corr = expect(path)
    cases = d.get("cases") or {}
    failed = [n for n, c in cases.items() if not c.get("passed")]
    verdict = d.get("status") in ("compile_error", "rejected")
    agree = (verdict == (status in ("compile_error", "rejected")) and
             not (corr == "pass" and failed) and not str(d.get("status")).startswith("error"))
    line = "%-48s %-28s %-14s %-40s %7.1f s  %s" % (
        "%s/%s/%s" % (top, lab, name), "%s %s" % (status, corr or ""),
        d.get("status"), "failed: " + ",".join(failed) if failed else
        "%d passed" % len(cases), wall, "ok" if agree else "DISAGREE")
    for w in d.get("why") or []:
        line += "\n#     " + w
    return line, agree


def main():
    args = sys.argv[1:]
    jobs = 1
    if args[:1] == ["-j"]:
        jobs, args = int(args[1]), args[2:]
    flt = args[0] if args else ""
    s = Server(labs="repo", start=False)
    shutil.copytree(os.path.join(ROOT, "labs", "common"), os.path.join(s.labs_dir, "common"),
                    dirs_exist_ok=True)
    shutil.copy(os.path.join(ROOT, "labs", "bundle.json"), s.labs_dir)
    s.init()
    s.start()
    s.add_users(s.DEFAULT_USERS)
    cli = Cli(python=sys.executable)
    cli.login(s, "alice_q7")
    smi = shutil.which("nvidia-smi")
    gpu = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if smi else ""
    print("# GPU: %s; python: %s; %d at once" % (gpu or "none", sys.executable, jobs), flush=True)
    todo = list(files(flt))
    bad = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = [pool.submit(local_run, cli, lab, path) for _, lab, _, path in todo]
        for (top, lab, name, path), fut in zip(todo, runs):
            line, agree = row(top, lab, name, path, *fut.result())
            bad += not agree
            print(line, flush=True)
    cli.cleanup()
    s.stop()
    print("# %d disagreement%s" % (bad, "" if bad == 1 else "s"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
