#!/usr/bin/env python3
"""CI (no GPU, Debian's CPU-only python3-torch): the profiling lab's
trainers warm PyTorch up with our own code before any student code runs
(labs/profiling/trainer.py warm, asked by lab.py's "runtime" message).

On an H200 the student's first call of train() took 7.1 s of an 11.3 s
timing hold (tests/gpu/py_timing_table.py profiling/fast.py): the CUDA
kernels of a training step loaded, cuBLAS and the caching allocator set
up, all inside the GPU's exclusive hold, since the student's module is
loaded only after the starter's timed rounds. The trainer now trains a
throwaway model of the lab's shape for a few steps when it comes up.
That must change nothing of what is graded: a warmed trainer's call gives
bit for bit the losses and weights of one that was not. Prints TAP lines."""
import json
import os
import subprocess
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)

PROG = r"""
import json, os, sys
sys.path.insert(0, os.path.join(%(root)r, "labs", "profiling"))
import lab                                   # the owner's helpers (not run)
from owner_tenant import Tenant
doc = json.load(open(os.path.join(%(root)r, "labs", "profiling", "lab.json")))
cfg = dict(doc["train"], rows=2048)          # a small data set: a CPU here
out = {}
# A warm-up that fails (here: a batch of 0 rows) is only a saving lost.
t = Tenant([os.path.join(%(root)r, "tests", "gpu", "solutions-py", "profiling", "fast.py")], 300,
           script=os.path.join(%(root)r, "labs", "profiling", "trainer.py"), env={"OMP_NUM_THREADS": "1"})
try:
    up = t.ask({"op": "runtime", "cfg": dict(cfg, batch=0), "warm": True})
    t.ask({"op": "load"})
    ans, secs, lo, w = lab.run_call(t, cfg, 5, 1234, False)
    out["failed"] = {"up": up, "ok": bool(ans and ans.get("ok")), "losses": lo.tolist()}
finally:
    t.close()
for warm in (False, True):
    t = Tenant([os.path.join(%(root)r, "tests", "gpu", "solutions-py", "profiling", "fast.py")], 300,
               script=os.path.join(%(root)r, "labs", "profiling", "trainer.py"),
               env={"OMP_NUM_THREADS": "1"})
    try:
        up = t.ask({"op": "runtime", "cfg": cfg, "warm": warm})
        loaded = t.ask({"op": "load"})
        ans, secs, lo, w = lab.run_call(t, cfg, 5, 1234, False)
        out[str(warm)] = {"up": up, "loaded": loaded, "ok": bool(ans and ans.get("ok")),
                          "losses": lo.tolist(), "weights": [float(x) for x in w[::997]]}
    finally:
        t.close()
# A pool's trainer: "imports" before its job (PyTorch, and torch._dynamo
# where there is one), then the job's runtime, file and call.
import importlib.util
out["has_dynamo"] = importlib.util.find_spec("torch._dynamo") is not None
t = lab.trainer("-")
try:
    imp = t.ask({"op": "imports"})
    up = t.ask({"op": "runtime", "cfg": cfg, "warm": False})
    loaded = t.ask({"op": "load", "path": os.path.join(%(root)r, "tests", "gpu", "solutions-py",
                                                      "profiling", "fast.py")})
    ans, secs, lo, w = lab.run_call(t, cfg, 5, 1234, False)
    out["pooled"] = {"imports": imp, "up": up, "loaded": loaded, "ok": bool(ans and ans.get("ok")),
                     "losses": lo.tolist()}
finally:
    t.close()
print(json.dumps(out))
""" % {"root": ROOT}

p = subprocess.run(["/usr/bin/python3", "-c", PROG], capture_output=True, text=True, timeout=600)
try:
    got = json.loads(p.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    got = {}
cold, warmed = got.get("False") or {}, got.get("True") or {}
ok(cold.get("ok") and warmed.get("ok") and (cold.get("loaded") or {}).get("ok"),
   "a trainer comes up with and without the warm-up, loads fast.py and trains",
   json.dumps(got)[:1500] or p.stderr[-2000:])
ok("warm_s" in (warmed.get("up") or {}) and (warmed["up"]["warm_s"] or 0) > 0 and
   "warm_s" not in (cold.get("up") or {}),
   "asked to warm up, it trains our throwaway model first and says for how long",
   json.dumps({k: v.get("up") for k, v in got.items() if isinstance(v, dict)}))
ok(cold.get("losses") and cold.get("losses") == warmed.get("losses") and
   cold.get("weights") == warmed.get("weights"),
   "and the call's losses and final weights are bit for bit those of a trainer that did not",
   json.dumps(got)[:1500])
bad = got.get("failed") or {}
ok((bad.get("up") or {}).get("ok") is True and (bad.get("up") or {}).get("warm_error") and
   bad.get("ok") and bad.get("losses") == cold.get("losses"),
   "a warm-up that fails is said in the answer, and the trainer comes up and trains as without one",
   json.dumps(bad)[:1500])
pooled = got.get("pooled") or {}
imp = pooled.get("imports") or {}
ok(imp.get("ok") is True and imp.get("torch") and imp.get("dynamo") is got.get("has_dynamo"),
   "a pool's trainer imports PyTorch, and torch._dynamo exactly when this PyTorch has one "
   "(its first optimizer step would import it in the job)", json.dumps(pooled)[:1500])
ok(pooled.get("ok") and (pooled.get("loaded") or {}).get("ok") and
   pooled.get("losses") == cold.get("losses"),
   "then, given its job, it loads fast.py and trains as a trainer started for it",
   json.dumps(pooled)[:1500])
sys.exit(1 if failures() else 0)
