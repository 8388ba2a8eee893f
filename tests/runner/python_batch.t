#!/usr/bin/env python3
"""CI (no GPU): a Python timing sample is a batch of calls on distinct
buffers (labs/common/py/owner.py run_time; docs/python.md, "What a Python
timing includes"), so that the owner's round trip is a few percent of a
sample and not 4x a fast kernel. Runs the owner directly in Numba's CUDA
simulator with --batch 4 and checks that the batch cannot be gamed: every
call of every batch gets fresh inputs and its output checked; the clock
stops only after the owner's read of every output of the batch. Prints TAP
lines."""
import json, os, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, ROOT, make_root, need, ok  # noqa: E402
import simlab  # noqa: E402

need()
tmp, root = make_root()


def owner_time(name, src, case="1", batch="4", max_ms="400"):
    """The owner's timing run of src; returns (records, stderr, exit)."""
    path = os.path.join(tmp, name + ".py")
    open(path, "w").write(src)
    chan = os.path.join(tmp, name + ".chan")
    argv = ["/usr/bin/python3", "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"),
            "reduction", "time", "--case", case, "--max-ms", max_ms, "--file", path]
    if batch:
        argv += ["--batch", batch]
    with open(chan, "wb") as f:
        p = subprocess.run(argv, pass_fds=(3,), stdin=subprocess.DEVNULL, capture_output=True,
                           env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", CUGRADE_SEED=simlab.SEED),
                           timeout=300, preexec_fn=lambda: os.dup2(f.fileno(), 3))
    recs = [json.loads(l) for l in open(chan, "rb").read().split(b"\n") if l.startswith(b"{")]
    return recs, p.stderr.decode(errors="replace"), p.returncode


def timing(recs):
    t = [r for r in recs if r.get("type") == "timing"]
    return t[0] if t else {}


def recheck(recs, case="1"):
    r = [r for r in recs if r.get("name") == case + "@recheck"]
    return r[0] if r else {}


# A correct file: four calls a sample, every sample right, the round trip
# measured (before the student's module was loaded) and reported per call.
recs, err, rc = owner_time("good", GOOD)
t = timing(recs)
ok(rc == 0 and t.get("batch") == 4 and t.get("wrong_samples") == 0 and len(t.get("samples_ms", [])) >= 1
   and recheck(recs).get("status") == "ok",
   "a correct file timed in batches of 4: every sample right, the re-check right",
   json.dumps(recs)[:1500] + err[-800:])
ok(t.get("roundtrip_ms", 0) > 0 and t.get("single_ms", 0) > 0,
   "the timing record says the round trip and the warm-up's single call", json.dumps(t)[:600])
HOLD_STEPS = ("round_trip", "load", "first_call", "warm_up", "batch", "samples")
hold = [r for r in recs if r.get("type") == "hold"]
hs = {k: v for k, v in (hold[0] if hold else {}).items() if k != "type"}
ok(len(hold) == 1 and sorted(hs) == sorted(HOLD_STEPS)
   and all(isinstance(v, (int, float)) and v >= 0 for v in hs.values())
   and hs["samples"] > 0 and hs["first_call"] > 0,
   "a hold record takes the hold apart: seconds of its round trip, module load, first call, "
   "warm-up, batch sizing and samples", json.dumps(hold)[:800])

# Every record of the time run is one the judge reads: its parser takes flat
# records only and stops at the first it refuses (a nested "hold_s" in the
# timing record cost every Python job of reduction, matmul and embedding
# its timing on the H200: "the judge accepted no timing samples").
parse, cc_err = simlab.judge_parser(tmp)
with open(os.path.join(tmp, "good.chan"), "rb") as f:
    lines = [ln for ln in f.read().split(b"\n") if ln.startswith(b"{")]
parsed, out = parse(b"\n".join(lines) + b"\n")
ok(not cc_err and len(parsed) == len(lines) and len(lines) == len(recs) and None not in parsed,
   "the judges' parser (labs/common/judge_parse.h) reads every record of the owner's time run",
   cc_err or [json.loads(ln).get("type") for ln, p in zip(lines, parsed) if p is None])

# The work of every call is in the clock: a call that sleeps 30 ms is timed
# at >= 30 ms per call, not 30 ms per batch.
SLOW = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
import time
def reduce_sum(d_in, d_out):
    _real(d_in, d_out)
    time.sleep(0.03)
'''
recs, err, rc = owner_time("slow", SLOW)
t = timing(recs)
ok(t.get("batch") == 4 and t.get("samples_ms") and min(t["samples_ms"]) >= 30,
   "a 30 ms call in a batch of 4 is timed at >= 30 ms per call", json.dumps(t)[:800] + err[-500:])

# Caching across the batch: an answer kept per buffer (by the input's
# pointer) and replayed. Every call of every sample has fresh inputs, so
# every sample is wrong and the re-check record flags the timing.
REPLAY = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
_memo = {}
def reduce_sum(d_in, d_out):
    key = d_in.__cuda_array_interface__["data"][0] if hasattr(d_in, "__cuda_array_interface__") else id(d_in)
    if key not in _memo:
        _real(d_in, d_out)
        _memo[key] = float(d_out[0])
    d_out[0] = _memo[key]
'''
recs, err, rc = owner_time("replay", REPLAY)
t = timing(recs)
ok(t.get("batch") == 4 and t.get("samples_ms") and t["wrong_samples"] == len(t["samples_ms"])
   and recheck(recs).get("error_name") == "python_timing",
   "an answer replayed per buffer across batches: every sample wrong, the timing flagged",
   json.dumps(recs)[:1500] + err[-500:])

# Doing the work of one call in four: only the first call of each batch
# computes (the others leave the poison, or a copy of the first answer).
# Every output of the batch is checked, so every sample is wrong.
ONE_IN_FOUR = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
_n = [0]
_last = [0.0]
def reduce_sum(d_in, d_out):
    if _n[0] % 4 == 0:
        _real(d_in, d_out)
        _last[0] = float(d_out[0])
    else:
        d_out[0] = _last[0]
    _n[0] += 1
'''
recs, err, rc = owner_time("one_in_four", ONE_IN_FOUR)
t = timing(recs)
ok(t.get("samples_ms") and t["wrong_samples"] == len(t["samples_ms"]),
   "one real call in a batch of four: every sample wrong", json.dumps(t)[:800] + err[-500:])

# Returning before the work is done: the first three calls of a batch hand
# their work to a thread that writes the answer only once the owner has
# read the batch's outputs (when the next call on the same output buffer
# begins); only the last call answers in time. The clock stops at the
# owner's read of every output of the batch, so those are the poison:
# every sample wrong. The late write is the thread's own (a host copy of
# the input, summed on the host), not a kernel: the simulator runs one
# kernel at a time, and a thread's kernel beside the main thread's made
# this check fail under load (an AssertionError in the main thread's
# launch) instead of answering it.
LATE = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
import threading
_n = [0]
_due = {}


def _key(a):
    return a.__cuda_array_interface__["data"][0] if hasattr(a, "__cuda_array_interface__") else id(a)


def reduce_sum(d_in, d_out):
    k = _key(d_out)
    if k in _due:
        _due.pop(k).set()
    _n[0] += 1
    if _n[0] % 4 == 0:
        _real(d_in, d_out)
        return
    x, go = d_in.copy_to_host(), threading.Event()
    _due[k] = go

    def later():
        go.wait()
        d_out[0] = np.float32(x.astype(np.float64).sum())
    threading.Thread(target=later, daemon=True).start()
'''
recs, err, rc = owner_time("late", LATE)
t = timing(recs)
ok(t.get("samples_ms") and t["wrong_samples"] == len(t["samples_ms"])
   and recheck(recs).get("error_name") == "python_timing",
   "calls of a batch that finish after it returned: every sample wrong, the timing flagged",
   json.dumps(recs)[:1500] + err[-500:])

# Without --batch the owner chooses: in the simulator a call takes far
# longer than the batch's target, so one call a sample.
recs, err, rc = owner_time("auto", GOOD, batch="")
t = timing(recs)
ok(rc == 0 and t.get("batch") == 1 and t.get("wrong_samples") == 0,
   "the owner's own choice for a slow call: a batch of 1", json.dumps(t)[:600] + err[-500:])

# A batch of 128 sets has more buffer descriptors (two a set) than one
# message may carry (SCM_MAX_FD, 253): the owner sends the new sets in
# "map" messages of at most 240 before the call that names them by id.
ONE = """from numba import cuda


@cuda.jit
def one(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s


def reduce_sum(d_in, d_out):
    one[1, 1](d_in, d_out)   # one simulated thread: 128 calls a batch stay cheap in CI
"""
recs, err, rc = owner_time("wide", ONE, batch="128", max_ms="100")
t = timing(recs)
ok(rc == 0 and t.get("batch") == 128 and t.get("wrong_samples") == 0 and
   recheck(recs).get("status") == "ok",
   "a batch of 128 sets (256 descriptors, past one message's 253) is timed, every sample right",
   json.dumps(t)[:600] + err[-800:])

# A set's mappings are closed only once the owner has freed its buffers:
# a file that keeps every mapping the tenant closes (Buffers.close patched)
# and fails if such a buffer ever changes sees no change, batch or not (the
# batch reuses the warm-up's set; closing and reopening it made the
# owner's next fill of a live buffer look like a freed one reused:
# hostile_stale_ipc.py on a GPU).
STALE = GOOD.replace("def reduce_sum(d_in, d_out):", "def _real(d_in, d_out):") + r'''
import sys
_kept = []
def _keep():
    B = getattr(sys.modules.get("__main__"), "Buffers", None)
    def close(self):
        for m in self.maps:
            try:
                _kept.append((m, bytes(m[:16])))
            except Exception:
                pass
        self.maps = []
    B.close = close
_keep()
def reduce_sum(d_in, d_out):
    for m, snap in _kept:
        if bytes(m[:16]) != snap:
            raise RuntimeError("a buffer whose mapping was closed changed")
    _real(d_in, d_out)
'''
recs, err, rc = owner_time("stale", STALE)
t = timing(recs)
ok(rc == 0 and t.get("batch") == 4 and t.get("wrong_samples") == 0 and recheck(recs).get("status") == "ok",
   "no buffer whose mapping the tenant closed is written again (the batch keeps the warm-up's set)",
   json.dumps(recs)[:1200] + err[-800:])
