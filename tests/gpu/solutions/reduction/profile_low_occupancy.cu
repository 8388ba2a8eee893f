// expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no profile=low_occupancy after=all note="correct grid-stride sum, but each block of 64 threads asks for 48 KiB of shared memory it barely uses: only a few blocks fit on an SM, and the profiling hint names shared memory as the occupancy limiter"
#include <cuda_runtime.h>
#include <stddef.h>

#define THREADS 64
#define SMEM_BYTES (48 * 1024)

__global__ void sum_fat_blocks(const float *in, float *out, size_t n)
{
    extern __shared__ float s[]; /* SMEM_BYTES, of which THREADS floats are used */
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)THREADS + threadIdx.x; i < n;
         i += (size_t)gridDim.x * THREADS)
        acc += in[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = THREADS / 2; k > 0; k /= 2) {
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
    size_t blocks = (n + THREADS - 1) / THREADS;
    if (blocks > 4096)
        blocks = 4096;
    if (blocks == 0)
        blocks = 1;
    sum_fat_blocks<<<(unsigned)blocks, THREADS, SMEM_BYTES>>>(d_in, d_out, n);
}
