// expect: status=graded|timeout correctness=fail nohint=grid-coverage,bounds-check note="every element atomicAdd-ed into one float32 total: the bulk stops growing past 2^24 for n = 2^26 (elements below 1 round away). Since the reduction's inputs carry heavy elements at secret places (docs/python.md, Inputs no statistic predicts), the total no longer stalls at a power of two, so runner/hint.c's float32-saturation test cannot see it: the case fails with no hint, and must not get the grid or bounds hint"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void add_all(const float *in, float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(out, in[i]);   // BUG: one float total for all n elements
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    add_all<<<1024, 256>>>(d_in, d_out, n);
}
