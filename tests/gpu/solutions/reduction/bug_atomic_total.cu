// expect: status=graded|timeout correctness=fail hint=float32-saturation note="every element atomicAdd-ed into one float32 total: it stops growing at 2^25 for n = 2^26 (elements below 2 round away); the catalogue says float32 accumulation and partial sums, not 'does your grid cover'"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void add_all(const float *in, float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(out, in[i]);   // BUG: one float total for all n elements
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    cudaMemset(d_out, 0, sizeof(float));
    add_all<<<1024, 256>>>(d_in, d_out, n);
}
