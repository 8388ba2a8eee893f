// expect: status=graded correctness=pass sanitizer=clean tier="100x faster than one CPU thread" flagged=no note="work on a non-blocking side stream, no sync: the harness's device sync still times it"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void partial_sums(const float *in, size_t n, float *partial)
{
    __shared__ float s[256];
    float v = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
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
    static cudaStream_t side;
    static float *partial;
    if (side == NULL) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);   // does not sync with stream 0
        cudaMalloc(&partial, 1024 * sizeof(float));
    }
    partial_sums<<<1024, 256, 0, side>>>(d_in, n, partial);
    final_sum<<<1, 256, 0, side>>>(partial, 1024, d_out);
    // returns at once: an event pair on stream 0 would time nothing
}
