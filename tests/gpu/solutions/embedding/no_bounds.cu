// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=bounds-check note="missing bounds check: the last block writes past the end of out"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t total, int dim)
{
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    // BUG: no e < total check
    int64_t i = e / dim, j = e % dim;
    out[e] = weight[indices[i] * dim + j];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    int64_t total = num_indices * dim;
    lookup<<<(unsigned)((total + 255) / 256), 256>>>(weight, indices, out, total, dim);
}
