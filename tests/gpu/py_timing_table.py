"""Python timings against the same kernels timed in-process (issue 31;
GPU host only, no sandbox, no server).

    python3 tests/gpu/py_timing_table.py [LAB/FILE.py ...]

For each file of tests/gpu/solutions-py (default: the correct reduction,
embedding and matmul files), on its lab's timing case:
  events x1   CUDA events around one call in this process (after an L2
              flush; includes the Python dispatch of that call with the GPU idle)
  events x10  CUDA events around 10 calls back to back, per call
  reported    the owner's median (labs/common/py/owner.py, time mode: the
              student's code in a separate process, batches of calls)
  batch, round trip (before the student's code), single ms (the warm-up's
              fastest single call): from the owner's timing record.
Then the steps of each owner run after its start-up (what a graded timing
run does inside the GPU's exclusive hold, its hold record): the round
trip's measure, the module's load, its first call (the JIT), the timed
case's warm-up, the batch's sizing, the samples; and the owner's whole
wall time.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = os.path.join(ROOT, "labs", "common", "py")
sys.path.insert(0, PY)
import numpy as np  # noqa: E402
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
import owner  # noqa: E402

DEFAULT = ["reduction/cupy_sum.py", "reduction/fast_numba.py", "reduction/naive_numba.py",
           "embedding/cupy_take.py", "embedding/gather_numba.py", "embedding/naive_numba.py",
           "matmul/tiled_numba.py", "matmul/cupy_rawkernel.py", "matmul/naive_numba.py"]
SEED = "0123456789abcdef0123456789abcdef"


def med(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def in_process(be, lab, doc, cases, path):
    from numba import cuda
    cp = be.cp
    name = doc["timing_case"]
    c = owner.Case(be, lab, cases[name], 1234, False)
    spec = importlib.util.spec_from_file_location("sub_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, lab["SYMBOL"])
    shapes = {m["name"]: tuple(m["shape"]) for m in c.meta}
    args = [cuda.as_cuda_array(c.views[a].reshape(shapes[a])) for a in lab["ARGS"]]
    for _ in range(3):
        fn(*args)
    cuda.synchronize()
    one, ten = [], []
    for r in range(15):
        be.flush_l2()
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn(*args)
        b.record()
        b.synchronize()
        cuda.synchronize()
        one.append(cp.cuda.get_elapsed_time(a, b))
    for r in range(5):
        be.flush_l2()
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(10):
            fn(*args)
        b.record()
        b.synchronize()
        cuda.synchronize()
        ten.append(cp.cuda.get_elapsed_time(a, b) / 10)
    c.free()
    return med(one), med(ten)


def reported(labname, case, path, script=os.path.join(PY, "owner.py")):
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as f:
        p = subprocess.run([sys.executable, "-I", "-B", script, labname, "time",
                            "--case", case, "--max-ms", "3000", "--file", path],
                           pass_fds=(3,), stdin=subprocess.DEVNULL, capture_output=True, timeout=300,
                           env=dict(os.environ, CUGRADE_SEED=SEED),
                           preexec_fn=lambda: os.dup2(f.fileno(), 3))
        f.seek(0)
        data, recs = f.read(), []
        while data:
            line, _, data = data.partition(b"\n")
            r = json.loads(line)
            recs.append(r)
            data = data[int(r.get("bytes", 0)):]
    t = [r for r in recs if r.get("type") == "timing"]
    if not t:
        return None, p.stderr.decode(errors="replace")[-400:]
    t[0]["owner_wall_s"] = time.perf_counter() - t0
    hold = [r for r in recs if r.get("type") == "hold"]
    t[0]["hold_s"] = {k: v for k, v in (hold[0] if hold else {}).items() if k != "type"}
    return t[0], ""


def main():
    files = sys.argv[1:] or DEFAULT
    be = owner.backend()
    holds = []
    print("%-28s %10s %10s %10s %8s %6s %9s %9s %6s" % ("file", "events x1", "events x10", "reported",
                                                         "rep/x10", "batch", "rtrip ms", "single ms", "wrong"))
    for f in files:
        labname, _ = f.split("/")
        with open(os.path.join(ROOT, "labs", labname, "lab.json")) as j:
            ljson = json.load(j)
        own = (ljson.get("python") or {}).get("owner")
        path = os.path.join(ROOT, "tests", "gpu", "solutions-py", f)
        if own:  # a lab with its own owner (the profiling lab): its run only
            t, err = reported(labname, ljson["timing_case"], path, os.path.join(ROOT, "labs", labname, own))
            if t:
                holds.append((f, t.get("hold_s") or {}, t["owner_wall_s"]))
            else:
                print("%-28s owner: %s" % (f, err.replace("\n", " ")[:120]))
            continue
        doc, lab, cases = owner.load_lab(os.path.join(ROOT, "labs", labname))
        try:
            e1, e10 = in_process(be, lab, doc, cases, path)
        except Exception as e:  # a file that does not run in-process: say so
            print("%-28s in-process: %s" % (f, str(e)[:80]))
            continue
        t, err = reported(labname, doc["timing_case"], path)
        if not t:
            print("%-28s %10.4f %10.4f   owner: %s" % (f, e1, e10, err.replace("\n", " ")[:120]))
            continue
        print("%-28s %10.4f %10.4f %10.4f %8.3f %6d %9.4f %9.4f %6d" % (
            f, e1, e10, t["median_ms"], t["median_ms"] / e10, t.get("batch", 1),
            t.get("roundtrip_ms", 0), t.get("single_ms", 0), t["wrong_samples"]))
        sys.stdout.flush()
        holds.append((f, t.get("hold_s") or {}, t["owner_wall_s"]))
    print("\nthe owner's steps after its start-up (a graded run's exclusive hold), s")
    for f, h, wall in holds:
        print("%-28s %s; sum %.3f, the owner's wall %.3f" % (
            f, ", ".join("%s %.3f" % kv for kv in h.items()), sum(h.values()), wall))


if __name__ == "__main__":
    main()
