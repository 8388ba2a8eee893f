/*
 * reference/reduction/naive.cu - the textbook first reduction: one element
 * per thread, an interleaved tree in shared memory, one atomicAdd per block.
 * The lab's "naive" baseline; linked with the harness like a student file.
 */
#include <cuda_runtime.h>
#include <stddef.h>

#define NAIVE_THREADS 256

__global__ void reduction_naive_kernel(const float *in, float *out, size_t n)
{
    __shared__ float s[NAIVE_THREADS];
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
    size_t blocks = (n + NAIVE_THREADS - 1) / NAIVE_THREADS;
    cudaMemsetAsync(d_out, 0, sizeof(float), 0);
    reduction_naive_kernel<<<(unsigned)blocks, NAIVE_THREADS>>>(d_in, d_out, n);
}
