// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=launch-limits note="2048 threads per block: every launch fails with invalid configuration"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
{
    __shared__ float s[2048];
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    block_sum<<<(unsigned)((n + 2047) / 2048), 2048>>>(d_in, d_out, n);   // BUG: max is 1024
}
