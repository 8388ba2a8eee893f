// expect: status=graded|timeout|runtime_error hint=divergent-barrier note="__syncthreads() inside if (threadIdx.x < k): threads k..blockDim-1 never reach it (undefined behaviour; on sm_70+ it may even sum right), named from the source"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
{
    __shared__ float s[256];
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) {
            s[threadIdx.x] += s[threadIdx.x + k];
            __syncthreads();   // BUG: inside the branch, not every thread reaches it
        }
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    block_sum<<<(unsigned)((n + 255) / 256), 256>>>(d_in, d_out, n);
}
