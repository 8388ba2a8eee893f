# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="CuPy: cupy.take into the output (one gather kernel)"
import cupy as cp


def embedding_lookup(weight, indices, out):
    cp.take(cp.asarray(weight), cp.asarray(indices), axis=0, out=cp.asarray(out))
