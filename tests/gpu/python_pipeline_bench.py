#!/usr/bin/env python3
"""The pipeline lab's speeds on a GPU host, directly (no runner, no sandbox,
no owner/tenant split): one process generates case 2^20's inputs with the
lab's generators, times the NumPy pipeline (1 warm-up, 5 samples), then each
port in tests/gpu/solutions-py/pipeline (warm-up calls first: CuPy compiles
then; samples end with a device synchronize and a read of the outputs),
checks each port's outputs with lab.py's rule, and prints a table. A quick
look at the numbers the runner's timing should land near; the grade itself
comes from the runner (tests/gpu/python_pipeline_smoke.sh).
    python3 tests/gpu/python_pipeline_bench.py [port ...]"""
import importlib.util, os, statistics, sys, time
import numpy as np
np.row_stack = getattr(np, "row_stack", np.vstack)
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path[:0] = [os.path.join(ROOT, "labs/common/py"), os.path.join(ROOT, "labs/pipeline")]
import gen, pipeline_numpy as P  # noqa: E402
import cupy as cp  # noqa: E402
from numba import cuda  # noqa: E402
LAB = {}
exec(open(os.path.join(ROOT, "labs/pipeline/lab.py")).read(), LAB)
OUT = open(os.path.join(os.environ.get("OUT", "/tmp"), "bench.txt"), "a")


def say(s):
    print(s, flush=True)
    OUT.write(s + "\n")
    OUT.flush()


n = 1 << 20
cs = gen.case_seed(gen.seed_parse_wide("5eed"), "2^20")
x = LAB["f32_features"](np, gen.stream(cs, 0), 0, n * 8).reshape(n, 8)
key = LAB["i32_keys"](np, gen.stream(cs, 1), 0, n)
ref = P.pipeline(np, x, key) + (LAB["_near_edge"](np, x),)
P.pipeline(np, x, key)
cpu = []
for _ in range(5):
    t0 = time.perf_counter()
    P.pipeline(np, x, key)
    cpu.append((time.perf_counter() - t0) * 1e3)
npm = statistics.median(cpu)
say("| port | median ms | samples | speedup vs NumPy | outputs right |")
say("|---|---|---|---|---|")
say("| NumPy (float64, this host's CPU) | %.2f | %d | 1 | - |" % (npm, len(cpu)))
dx, dk = cp.asarray(x), cp.asarray(key)
for name in sys.argv[1:] or ["cupy_port", "row_loop", "host_roundtrip"]:
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tests/gpu/solutions-py/pipeline", name + ".py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    outs = [cp.empty((n, 8), cp.float32), cp.empty((n, 8), cp.int32), cp.empty((64, 8), cp.float32)]
    args = [cuda.as_cuda_array(a) for a in [dx, dk] + outs]
    t0 = time.perf_counter()
    m.pipeline(*args)
    cp.cuda.runtime.deviceSynchronize()
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(2):
        m.pipeline(*args)
    cp.cuda.runtime.deviceSynchronize()
    s, t_end = [], time.perf_counter() + 3
    while len(s) < 20 and (len(s) < 3 or time.perf_counter() < t_end):
        outs[0].fill(np.nan)
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        m.pipeline(*args)
        cp.cuda.runtime.deviceSynchronize()
        outs[2][0, 0].get()
        s.append((time.perf_counter() - t0) * 1e3)
    good = LAB["outputs_ok"](np, ref, *[cp.asnumpy(o) for o in outs])
    med = statistics.median(s)
    say("| %s (first call %.0f ms) | %.3f | %d | %.1f | %s |" % (name, first, med, len(s), npm / med, good))
