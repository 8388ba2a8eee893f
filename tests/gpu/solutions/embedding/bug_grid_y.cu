// expect: status=graded correctness=fail hint=launch-limits note="one block row per index in grid y: the cases with more than 65535 indices are refused (grid y at most 65535); the smaller ones pass"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void lookup(const float *weight, const int64_t *indices, float *out, int dim)
{
    int64_t row = blockIdx.y;
    int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j < dim)
        out[row * dim + j] = weight[indices[row] * dim + j];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    dim3 grid((unsigned)((dim + 255) / 256), (unsigned)num_indices);   // BUG: y <= 65535
    lookup<<<grid, 256>>>(weight, indices, out, dim);
}
