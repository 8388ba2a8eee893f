// expect: status=timeout note="host code that never returns: killed at the limit derived from the naive reference (seconds, not the flat 300 s), the case named"
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    volatile int spin = 1;
    while (spin)
        ;
}
