// expect: status=graded|runtime_error|timeout correctness=fail note="host memory without end: stopped by the sandbox's memory limits (malloc fails, the memory cgroup kills it, or -- seen on the H100 host, cgroup v2 -- reclaim throttles it until its wall limit: timeout); the host is unharmed and the answer is never written"
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    for (;;) {
        char *p = (char *)malloc((size_t)256 << 20);
        if (!p)
            return;
        memset(p, 1, (size_t)256 << 20);
    }
}
