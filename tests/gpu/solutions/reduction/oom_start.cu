// expect: status=graded|runtime_error correctness=fail hint=device-memory nohint=grid-coverage note="takes all the device memory it may hold (2 GiB, 256 MiB at a time, never freed) on its first call; its scratch allocation is then refused and it returns without writing d_out: the hint is the memory, not a grid that does not cover the input (issue 26)"
#include <cuda_runtime.h>
#include <stddef.h>

static void *hog[64];

__global__ void block_sum(const float *in, float *partial, size_t n)
{
    __shared__ float s[256];
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        acc += in[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s[0];
}

__global__ void total(const float *partial, float *out, unsigned nb)
{
    float acc = 0.0f;
    for (unsigned b = 0; b < nb; b++)
        acc += partial[b];
    *out = acc;
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    static int grabbed;
    if (!grabbed) { /* "a pool for later": as much as the GPU gives */
        grabbed = 1;
        for (int i = 0; i < 64; i++)
            if (cudaMalloc(&hog[i], 256u << 20) != cudaSuccess)
                break;
    }
    const unsigned nb = 132 * 8;
    float *partial;
    if (cudaMalloc(&partial, nb * sizeof(float)) != cudaSuccess)
        return; /* out of memory: d_out is never written */
    block_sum<<<nb, 256>>>(d_in, partial, n);
    total<<<1, 1>>>(partial, d_out, nb);
    cudaFree(partial);
}
