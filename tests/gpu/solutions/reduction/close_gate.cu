// expect: status=runtime_error correctness=fail note="a correct sum that closes descriptor 4 on its first call: the check run's memory gate (the grader's line before the 2.5e9 case) no longer answers, and the message says so (the student's, not a system_error)"
#include <unistd.h>
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void partial_sums(const float *in, size_t n, float *partial)
{
    __shared__ float warp_sums[8];
    const float4 *in4 = (const float4 *)in;
    size_t n4 = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    float a = 0, b = 0, c = 0, d = 0;
    for (size_t i = t; i < n4; i += stride) {
        float4 v = in4[i];
        a += v.x; b += v.y; c += v.z; d += v.w;
    }
    for (size_t i = 4 * n4 + t; i < n; i += stride)
        a += in[i];
    float s = (a + b) + (c + d);
    for (int o = 16; o > 0; o /= 2)
        s += __shfl_down_sync(0xffffffff, s, o);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < 8 ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o /= 2)
            s += __shfl_down_sync(0xffffffff, s, o);
        if (threadIdx.x == 0)
            partial[blockIdx.x] = s;
    }
}

__global__ void final_sum(const float *partial, int count, float *out)
{
    __shared__ float s[256];
    float v = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        v += partial[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = s[0];
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    static int closed;
    if (!closed) { /* the grader's descriptor, not ours */
        closed = 1;
        close(4);
    }
    static float *partial;
    const int max_blocks = 1024;
    if (partial == NULL)
        cudaMalloc(&partial, max_blocks * sizeof(float));
    size_t want = (n + 4095) / 4096;
    int blocks = want > (size_t)max_blocks ? max_blocks : (int)(want ? want : 1);
    partial_sums<<<blocks, 256>>>(d_in, n, partial);
    final_sum<<<1, 256>>>(partial, blocks, d_out);
}
