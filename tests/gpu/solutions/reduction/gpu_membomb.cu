// expect: status=graded|runtime_error correctness=fail note="cudaMalloc of 1 GiB per call, never freed, until it fails: the harness refuses past 2 GiB, so the bomb cannot take the GPU from the jobs beside it; the answer is never written (runtime_error when the harness then finds the GPU full and the student holding 2 GiB)"
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    void *p;
    while (cudaMalloc(&p, (size_t)1 << 30) == cudaSuccess)
        cudaMemset(p, 0, (size_t)1 << 30);
}
