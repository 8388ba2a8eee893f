# expect: status=graded correctness=fail tier=none flagged=no note="the same port in float32: the columns with large offsets come out wrong"
# The pipeline in float32 throughout (the inputs' dtype): the means and the
# std of the columns around 65536, 250000 and 2^20 lose most of their digits,
# and x - mean in float32 does too; the judge fails cols there (and says so).
import cupy as cp
import cupyx


def pipeline(x, key, cols, buckets, means):
    x, key = cp.asarray(x), cp.asarray(key)
    cols, buckets, means = cp.asarray(cols), cp.asarray(buckets), cp.asarray(means)
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    sd = cp.where(sd > 0, sd, cp.float32(1.0))
    c = cp.clip((x - mu) / sd, cp.float32(-4.0), cp.float32(4.0))
    y = cp.sign(c) * cp.log1p(cp.abs(c))
    cols[...] = y
    buckets[...] = cp.clip(cp.floor((c + cp.float32(4.0)) * cp.float32(2.0)), 0, 15)
    cnt = cp.bincount(key, minlength=64)
    s = cp.zeros((64, 8), dtype=cp.float32)
    cupyx.scatter_add(s, key, y)
    means[...] = s / cp.maximum(cnt, 1)[:, None].astype(cp.float32)
