// expect: status=graded correctness=fail sanitizer=clean hint=unset-output nohint=bounds-check,grid-coverage says="cudaMemset(d_out, 0" note="bounds checked, but d_out is never set to 0: one atomicAdd per block onto the NaN the harness put there gives NaN; memcheck is clean, so the hint is the unset output, not a missing bounds check (issue 26)"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
{
    __shared__ float s[256];
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        acc += in[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    /* the bug: no cudaMemset(d_out, 0, sizeof(float)) first */
    block_sum<<<132 * 8, 256>>>(d_in, d_out, n);
}
