# expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=index-overflow-32 note="CuPy RawKernel with a 32-bit row offset: indices[i]*dim wraps past 2^32 in the bigvocab case"
import cupy as cp
import numpy as np

_src = r'''
extern "C" __global__ void lookup(const float *weight, const long long *indices, float *out,
                                  long long total, int dim)
{
    long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e < total) {
        int i = (int)(e / dim), j = (int)(e % dim);
        int row = (int)indices[i];
        unsigned offset = (unsigned)row * (unsigned)dim + j;   // BUG: 32 bits
        out[e] = weight[offset];
    }
}
'''
_kernel = cp.RawKernel(_src, "lookup")


def embedding_lookup(weight, indices, out):
    w, idx, o = cp.asarray(weight), cp.asarray(indices), cp.asarray(out)
    n, dim = o.shape
    total = n * dim
    _kernel(((total + 255) // 256,), (256,), (w, idx, o, np.int64(total), np.int32(dim)))
