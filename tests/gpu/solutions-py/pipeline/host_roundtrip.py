# expect: status=graded correctness=pass tier=none flagged=no note="correct, but every call copies the data to the host and runs NumPy there: about NumPy's speed"
# The pipeline lab, done the slow way: copy the inputs to the host, run the
# NumPy pipeline there, copy the outputs back. Correct (the same float64
# code as the reference) and about as fast as NumPy itself plus two PCIe
# copies: below the 3x tier. Runs in CI's simulator too.
import numpy as np


def pipeline(x, key, cols, buckets, means):
    h = x.copy_to_host().astype(np.float64)
    k = key.copy_to_host()
    mu = h.mean(axis=0)
    sd = h.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    c = np.clip((h - mu) / sd, -4.0, 4.0)
    y = np.sign(c) * np.log1p(np.abs(c))
    b = np.clip(np.floor((c + 4.0) * 2.0), 0, 15).astype(np.int32)
    cnt = np.bincount(k, minlength=64)
    s = np.stack([np.bincount(k, weights=y[:, j], minlength=64) for j in range(8)], axis=1)
    cols.copy_to_device(y.astype(np.float32))
    buckets.copy_to_device(b)
    means.copy_to_device((s / np.maximum(cnt, 1)[:, None]).astype(np.float32))
