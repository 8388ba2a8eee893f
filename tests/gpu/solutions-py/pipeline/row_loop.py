# expect: status=graded correctness=pass tier=any flagged=no samples=10 note="correct, but the group-by is a Python loop over the 64 keys with a host round trip each: H100 directly 96 ms, 3.3x: on the 3x edge, tier not compared"
# Correct and slow on the GPU: the statistics and transforms in CuPy, but the
# group-by as a Python loop over the keys, each one a boolean mask over all
# rows, a sum, and a float() that waits for the GPU and copies to the host:
# 64 x 8 round trips per call.
import cupy as cp


def pipeline(x, key, cols, buckets, means):
    x, key = cp.asarray(x), cp.asarray(key)
    cols, buckets, means = cp.asarray(cols), cp.asarray(buckets), cp.asarray(means)
    xd = x.astype(cp.float64)
    mu = xd.mean(axis=0)
    sd = xd.std(axis=0)
    sd = cp.where(sd > 0, sd, 1.0)
    c = cp.clip((xd - mu) / sd, -4.0, 4.0)
    y = cp.sign(c) * cp.log1p(cp.abs(c))
    cols[...] = y
    buckets[...] = cp.clip(cp.floor((c + 4.0) * 2.0), 0, 15)
    for k in range(64):
        rows = key == k
        n = int(rows.sum())
        for j in range(8):
            means[k, j] = float(y[rows, j].sum()) / n if n else 0.0
