// expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no profile=uncoalesced_global@12 hint=uncoalesced after=all note="correct, one thread copies a whole row: a warp's 32 threads read 32 different rows, so each load request fetches ~32 sectors where 4 would do (the profiling hint says so with the number, and names line 12, the copy)"
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void row_per_thread(const float *weight, const int64_t *indices, float *out, int64_t n,
                               int dim)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        const float *src = weight + indices[i] * dim;
        for (int j = 0; j < dim; j++)
            out[i * dim + j] = src[j];
    }
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    row_per_thread<<<(unsigned)((num_indices + 255) / 256), 256>>>(weight, indices, out,
                                                                   num_indices, dim);
}
