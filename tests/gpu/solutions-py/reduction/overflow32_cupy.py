# expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=index-overflow-32 note="CuPy RawKernel with a 32-bit count: n goes to the kernel as an int (np.int32), so the 2.5e9 case sums nothing"
import cupy as cp
import numpy as np

_src = r'''
extern "C" __global__ void partial_sums(const float *in, int n, float *out)   // BUG: int n
{
    __shared__ float s[256];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}
'''
_kernel = cp.RawKernel(_src, "partial_sums")


def reduce_sum(d_in, d_out):
    x = cp.asarray(d_in)
    out = cp.asarray(d_out)
    out[0:1] = 0
    n = x.shape[0]
    _kernel((132 * 8,), (256,), (x, np.int32(((n + 2**31) % 2**32) - 2**31), out))
