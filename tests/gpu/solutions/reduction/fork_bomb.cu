// expect: status=rejected symbol=fork note="a fork bomb never runs: fork is not on the lab's allow-list (rejected at the symbol inspection, in seconds)"
#include <cuda_runtime.h>
#include <stddef.h>
#include <unistd.h>

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    for (;;)
        fork();
}
