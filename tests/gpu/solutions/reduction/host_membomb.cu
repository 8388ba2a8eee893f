// expect: status=runtime_error correctness=fail note="host memory without end: the job's memory cgroup kills it ('ran out of host memory'), the host is unharmed"
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    for (;;) {
        char *p = (char *)malloc((size_t)256 << 20);
        if (!p)
            continue;
        memset(p, 1, (size_t)256 << 20);
    }
}
