// expect: status=timeout note="a kernel that never ends: the run is killed at its derived limit and the GPU is free again for the next job"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void forever(float *out)
{
    volatile int spin = 1;
    while (spin)
        ;
    out[0] = 1.0f;
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    forever<<<1, 32>>>(d_out);
}
