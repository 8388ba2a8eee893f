# expect: status=graded correctness=pass tier="10x faster than NumPy" flagged=no samples=10 note="the NumPy pipeline, line for line in CuPy, float64 inside (H100, directly: 20.3 ms, 15.7x NumPy)"
# The pipeline lab's straightforward port: every NumPy call becomes the CuPy
# call of the same name, on the device, in float64 (the inputs are float32;
# the columns with large offsets need float64 for the statistics and for
# x - mean). The outputs are written in place (cupy.asarray of an argument
# is a view of the harness's buffer, not a copy).
import cupy as cp
import cupyx


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
    cnt = cp.bincount(key, minlength=64)
    s = cp.zeros((64, 8), dtype=cp.float64)
    cupyx.scatter_add(s, key, y)
    means[...] = s / cp.maximum(cnt, 1)[:, None]
