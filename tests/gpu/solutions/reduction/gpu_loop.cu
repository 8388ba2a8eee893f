// expect: status=timeout note="a kernel that never ends (it waits for a flag nobody sets): the run is killed at its derived limit and the GPU is free again for the next job"
#include <cuda_runtime.h>
#include <stddef.h>

__device__ volatile int never_set = 0;

__global__ void forever(float *out)
{
    while (never_set == 0)
        ;
    out[0] = 1.0f;
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    forever<<<1, 32>>>(d_out);
}
