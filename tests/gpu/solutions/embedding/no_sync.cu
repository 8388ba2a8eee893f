// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=missing-syncthreads note="missing __syncthreads(): values staged in shared memory are read back by another warp before they are written"
#include <cuda_runtime.h>
#include <stdint.h>

// Each block gathers 256 consecutive output elements into shared memory, then
// writes them out in reverse thread order (a stand-in for any re-mapping).
__global__ void lookup(const float *weight, const int64_t *indices, float *out, int64_t total, int dim)
{
    __shared__ float buf[256];
    int64_t base = blockIdx.x * (int64_t)blockDim.x;
    int64_t e = base + threadIdx.x;
    if (e < total)
        buf[threadIdx.x] = weight[indices[e / dim] * dim + e % dim];
    // BUG: no __syncthreads(): thread t reads the slot thread 255-t (another warp) writes
    int r = blockDim.x - 1 - threadIdx.x;
    if (base + r < total)
        out[base + r] = buf[r];
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    int64_t total = num_indices * dim;
    lookup<<<(unsigned)((total + 255) / 256), 256>>>(weight, indices, out, total, dim);
}
