// expect: status=graded correctness=pass sanitizer=clean tier="80% of copy bandwidth" flagged=no note="correct and fast: coalesced float4 gather, grid-stride, 64-bit offsets"
#include <cuda_runtime.h>
#include <stdint.h>

template <typename T>
__global__ void embedding_opt_kernel(const T *__restrict__ weight,
                                     const int64_t *__restrict__ indices, T *__restrict__ out,
                                     uint64_t total, uint32_t width)
{
    for (uint64_t e = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; e < total;
         e += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t i = e / width, j = e - i * width;
        out[e] = __ldg(&weight[(uint64_t)__ldg(&indices[i]) * width + j]);
    }
}

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim)
{
    static int sms;
    uint64_t total;
    int blocks;
    if (sms == 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    }
    if (dim % 4 == 0) {
        total = (uint64_t)num_indices * (dim / 4);
        blocks = (int)((total + 255) / 256 < (uint64_t)sms * 32 ? (total + 255) / 256 : sms * 32);
        embedding_opt_kernel<float4><<<blocks > 0 ? blocks : 1, 256>>>(
            (const float4 *)weight, indices, (float4 *)out, total, dim / 4);
    } else {
        total = (uint64_t)num_indices * dim;
        blocks = (int)((total + 255) / 256 < (uint64_t)sms * 32 ? (total + 255) / 256 : sms * 32);
        embedding_opt_kernel<float><<<blocks > 0 ? blocks : 1, 256>>>(weight, indices, out, total,
                                                                     dim);
    }
}
