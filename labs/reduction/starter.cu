// Lab: parallel sum (reduction). Read README.md first.
//
// Write the sum of the n floats at d_in to d_out[0]. Both are device
// pointers; n can be larger than 2^31 (use size_t for indices and counts).
// You may launch any kernels and cudaMalloc scratch memory (free it, or
// allocate it once and keep it). Do not modify d_in.
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void reduce_kernel(const float *in, float *out, size_t n)
{
    // TODO: each block sums a part of `in` (shared memory or warp shuffles,
    // with __syncthreads() between the steps that need it) and contributes
    // its partial sum to the total.
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    // TODO: choose a block size (at most 1024 threads) and a grid that covers
    // all n elements (or a grid-stride loop), initialise d_out, launch.
    reduce_kernel<<<1, 256>>>(d_in, d_out, n);
}
