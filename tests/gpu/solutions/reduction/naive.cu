// expect: status=graded correctness=pass sanitizer=clean tier="30x faster than one CPU thread|100x faster than one CPU thread" flagged=no note="correct but naive: interleaved shared-memory tree (divergent modulo), one atomicAdd per block. It sits on the 100x threshold on an H100 (speedup 101.6 measured, 2.54 ms against the CPU baseline's 258 ms): either tier is right until re-timing near thresholds (issue 11) decides it"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
{
    __shared__ float s[256];
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        if (threadIdx.x % (2 * k) == 0)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    size_t blocks = (n + 255) / 256;
    block_sum<<<(unsigned)blocks, 256>>>(d_in, d_out, n);
}
