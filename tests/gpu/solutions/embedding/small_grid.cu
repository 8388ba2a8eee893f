// expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=grid-coverage note="grid too small: at most 4096 blocks and no grid-stride loop"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t total, int dim)
{
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (e < total)
        out[e] = weight[indices[e / dim] * dim + e % dim];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    int64_t total = num_indices * dim, blocks = (total + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;   // BUG: caps the grid, covers only 2^20 elements
    lookup<<<(unsigned)blocks, 256>>>(weight, indices, out, total, dim);
}
