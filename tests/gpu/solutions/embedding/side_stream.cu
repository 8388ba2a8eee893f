// expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no note="work on a non-blocking side stream, no sync: still timed (the harness syncs the device)"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t total, int dim)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x)
        out[e] = weight[indices[e / dim] * dim + e % dim];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    static cudaStream_t side;
    if (side == NULL)
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    lookup<<<4096, 256, 0, side>>>(weight, indices, out, num_indices * dim, dim);
}
