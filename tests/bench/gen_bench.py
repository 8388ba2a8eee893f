#!/usr/bin/env python3
"""NumPy input generation, whole arrays against gen.CHUNK elements at a time
(labs/common/py/gen.py `chunked`): what the pipeline lab's judge and
`cugrade test` pay to regenerate a case's inputs on the CPU. A benchmark:
prints a table (the median of REPEAT runs, default 3), asserts only that
the two give the same bits.

    sh tests/bench/gen_bench.sh
"""
import os
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "labs/common/py"))
import numpy as np  # noqa: E402
import gen  # noqa: E402

REPEAT = int(os.environ.get("REPEAT", "3"))


def lab_gen(lab):
    ns = {}
    path = os.path.join(ROOT, "labs", lab, "lab.py")
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    return ns.get("GEN") or {}


def timed(fn):
    ts, out = [], None
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main():
    pl = lab_gen("pipeline")
    seed = gen.stream(gen.case_seed(0x0123456789ABCDEF, "3000017"), 0)
    rows = [  # name, elements, generator (xp, seed, start, count), generate's genname, own, params
        ("pipeline f32_features (3000017 x 8)", 3000017 * 8, pl["f32_features"], "f32_features",
         pl["f32_features"], {}),
        ("pipeline i32_keys (3000017)", 3000017, pl["i32_keys"], "i32_keys", pl["i32_keys"], {}),
        ("f32_reduction (2^24)", 1 << 24,
         lambda xp, s, a, n: gen.f32_reduction(xp, s, a, n, 1 << 24, 2), "f32_reduction", None,
         {"n": 1 << 24, "signs": 2}),
        ("index (2^22, vocab 1200000)", 1 << 22,
         lambda xp, s, a, n: gen.index(xp, s, a, n, 1200000), "index", None, {"vocab": 1200000}),
    ]
    print("gen_bench: NumPy %s, gen.CHUNK %d elements, median of %d" % (np.__version__, gen.CHUNK,
                                                                        REPEAT))
    print("%-38s | %10s | %8s | %9s | %s" % ("generator", "elements", "whole, s", "chunks, s",
                                             "same bits"))
    print("-" * 38 + "-+-" + "-" * 10 + "-+-" + "-" * 8 + "-+-" + "-" * 9 + "-+-" + "-" * 9)
    bad = 0
    for name, n, fn, genname, own, params in rows:
        tw, whole = timed(lambda: fn(np, seed, 0, n))
        tc, part = timed(lambda: gen.generate(np, genname, seed, 0, n, params, own))
        same = whole.dtype == part.dtype and bool((whole.view(np.uint8) == part.view(np.uint8)).all())
        bad += not same
        print("%-38s | %10d | %8.2f | %9.2f | %s" % (name, n, tw, tc, "yes" if same else "NO"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
