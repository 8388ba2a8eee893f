// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no note="indices staged in shared memory without __syncthreads() before they are read by other warps"
#include <cuda_runtime.h>
#include <stdint.h>

#define ROWS 64

// One block copies ROWS rows; the block first stages their indices in shared memory.
__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t n, int dim)
{
    __shared__ int64_t rows[ROWS];
    int64_t first = blockIdx.x * (int64_t)ROWS;
    if (threadIdx.x < ROWS && first + threadIdx.x < n)
        rows[threadIdx.x] = indices[first + threadIdx.x];
    // BUG: no __syncthreads(): warps 2..7 read rows[] before warps 0-1 wrote it
    for (int64_t e = threadIdx.x; e < (int64_t)ROWS * dim; e += blockDim.x) {
        int64_t r = e / dim, j = e % dim;
        if (first + r < n)
            out[(first + r) * dim + j] = weight[rows[r] * dim + j];
    }
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    lookup<<<(unsigned)((num_indices + ROWS - 1) / ROWS), 256>>>(weight, indices, out, num_indices, dim);
}
