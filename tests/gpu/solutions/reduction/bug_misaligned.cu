// expect: status=runtime_error correctness=fail sanitizer=dirty tier=none flagged=no hint=sanitizer-finding note="float4 loads from d_in + 1 (the first element peeled off): 16-byte loads at a 4-byte aligned address fault, and memcheck's misaligned-address finding is no catalogue entry's, so it keeps its own hint (the generic sanitizer-finding)"
#include <cuda_runtime.h>
#include <stddef.h>

/* Element 0 is added by thread 0; the rest is read four at a time. */
__global__ void sum_vec4(const float *in, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t nvec = (n - 1) / 4;
    const float4 *v = reinterpret_cast<const float4 *>(in + 1); // BUG: not 16-byte aligned
    float acc = 0.0f;
    if (i < nvec) {
        float4 x = v[i];
        acc = x.x + x.y + x.z + x.w;
    }
    if (i == 0) {
        acc += in[0];
        for (size_t k = 1 + 4 * nvec; k < n; k++)
            acc += in[k];
    }
    for (int o = 16; o > 0; o /= 2)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0)
        atomicAdd(out, acc);
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    size_t threads = (n - 1) / 4 + 1;
    sum_vec4<<<(unsigned)((threads + 255) / 256), 256>>>(d_in, d_out, n);
}
