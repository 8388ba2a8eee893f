#!/usr/bin/env python3
"""CI (no GPU): a baseline that could not be timed is our failure, never
the student's lost points (docs/runner.md, "Baselines").

The fake lab's naive reference is rebuilt to crash from its third call:
its check run (two calls, where the lab's limits come from) passes, its
timing batch dies. A correct file timed against it used to be graded with
its "speed vs naive" line "not available (a baseline is missing)" and 0 of
its 10 points (on a loaded CI machine the real naive baseline did that
too, killed at its 12 s limit: tests/deploy/slurm.t and
runner/profile_after.t, 25/35; that limit is now at least 120 s,
runner/timing/baseline.c). It must be a system_error that names the baseline,
which the server retries; the same file with the baseline back is graded
with every point.
Prints TAP."""
import json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import NO_HOLD, grade as run_grade  # noqa: E402  (a starved compile retried)
import tree  # noqa: E402  (the fake lab laid out as a course tree)

require_nvcc_root()

GOOD = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'
# The naive reference of build-lab.sh, crashing from its third call.
HANG = ('static int calls;\nextern "C" void fill(float* o, int n) { if (++calls > 2) '
        '__builtin_trap(); for (int i = 0; i < n; i++) o[i] = 2.0f * i; }')


def grade(root, cache, work, path):
    d, log, _ = run_grade(["--root", root, "--lab", "fakelab", "--file", path, "--cache", cache,
                           "--work", work, "--arch", "sm_90", "--seed", "0123456789abcdef0123456789abcdef"],
                          env=NO_HOLD)
    return d, log


def lab_tree(tmp, naive_hangs):
    root = tree.lay_out(os.path.join(tmp, "root"))
    if naive_hangs:
        b = os.path.join(root, "labs", "build-lab.sh")
        lines = open(b).read().split("\n")
        lines = ["cat > \"$OUT/naive.cu\" <<'NAIVE'\n%s\nNAIVE" % HANG
                 if "naive.cu\"" in l and l.startswith("printf") else l for l in lines]
        open(b, "w").write("\n".join(lines))
    return root


tmp = tempfile.mkdtemp(prefix="cugrade-bfail-")
os.chmod(tmp, 0o755)
try:
    src = os.path.join(tmp, "good.cu")
    open(src, "w").write(GOOD)
    for hangs in (True, False):
        d = os.path.join(tmp, "hang" if hangs else "plain")
        os.makedirs(d)
        root, cache = lab_tree(d, hangs), os.path.join(d, "cache")
        os.makedirs(cache)
        r, log = grade(root, cache, os.path.join(d, "work"), src)
        res = r.get("result") or {}
        text = json.dumps(res)
        if hangs:
            ok(r.get("status") == "system_error" and "naive" in text and "baseline" in text,
               "a naive baseline that dies makes the job a system_error naming it "
               "(retried by the server), not a graded result without its speed points",
               json.dumps({"status": r.get("status"), "score": res.get("score"),
                           "message": res.get("message")}) + "\n" + log)
            ok("not available" not in text,
               "no speed line says 'not available (a baseline is missing)' to the student",
               text[:1500])
        else:
            ok(r.get("status") == "graded" and res.get("score") == res.get("max_score") and
               res.get("score", 0) > 0,
               "with the naive baseline working the same file is graded with every point (%s/%s)"
               % (res.get("score"), res.get("max_score")), log)
finally:
    subprocess.run(["rm", "-rf", tmp])

print("1..3")
sys.exit(1 if failures() else 0)
