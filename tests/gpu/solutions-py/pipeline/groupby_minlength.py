# expect: status=graded correctness=fail tier=none flagged=no note="bincount without minlength: a case whose largest key is absent gets fewer groups"
# A wrong group-by: cupy.bincount(key) has max(key) + 1 bins, not 64, when
# the largest keys do not occur (case "1": one row): the assignment into
# means (64 x 8) then fails, and the case with it. The large cases, where
# every key occurs, pass.
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
    cnt = cp.bincount(key)
    s = cp.stack([cp.bincount(key, weights=y[:, j]) for j in range(8)], axis=1)
    means[...] = s / cp.maximum(cnt, 1)[:, None]
