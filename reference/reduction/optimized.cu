/*
 * reference/reduction/optimized.cu - a bandwidth-bound reduction: a few
 * blocks per SM, float4 loads in a grid-stride loop, four float
 * accumulators per thread, warp shuffles, one double partial per block, and a
 * second one-block kernel that adds the partials (deterministic: no atomics).
 */
#include <cuda_runtime.h>
#include <stddef.h>

#define OPT_THREADS 256
#define OPT_BLOCKS_PER_SM 8

__global__ void reduction_opt_partial(const float *in, size_t n, double *partial)
{
    __shared__ double warp_sums[OPT_THREADS / 32];
    const float4 *in4 = (const float4 *)in;
    size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    float a = 0, b = 0, c = 0, d = 0;
    double sum;
    for (size_t i = t; i < n4; i += stride) {
        float4 v = in4[i];
        a += v.x;
        b += v.y;
        c += v.z;
        d += v.w;
    }
    for (size_t i = 4 * n4 + t; i < n; i += stride)   /* the last n % 4 */
        a += in[i];
    sum = (double)a + (double)b + (double)c + (double)d;
    for (int o = 16; o > 0; o /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, o);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x < 32) {
        sum = threadIdx.x < OPT_THREADS / 32 ? warp_sums[threadIdx.x] : 0.0;
        for (int o = 16; o > 0; o /= 2)
            sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (threadIdx.x == 0)
            partial[blockIdx.x] = sum;
    }
}

__global__ void reduction_opt_final(const double *partial, int count, float *out)
{
    __shared__ double s[OPT_THREADS];
    double sum = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        sum += partial[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = (float)s[0];
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    static double *partial;
    static int max_blocks;
    size_t want = (n + OPT_THREADS * 16 - 1) / (OPT_THREADS * 16);
    int blocks;
    if (partial == NULL) {
        int dev = 0, sms = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        max_blocks = sms * OPT_BLOCKS_PER_SM;
        cudaMalloc(&partial, max_blocks * sizeof(double));
    }
    blocks = want < 1 ? 1 : want > (size_t)max_blocks ? max_blocks : (int)want;
    reduction_opt_partial<<<blocks, OPT_THREADS>>>(d_in, n, partial);
    reduction_opt_final<<<1, OPT_THREADS>>>(partial, blocks, d_out);
}
