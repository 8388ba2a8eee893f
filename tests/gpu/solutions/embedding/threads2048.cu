// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=launch-limits note="2048 threads per block: every launch fails with invalid configuration"
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
    int64_t total = num_indices * dim;
    lookup<<<(unsigned)((total + 2047) / 2048), 2048>>>(weight, indices, out, total, dim);   // BUG
}
