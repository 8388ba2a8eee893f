// expect: status=graded correctness=pass sanitizer=clean tier=none flagged=no note="correct but naive: one thread copies a whole row, uncoalesced"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t n, int dim)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j < dim; j++)
            out[i * dim + j] = weight[indices[i] * dim + j];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    lookup<<<(unsigned)((num_indices + 255) / 256), 256>>>(weight, indices, out, num_indices, dim);
}
