# expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="CuPy: a RawKernel with 16x16 shared-memory tiles (no cuBLAS)"
import cupy as cp
import numpy as np

_src = r'''
#define T 16
extern "C" __global__ void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float a[T][T], b[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += T) {
        a[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[(size_t)row * K + t + threadIdx.x] : 0.0f;
        b[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? B[(size_t)(t + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++)
            acc += a[threadIdx.y][k] * b[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
'''
_kernel = cp.RawKernel(_src, "mm")


def matmul(A, B, C):
    a, b, c = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    M, K = a.shape
    N = c.shape[1]
    _kernel(((N + 15) // 16, (M + 15) // 16), (16, 16), (a, b, c, np.int32(M), np.int32(N), np.int32(K)))
