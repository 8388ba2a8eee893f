// expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no profile=divergence@17 hint=divergence after=all note="correct grid-stride sum, but only lanes 0-15 of each warp load and add (the branch at line 17): the other 16 lanes of every warp idle through the whole loop, and the profiling hint says ~16 of 32 threads are active, with the line"
#include <cuda_runtime.h>
#include <stddef.h>

#define THREADS 256
#define HALF (THREADS / 2)

__global__ void sum_half_warps(const float *in, float *out, size_t n)
{
    __shared__ float s[THREADS / 32];
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float acc = 0.0f;
    /* The working lanes of the block, numbered 0..HALF-1, cover HALF
     * consecutive elements per block and step. */
    size_t first = blockIdx.x * (size_t)HALF + warp * 16 + lane;
    size_t step = (size_t)gridDim.x * HALF;
    if (lane < 16) {
        for (size_t i = first; i < n; i += step)
            acc += in[i];
    }
    for (int o = 16; o > 0; o /= 2)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0)
        s[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < THREADS / 32; w++)
            t += s[w];
        atomicAdd(out, t);
    }
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    size_t blocks = (n + HALF - 1) / HALF;
    if (blocks > 2048)
        blocks = 2048;
    if (blocks == 0)
        blocks = 1;
    sum_half_warps<<<(unsigned)blocks, THREADS>>>(d_in, d_out, n);
}
