// expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=index-overflow-32 note="32-bit count and index: n is passed to the kernel as an int, so the 2.5e9 case sums nothing"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void partial_sums(const float *in, int n, float *partial)   // BUG: int n
{
    __shared__ float s[256];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = 128; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
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
    static float *partial;
    if (partial == NULL)
        cudaMalloc(&partial, 1024 * sizeof(float));
    partial_sums<<<1024, 256>>>(d_in, n, partial);
    final_sum<<<1, 256>>>(partial, 1024, d_out);
}
