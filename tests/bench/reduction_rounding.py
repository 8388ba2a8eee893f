#!/usr/bin/python3
"""How far honest float32 reductions land from the reference on the reduction
lab's timed (balanced) inputs, in tolerances (gen.reduction_tolerance):
NumPy replays three accumulation orders on the exact inputs gen.py makes --
one atomicAdd per block of 256 (float32 block sums, then the partials added
in a random order), per-thread chunks of 4096 then one atomic each, and one
atomicAdd per element (2^26 only). Prints a table; asserts nothing (a
benchmark, docs/python.md "Inputs no statistic predicts" quotes it).

    python3 tests/bench/reduction_rounding.py      # ~2 minutes, ~6 GB of RAM
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../labs/common/py"))
import gen  # noqa: E402


def in_order(parts, rng):
    parts = parts.copy()
    rng.shuffle(parts)                          # atomics land in any order
    return float(np.cumsum(parts, dtype=np.float32)[-1])


print("%-10s %-18s %12s %9s %10s %10s %10s" % ("n", "seed", "sum", "tol", "per-block", "chunk4096",
                                               "per-elem"))
for sd in ("1", "abc", "8000000000000000"):
    for n in (1 << 26, 1 << 28):
        st = gen.stream(gen.case_seed(gen.seed_parse_wide(sd), "2^28"), 0)
        x = gen.f32_reduction(np, st, 0, n, n, 2)
        xd = x.astype(np.float64)
        ref = float(xd.sum())
        tol = gen.reduction_tolerance(n, ref, float((xd * xd).sum()))
        rng = np.random.default_rng(1)
        blk = in_order(x.reshape(-1, 256).sum(axis=1, dtype=np.float32), rng)
        chunk = x.reshape(-1, 4096)
        acc = np.zeros(chunk.shape[0], np.float32)
        for j in range(4096):                   # each thread's running float sum
            acc += chunk[:, j]
        ch = in_order(acc, rng)
        el = "%10.3f" % (abs(float(np.cumsum(x, dtype=np.float32)[-1]) - ref) / tol) if n == 1 << 26 else "%10s" % "-"
        print("%-10d %-18s %12.6g %9.4g %10.3f %10.3f %s" % (n, sd, ref, tol, abs(blk - ref) / tol,
                                                             abs(ch - ref) / tol, el), flush=True)
