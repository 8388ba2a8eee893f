// expect: status=runtime_error correctness=fail note="prints without end: killed at the output limit (8 MiB), 'Output limit exceeded'"
#include <cstdio>
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    for (unsigned long i = 0;; i++)
        printf("debug line %lu of a student who prints every element: n = %zu\n", i, n);
}
