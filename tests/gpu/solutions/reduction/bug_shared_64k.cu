// expect: status=graded correctness=fail hint=launch-limits note="64 KiB of dynamic shared memory per block without cudaFuncSetAttribute: every launch is refused (over the 48 KiB default); the hint names the limit and the launch's line"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
{
    extern __shared__ float s[];
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
    block_sum<<<(unsigned)((n + 255) / 256), 256, 65536>>>(d_in, d_out, n);   // BUG: > 48 KiB
}
