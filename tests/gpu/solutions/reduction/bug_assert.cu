// expect: status=runtime_error correctness=fail hint=device-assert note="assert(i < n) in the kernel fails in the last block of case 1: the hint shows the condition, kernel.cu:line, block and thread from the device's message"
#include <assert.h>
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
{
    __shared__ float s[256];
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    assert(i < n);   // BUG: the last block's threads run past n
    s[threadIdx.x] = in[i];
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
    block_sum<<<(unsigned)((n + 255) / 256), 256>>>(d_in, d_out, n);
}
