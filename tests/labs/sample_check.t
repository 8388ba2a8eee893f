#!/usr/bin/env python3
"""CI (no GPU): a timed sample's check does the same work whatever the
output holds, and the owner rehearses all of it before the GPU's
exclusive hold.

The owner compiles (or loads from the lab's kept folder) each of its CuPy
kernels on a poisoned output before the timing gate (owner.py
time_prepare) and at prepare (owner.py warm). A lab.py sample_ok that
stopped at its first failed test compiled the rest in the first timed
sample instead: on an H200 the pipeline lab's first sample took 4.1-5.0 s,
of it 3.6-4.8 s in sample_ok, inside the hold, and its 3 s sample budget
ended after 3 samples (a right sample of that lab takes 66 ms).

- For every lab with a Python interface, sample_ok on a right output and
  on a poisoned one makes the same calls through xp (each function's name
  and its arrays' dtypes: what CuPy compiles a kernel for), and says True
  and False.
- time_prepare flushes the L2 once (the flush's kernel before the hold).
Prints TAP lines."""
import json
import os
import sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "labs", "common", "py"))
sys.path.insert(0, os.path.join(ROOT, "tests", "runner", "fakelab"))
from suite import failures, ok  # noqa: E402  (TAP)

import numpy as np  # noqa: E402

import owner  # noqa: E402
from owner_case import Case  # noqa: E402
from owner_gpu import SimBackend  # noqa: E402


class Device(np.ndarray):
    """A NumPy array that, like CuPy's, copies itself to the host with
    get()."""

    def get(self):
        return np.asarray(self)


def embedding_check(out, w, idx, n, vocab, dim, bad):
    """labs/embedding/lab.py CHECK_SRC in NumPy: bad[0] += the words of
    out that differ from their weight row's, one per index outside the
    table."""
    n, vocab, dim = int(n), int(vocab), int(dim)
    rows = np.asarray(idx[:n])
    inside = (rows >= 0) & (rows < vocab)
    want = np.asarray(w).reshape(vocab, dim)[rows[inside]]
    got = np.asarray(out).reshape(n, dim)[inside]
    bad[0] += int((~inside).sum()) + int((got != want).sum())


# A lab's raw kernels, as NumPy does them (the kernel's name: its work).
RAW_KERNELS = {"cugrade_embedding_check": embedding_check}


class Traced:
    """NumPy as xp, each function called through it written down: its
    name and the dtypes of its array arguments. Like CuPy it has RawKernel
    (the kernels of RAW_KERNELS), each launch written down with its grid,
    block and arguments' dtypes: a lab whose check runs a raw kernel on a
    GPU takes that path here too (with NumPy alone, embedding's check took
    a fallback whose work through xp was nothing, so its comparison of
    calls compared two empty lists)."""

    active = None   # the trace a launch is written to (a lab caches its kernels)

    def __init__(self):
        self.calls = []
        Traced.active = self

    def RawKernel(self, src, name):
        work = RAW_KERNELS[name]

        def launch(grid, block, args):
            Traced.active.calls.append(("RawKernel " + name, tuple(grid), tuple(block),
                                        tuple(str(x.dtype) for x in args)))
            work(*args)
        return launch

    def __getattr__(self, name):
        f = getattr(np, name)
        if isinstance(f, type) or not callable(f):
            return f

        def call(*a, **k):
            kinds = tuple(str(x.dtype) for x in list(a) + list(k.values())
                          if isinstance(x, np.ndarray))
            self.calls.append((name, kinds))
            got = f(*a, **k)
            return got.view(Device) if type(got) is np.ndarray else got
        return call


# The labs whose sample_ok does no work through xp at all: the reduction's
# reads one float (its sums come with the reference), nothing to compile.
NO_XP_WORK = {"reduction"}


def right_outputs(lab, c, inputs):
    """Write the right answer into c's outputs (NumPy, float64 where the
    judges are), by lab; the shapes are the case's params."""
    v, p = c.views, c.params
    if lab == "reduction":
        v["d_out"][0] = np.float32(inputs["d_in"].astype(np.float64).sum())
    elif lab == "embedding":
        v["out"][:] = inputs["weight"].reshape(-1, p["dim"])[inputs["indices"]].reshape(-1)
    elif lab == "matmul":
        a = inputs["A"].reshape(p["M"], p["K"]).astype(np.float64)
        v["C"][:] = (a @ inputs["B"].reshape(p["K"], p["N"])).reshape(-1)
    elif lab == "pipeline":
        sys.path.insert(0, os.path.join(ROOT, "labs", "pipeline"))
        import pipeline_numpy
        x = inputs["x"].reshape(-1, pipeline_numpy.NCOLS)
        cols, buckets, means = pipeline_numpy.pipeline(np, x, inputs["key"])
        v["cols"][:] = cols.reshape(-1)
        v["buckets"][:] = buckets.reshape(-1)
        v["means"][:] = means.reshape(-1)
    else:
        raise AssertionError("no right answer written for lab " + lab)


def smallest_case(doc, lab):
    """A case small enough for a CPU: the lab's smallest by its inputs'
    element count."""
    def size(c):
        return sum(int(np.prod(shape(c["params"]))) for _, _, shape, _, _ in lab["INPUTS"])
    return min(doc["cases"], key=size)


def check_lab(name):
    doc, lab, _ = owner.load_lab(os.path.join(ROOT, "labs", name))
    case = smallest_case(doc, lab)
    be = SimBackend()
    c = Case(be, lab, case["params"], 7, False)
    try:
        inputs = {m["name"]: c.views[m["name"]] for m in c.meta if m["role"] == "in"}
        right_outputs(name, c, inputs)
        xp = Traced()   # a reference of its own for each sample, as time_sample makes
        good = lab["sample_ok"](xp, lab["reference"](np, inputs), c.sample_arg())
        on_right = xp.calls
        c.poison()
        xp = Traced()
        bad = lab["sample_ok"](xp, lab["reference"](np, inputs), c.sample_arg())
        on_poison = xp.calls
    finally:
        c.free()
    ok(good is True and bad is False, "%s: sample_ok says True on a right output and False on a "
       "poisoned one (case %s)" % (name, case["name"]), "right %r, poisoned %r" % (good, bad))
    ok(on_right == on_poison and (len(on_right) > 0 or name in NO_XP_WORK),
       "%s: sample_ok makes the same calls through xp on a right and on a "
       "poisoned output (%d)" % (name, len(on_right)),
       "right:    %r\npoisoned: %r" % (on_right, on_poison))


def check_prepare_flushes():
    doc, lab, cases = owner.load_lab(os.path.join(ROOT, "labs", "reduction"))

    class Counted(SimBackend):
        flushes = 0

        def flush_l2(self):
            Counted.flushes += 1

    be = Counted()
    small = smallest_case(doc, lab)["name"]
    t = owner.time_prepare(be, lab, cases, small, 1, False)
    t.free()
    ok(Counted.flushes == 1, "time_prepare flushes the L2 once, before the gate",
       "flushes: %d" % Counted.flushes)


def main():
    labs = sorted(d for d in os.listdir(os.path.join(ROOT, "labs"))
                  if os.path.exists(os.path.join(ROOT, "labs", d, "lab.py")) and
                  os.path.exists(os.path.join(ROOT, "labs", d, "lab.json")))
    with_sample = []
    for d in labs:
        with open(os.path.join(ROOT, "labs", d, "lab.json")) as f:
            if (json.load(f).get("python") or {}).get("owner"):
                continue   # a lab with its own owner (profiling): no timed sample's check
        _, lab, _ = owner.load_lab(os.path.join(ROOT, "labs", d))
        if "sample_ok" in lab:
            with_sample.append(d)
    ok(set(with_sample) >= {"reduction", "embedding", "matmul", "pipeline"},
       "the labs with a timed sample's check are found", repr(with_sample))
    for d in with_sample:
        check_lab(d)
    check_prepare_flushes()
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
