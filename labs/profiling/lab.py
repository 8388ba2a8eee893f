"""lab.py - the trusted owner of a profiling-lab run (docs/labs.md, "The
profiling lab"; the trust model is docs/python.md's, as far as it applies).

    python3 -I -B lab.py profiling check --cases results,syncs,copies --file F --seed-fd 5
    python3 -I -B lab.py profiling time --case results [--max-ms N] [--gate] --file F --seed-fd 5
    python3 -I -B lab.py profiling check --pool
    python3 -I -B lab.py profiling time --case results [--max-ms N] --gate --pool
    (by hand: CUGRADE_SEED=HEX or --seed HEX instead of --seed-fd)

The runner starts it in place of labs/common/py/owner.py (lab.json
"python": {"owner": "lab.py"}; runner/grade/python.c), with the same command line
and the same channel on fd 3, whose helpers it reuses. What differs: the
student's code is a whole training loop, not a kernel, and the baseline is
the starter itself, run by us in the same sandbox. Two processes
(trainer.py) run train(): first the starter's (trusted: no student code has
run in this sandbox yet), then the student's. This process generates the
data and the initial weights from the seed (NumPy), hands them over in a
memfd, reads the losses and final weights back from another one it
poisoned, keeps the clock and writes every record.

  check: a warm-up call in each, then one profiled call of check_steps on
         the run's data; three case records, judged here (the reference is
         the starter's result, which only this process holds):
           results  the student's losses and final weights within rtol of
                    the starter's
           syncs    host-device synchronisations per step (torch.profiler)
           copies   host<->device copies per step (torch.profiler)
  --pool: a warm run of the runner's pool (docs/python.md, "The warm
         pool"): both trainers started and PyTorch imported in them (no
         device, no CUDA context, the student's trainer with no file), then
         'r' on the gate and the job's line ({file, cases, seed}) awaited
         there, as owner.py --pool does; then the run goes on as above.
  time:  the starter's calls first, then the student's, each on fresh data
         from os.urandom (so nothing can be computed before the clock
         starts), each call's time from our send to our own read of its
         outputs, divided by its steps; a timing record with the student's
         per-step samples, the starter's median as "baseline_ms", and the
         re-check: every timed call's results within rtol of the starter's
         on the same data.
"""
import json
import math
import mmap
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common", "py"))
import owner as common  # noqa: E402  (the channel, non-dumpable, gen's seed parsing)
from owner_tenant import Tenant  # noqa: E402

import numpy as np  # noqa: E402

CALL_LIMIT_S = 600
SYNC_API = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
            "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize")
HOST_DEVICE_COPY = ("Memcpy HtoD", "Memcpy DtoH")


# ------------------------------------------------------------------ data

def layout(cfg, steps):
    """Offsets of the input and output buffers (both sides compute views
    from this). Returns (layout, in_bytes, out_bytes)."""
    n, d, h, c, b = cfg["rows"], cfg["features"], cfg["hidden"], cfg["classes"], cfg["batch"]
    shapes_in = [("X", "float32", [n, d]), ("Y", "int64", [n]), ("order", "int64", [steps, b])]
    params = [("p0", [h, d]), ("p1", [h]), ("p2", [h, h]), ("p3", [h]), ("p4", [c, h]),
              ("p5", [c])]
    shapes_in += [(k, "float32", s) for k, s in params]
    shapes_out = [("losses", "float64", [steps])] + [(k, "float32", s) for k, s in params]

    def place(shapes):
        off, out = 0, {}
        for name, dt, shape in shapes:
            out[name] = [off, dt, shape]
            off += int(np.prod(shape)) * np.dtype(dt).itemsize
            off = (off + 63) // 64 * 64
        return out, off
    lin, nin = place(shapes_in)
    lout, nout = place(shapes_out)
    return {"in": lin, "out": lout}, nin, nout


def make_inputs(cfg, steps, seed):
    """The data set, the batch order and the initial weights of one call,
    from seed (a 64-bit integer): {name: array}."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n, d, h, c, b = cfg["rows"], cfg["features"], cfg["hidden"], cfg["classes"], cfg["batch"]
    X = rng.standard_normal((n, d), dtype=np.float32)
    W = rng.standard_normal((d, c), dtype=np.float32)
    noise = rng.standard_normal((n, c), dtype=np.float32)
    Y = np.argmax(X @ W + 2.0 * noise, axis=1).astype(np.int64)
    order = rng.integers(0, n, size=(steps, b), dtype=np.int64)
    out = {"X": X, "Y": Y, "order": order}
    for k, (fo, fi) in enumerate([(h, d), (h, h), (c, h)]):
        bound = 1.0 / math.sqrt(fi)
        out["p%d" % (2 * k)] = rng.uniform(-bound, bound, (fo, fi)).astype(np.float32)
        out["p%d" % (2 * k + 1)] = rng.uniform(-bound, bound, (fo,)).astype(np.float32)
    return out


def memfd(nbytes):
    fd = os.memfd_create("cugrade-profiling", os.MFD_CLOEXEC)
    os.ftruncate(fd, nbytes)
    return fd


def view(mm, spec):
    off, dt, shape = spec
    return np.frombuffer(mm, dtype=dt, count=int(np.prod(shape)), offset=off).reshape(shape)


class Call:
    """One call's buffers: inputs written, outputs poisoned (NaN)."""

    def __init__(self, cfg, steps, seed):
        self.steps = steps
        self.layout, self.nin, self.nout = layout(cfg, steps)
        self.fin, self.fout = memfd(self.nin), memfd(self.nout)
        mi = mmap.mmap(self.fin, self.nin)
        for name, arr in make_inputs(cfg, steps, seed).items():
            view(mi, self.layout["in"][name])[...] = arr
        mi.close()
        self.mo = mmap.mmap(self.fout, self.nout)
        self.mo[:] = np.full(self.nout // 8, np.nan).tobytes()

    def message(self, profile):
        return {"op": "call", "steps": self.steps, "profile": profile, "layout": self.layout,
                "in_bytes": self.nin, "out_bytes": self.nout}

    def results(self):
        """(losses, weights as one vector): our copies of what is there now."""
        lo = view(self.mo, self.layout["out"]["losses"]).copy()
        w = np.concatenate([view(self.mo, self.layout["out"]["p%d" % k]).reshape(-1)
                            for k in range(6)]).astype(np.float64)
        return lo, w

    def close(self):
        self.mo.close()
        os.close(self.fin)
        os.close(self.fout)


# ------------------------------------------------------------------ processes

def trainer(file):
    """A trainer.py process running FILE's train() ("-": the file is named
    by "load"), and our socket to it: started as the other labs' tenant is
    (owner_tenant.Tenant)."""
    # A bounded CPU thread pool: the sandbox's pids limit counts threads
    # (a 128-core host would give PyTorch 128 of them); both trainers get
    # the same, so the results and the comparison are unaffected. The
    # sandbox's uid has no passwd entry: getpass.getuser(), which PyTorch
    # 2.x calls for its cache directories when the optimizer first steps,
    # would raise KeyError (seen on the H100 with 2.11).
    return Tenant([file], CALL_LIMIT_S, script=os.path.join(HERE, "trainer.py"),
                  env={"OMP_NUM_THREADS": "4", "USER": "student", "LOGNAME": "student"})


def up(file, cfg, t=None):
    """A trainer for FILE (or t, a warm one: warm_trainers), asked to bring
    PyTorch and its device up ("runtime": our code only; FILE is not
    imported). ready() reads its answer, so two trainers' start-ups can
    overlap."""
    t = t or trainer(file)
    t.send({"op": "runtime", "cfg": cfg, "warm": True})
    return t


def ready(t, student):
    """The answer to up()'s "runtime": PyTorch up on the device. Its
    failures are ours (die) for either trainer: no student code has run in
    it. The starter's answer makes the device record."""
    ans = t.answer()
    if ans is None or not ans.get("ok"):
        t.close()
        common.die("PyTorch did not start in the sandbox: %s"
                   % (common.text(ans.get("error"), 300) if ans else "the process died"))
    if ans.get("device") != "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        # The CPU stands in for the GPU only where the runner says there is
        # none (its simulator flag, as owner.py's backend reads it). On a GPU
        # host a run that sees no GPU is ours, never a grade timed on the CPU.
        t.close()
        common.die("PyTorch found no GPU in the sandbox of a GPU host (device %s)"
                   % common.text(ans.get("device"), 10))
    if not student:
        common.send_record({"type": "device", "name": common.text(ans.get("name"), 100),
                            "device": common.text(ans.get("device"), 10),
                            "torch": common.text(ans.get("torch"), 40), "copy_gbs": 0})
    return ans


def load(t, student, path=None):
    """Import the trainer's FILE (path: a warm trainer's, named now) and
    find train(): the starter's failure is ours (die); the student's is a
    compile error (exit 5)."""
    if student:
        common.STUDENT_RAN = True
    ans = t.ask({"op": "load", "path": path} if path else {"op": "load"})
    if ans is None or not ans.get("ok"):
        if not student:
            common.die("the starter did not load: %s" % (ans or {}).get("error"))
        common.compile_error("your module could not be loaded: %s" % t.death() if ans is None
                             else common.text(ans.get("error"), 300) + "\n" +
                             common.text(ans.get("where"), 3000))


def start(file, cfg, student, t=None):
    """A trainer with PyTorch up and FILE loaded (t: a warm one)."""
    t = up(file, cfg, t)
    info = ready(t, student)
    load(t, student)
    return t, info


def warm_trainers(starter):
    """--pool: the student's trainer (no file yet) and the starter's, each
    asked to import PyTorch ("imports": no device, no CUDA context, so no
    GPU memory is taken before the job holds its reservation; nothing of
    any student's is loaded). Returns (student's, starter's). A failure is
    ours (die): the runner replaces a warm run that ended."""
    ts = (trainer("-"), trainer(starter))
    for t in ts:
        t.send({"op": "imports"})
    for t in ts:
        ans = t.answer()
        if ans is None or not ans.get("ok"):
            for x in ts:
                x.close()
            common.die("PyTorch did not import in the sandbox: %s"
                       % (common.text(ans.get("error"), 300) if ans else "the process died"))
    return ts


def run_call(t, cfg, steps, seed, profile):
    """One call of train(). Returns (answer, seconds, losses, weights); the
    time runs from our send to our own read of the outputs."""
    c = Call(cfg, steps, seed)
    try:
        t0 = time.perf_counter()
        ans = t.ask(c.message(profile), (c.fin, c.fout))
        lo, w = c.results()
        secs = time.perf_counter() - t0
    finally:
        c.close()
    return ans, secs, lo, w


# ------------------------------------------------------------------ judging

def compare(cfg, ref, got):
    """(passed, worst relative difference, message) of the student's losses
    and weights against the starter's on the same data."""
    (rl, rw), (sl, sw) = ref, got
    if not np.all(np.isfinite(sl)) or not np.all(np.isfinite(sw)):
        bad = int(np.sum(~np.isfinite(sl)))
        return False, None, ("%d of your %d losses (or some final weights) are not finite "
                             "numbers: train() must return the loss of every step and leave "
                             "the trained weights in the model" % (bad, len(sl)))
    dl = np.abs(sl - rl) / np.maximum(np.abs(rl), 1e-6)
    dw = float(np.linalg.norm(sw - rw) / max(np.linalg.norm(rw), 1e-12))
    worst = max(float(dl.max()), dw)
    if worst <= cfg["rtol"]:
        return True, worst, ("same results as the starter: losses within %.2g and final "
                             "weights within %.2g (relative; %.0e allowed)"
                             % (float(dl.max()), dw, cfg["rtol"]))
    k = int(np.argmax(dl))
    return False, worst, ("your results differ from the starter's: the loss of step %d is "
                          "%.6g where the starter's is %.6g, and the final weights differ by "
                          "%.3g (relative norm; at most %.0e allowed). Same batches in the "
                          "same order, same model, same optimizer: the speed-ups of this lab "
                          "do not change the arithmetic (no mixed precision, no TF32, no "
                          "skipped or reordered steps)." % (k, sl[k], rl[k], dw, cfg["rtol"]))


def classify(counts):
    """(syncs, copies, sources) of one profiled call's event counts.
    On a GPU: syncs are the CUDA runtime's synchronize calls (.item(),
    .cpu(), printing a tensor and torch.cuda.synchronize() each make one),
    copies the device's host<->device memcpys (the runtime's cudaMemcpy*
    calls when the trace has no device side). On a host without a GPU (CI's
    stand-in, where nothing crosses a bus): syncs are the scalar reads that
    would be syncs on a GPU (aten::_local_scalar_dense), copies the
    .to()/.cpu()/.float() calls made by train()'s own Python code (and
    the code it calls: printing a tensor makes some)."""
    cpu, top, dev = counts.get("cpu", {}), counts.get("top", {}), counts.get("dev", {})

    def num(d, k):
        v = d.get(k, 0) if isinstance(d, dict) else 0
        return v if isinstance(v, int) and v >= 0 else 0
    gpu = any(k.startswith("cuda") for k in cpu) or bool(dev)
    if gpu:
        syncs = sum(num(cpu, k) for k in SYNC_API)
        if any(k.startswith("Memcpy") for k in dev):
            copies = sum(num(dev, k) for k in dev if k.startswith(HOST_DEVICE_COPY))
        else:
            copies = sum(num(cpu, k) for k in cpu if k.startswith("cudaMemcpy"))
    else:
        syncs = num(cpu, "aten::_local_scalar_dense")
        copies = num(top, "aten::to")
    src = {k: num(cpu, k) for k in SYNC_API + ("aten::item", "aten::_local_scalar_dense",
                                               "cudaMemcpyAsync", "cudaMemcpy") if num(cpu, k)}
    if num(top, "aten::to"):
        src["aten::to (called by train)"] = num(top, "aten::to")
    src.update({k: num(dev, k) for k in dev if k.startswith("Memcpy")})
    return syncs, copies, src


def count_case(name, what, mine, base, steps, limit, src):
    per, bper = mine / steps, base / steps
    seen = ", ".join("%s %d" % kv for kv in sorted(src.items(), key=lambda kv: -kv[1])[:6])
    msg = ("%d %s in %d steps: %.2f per step (the starter: %.2f per step); at most %.2f per "
           "step passes.%s" % (mine, what, steps, per, bper, limit,
                               " Profiler events: " + seen + "." if seen else ""))
    return {"type": "case", "name": name, "status": "ok", "passed": per <= limit,
            "value": per, "baseline_value": bper, "message": msg}


def failed(name, ans, t):
    if ans is None:
        return {"type": "case", "name": name, "status": "runtime_error", "passed": False,
                "error": t.death(), "error_name": "python_process", "fatal": True,
                "message": "your process stopped during train(): " + t.death()}
    return {"type": "case", "name": name, "status": "runtime_error", "passed": False,
            "error": common.text(ans.get("error"), 300), "error_name": "python_exception",
            "cause": common.text(ans.get("where"), 1500), "fatal": False,
            "message": "your code raised %s (at %s)" % (common.text(ans.get("error"), 300),
                                                        common.text(ans.get("where"), 600))}


# ------------------------------------------------------------------ modes

def warm_up(t, cfg, name, student):
    ans, _, _, _ = run_call(t, cfg, cfg["warmup_steps"], 1, False)
    if ans is None or not ans.get("ok"):
        if not student:
            common.die("the starter's warm-up call failed: %s" % (ans or {}).get("error"))
        return ans or None, False
    return ans, True


def dump(path, what, counts):
    """Diagnostics (--dump FILE, by hand only): the raw event counts."""
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"what": what, "counts": counts}) + "\n")


def run_check(cfg, file, starter, names, seed, dump_path=None, warm=(None, None)):
    steps = cfg["check_steps"]
    # The student's trainer comes up beside the starter's (our code only);
    # its module is imported after the starter's profiled call (run_time).
    me = up(file, cfg, warm[0])
    try:
        base, _ = start(starter, cfg, False, warm[1])
        try:
            ready(me, True)
            warm_up(base, cfg, names[0], False)
            bans, _, bl, bw = run_call(base, cfg, steps, seed, True)
            if bans is None or not bans.get("ok"):
                common.die("the starter's profiled call failed: %s" % (bans or {}).get("error"))
        finally:
            base.close()
        load(me, True, file)
        ans, good = warm_up(me, cfg, names[0], True)
        if good:
            ans, _, sl, sw = run_call(me, cfg, steps, seed, True)
        if ans is None or not ans.get("ok"):
            for n in names:
                common.send_record(failed(n, ans, me))
            if ans is None:
                sys.exit(3)
            return
        dump(dump_path, "starter", bans.get("counts"))
        dump(dump_path, "student", ans.get("counts"))
        bs, bc, _ = classify(bans.get("counts") or {})
        ms, mc, src = classify(ans.get("counts") or {})
        for n in names:
            if n == "results":
                passed, worst, msg = compare(cfg, (bl, bw), (sl, sw))
                common.send_record({"type": "case", "name": n, "status": "ok", "passed": passed,
                                    "value": worst, "message": msg})
            elif n == "syncs":
                common.send_record(count_case(n, "host-device synchronisations", ms, bs, steps,
                                              cfg["max_syncs_per_step"], src))
            elif n == "copies":
                common.send_record(count_case(n, "host<->device copies", mc, bc, steps,
                                              cfg["max_copies_per_step"], src))
    finally:
        me.close()


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def timed_rounds(t, cfg, seeds, budget_s, student):
    """Calls of time_steps on each seed (at least time_rounds_min, more while
    the budget lasts). Returns [(answer, ms per step, losses, weights)]."""
    out, spent = [], 0.0
    for k, seed in enumerate(seeds):
        if k >= cfg["time_rounds_min"] and spent > budget_s:
            break
        ans, secs, lo, w = run_call(t, cfg, cfg["time_steps"], seed, False)
        spent += secs
        out.append((ans, secs * 1e3 / cfg["time_steps"], lo, w))
        if ans is None or not ans.get("ok"):
            if not student:
                common.die("the starter's timed call failed: %s" % (ans or {}).get("error"))
            break
    return out


def run_time(cfg, file, starter, name, max_ms, warm=(None, None)):
    rounds = max(cfg["time_rounds_min"], cfg["time_rounds_max"])
    seeds = [int.from_bytes(os.urandom(8), "little") for _ in range(rounds)]
    # The student's trainer comes up beside the starter's (PyTorch and its
    # device: our code only), before the gate: its start-up is not in the
    # GPU's exclusive hold. Its module is imported only after the starter's
    # timed rounds: the student's code has not run in this sandbox while
    # the starter is timed, so nothing of it can slow the baseline down (a
    # SIGSTOP from the same uid) to inflate the speed-up.
    me = up(file, cfg, warm[0])
    try:
        base, _ = start(starter, cfg, False, warm[1])
        try:
            ready(me, True)
            warm_up(base, cfg, name, False)
            # --gate: the start-ups and the warm-up above shared the GPU;
            # what is timed from here on (the starter's rounds, then the
            # student's module, loaded only after the starter's end) has
            # it alone.
            common.gate_pass()
            common.hold_step(None)
            bres = timed_rounds(base, cfg, seeds, max_ms / 1e3, False)
            common.hold_step("starter_rounds")
        finally:
            base.close()
        load(me, True, file)
        common.hold_step("load")
        ans, good = warm_up(me, cfg, name, True)
        common.hold_step("warm_up")
        if not good:
            common.send_record(failed(name, ans, me))
            sys.exit(3 if ans is None else 0)
        # As many calls as the starter got, unless they take 10 times its
        # whole time (then time_rounds_min: a slow loop ends sooner).
        btotal = sum(r[1] for r in bres) * cfg["time_steps"] / 1e3
        mres = timed_rounds(me, cfg, seeds[:len(bres)], max(10 * btotal, max_ms / 1e3), True)
        common.hold_step("student_rounds")
    finally:
        me.close()
    bad = [r for r in mres if r[0] is None or not r[0].get("ok")]
    if bad:
        common.send_record(failed(name, bad[0][0], me))
        if bad[0][0] is None:
            sys.exit(3)
        return
    wrong, worst = 0, 0.0
    for (_, _, bl, bw), (_, _, sl, sw) in zip(bres, mres):
        passed, w, _ = compare(cfg, (bl, bw), (sl, sw))
        wrong += not passed
        worst = max(worst, w if w is not None else math.inf)
    samples = [r[1] for r in mres]
    bms = median([r[1] for r in bres])
    common.send_hold()
    common.send_record({
        "type": "timing", "name": name, "samples_ms": samples, "median_ms": median(samples),
        "n": len(samples), "warmup": 1, "timed_by": "owner", "steps_per_sample":
        cfg["time_steps"], "baseline_ms": bms, "baseline_samples_ms": [r[1] for r in bres],
        "wrong_samples": wrong, "recheck_passed": wrong == 0,
        "recheck_message": "" if wrong == 0 else
        "%d of %d timed calls gave results that differ from the starter's on the same data "
        "(worst relative difference %.3g): no speed points" % (wrong, len(mres), worst)})


def parse(argv):
    if len(argv) < 2 or argv[1] not in ("check", "time"):
        common.die("usage: lab.py profiling check|time (--cases a,b | --case C) --file F")
    opts = {"lab": argv[0], "mode": argv[1], "max_ms": "3000"}
    i = 2
    while i < len(argv):
        a = argv[i]
        if a in ("--gate", "--pool"):   # fd 4: the runner's gate (owner.py take_gate)
            opts[a[2:]] = True
            i += 1
            continue
        if i + 1 >= len(argv) or a not in ("--seed", "--seed-fd", "--cases", "--case", "--max-ms", "--file",
                                           "--starter", "--dump"):
            common.die("bad argument %r" % a)
        opts[a[2:].replace("-", "_")] = argv[i + 1]
        i += 2
    return opts


def main():
    common.take_channel()
    common.not_dumpable()
    o = parse(sys.argv[1:])
    common.take_gates(o)
    with open(os.path.join(HERE, "lab.json")) as f:
        doc = json.load(f)
    cfg = doc["train"]
    # The baseline: the starter as handed out (read-only in the sandbox);
    # --starter for tests only.
    starter = o.get("starter") or os.path.join(HERE, "starter.py")
    warm = (None, None)
    if o.get("pool"):
        # The trainers first (the gate is private already: they never
        # hold it), then the job: its file, cases and seed, on the gate.
        warm = warm_trainers(starter)
        try:
            job, seed = common.pool_wait(o.get("gate"))
        except BaseException:  # noqa: B902 - sys.exit too: the trainers go with us
            for t in warm:
                t.close()
            raise
        o["file"] = job["file"]
        if o["mode"] == "check":
            o["cases"] = job["cases"]
    else:
        seed = common.run_seed(o)   # --seed-fd from the runner (owner.py run_seed)
    if "file" not in o:
        common.die("--file is required")
    known = [c["name"] for c in doc["cases"]]
    names = o["cases"].split(",") if o["mode"] == "check" and "cases" in o else [o.get("case", "")]
    for n in names:
        if n not in known:
            common.die("unknown case %r" % n)
    if o["mode"] == "check":
        run_check(cfg, o["file"], starter, names, seed, o.get("dump"), warm)
    else:
        run_time(cfg, o["file"], starter, names[0], float(o["max_ms"]), warm)
    common.send_record({"type": "done"})


if __name__ == "__main__":
    common.guarded(main)   # an exception of our own code's is ours (owner.py)
