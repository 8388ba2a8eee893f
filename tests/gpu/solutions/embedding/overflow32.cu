// expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=index-overflow-32 note="32-bit row offset: indices[i]*dim is computed in 32 bits and wraps past 2^32 in the bigvocab case"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t total, int dim)
{
    int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (e < total) {
        int i = (int)(e / dim), j = (int)(e % dim);
        int row = (int)indices[i];
        unsigned offset = (unsigned)row * (unsigned)dim + j;   // BUG: 32 bits
        out[e] = weight[offset];
    }
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    int64_t total = num_indices * dim;
    lookup<<<(unsigned)((total + 255) / 256), 256>>>(weight, indices, out, total, dim);
}
