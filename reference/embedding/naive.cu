/*
 * reference/embedding/naive.cu - one thread per looked-up row, copying it
 * element by element: neighbouring threads touch addresses dim floats apart,
 * so no access is coalesced. The lab's "naive" baseline (64-bit offsets, so
 * it is correct on every case).
 */
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void embedding_naive_kernel(const float *weight, const int64_t *indices, float *out,
                                       int64_t num_indices, int dim)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= num_indices)
        return;
    const float *src = weight + indices[i] * (int64_t)dim;
    float *dst = out + i * (int64_t)dim;
    for (int j = 0; j < dim; j++)
        dst[j] = src[j];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    int64_t blocks = (num_indices + 255) / 256;
    embedding_naive_kernel<<<(unsigned)blocks, 256>>>(weight, indices, out, num_indices, dim);
}
