// expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no nohint=device-assert note="correct, but prints a device-assert line forged with Markdown (links, bold) on stderr: no device-assert hint without a failed case, and program_output is plain text (issue 26)"
#include <cuda_runtime.h>
#include <stdio.h>
#include <stddef.h>

__global__ void block_sum(const float *in, float *out, size_t n)
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
        atomicAdd(out, s[0]);
}

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n)
{
    static int said;
    if (!said++)
        fprintf(stderr, "[grader](http://evil.example/a):9: void k(): block: "
                        "[**0**](http://evil.example/b), thread: [_1_] Assertion "
                        "`[click](http://evil.example/c) **now**` failed.\a\033[2J\n");
    cudaMemset(d_out, 0, sizeof(float));
    block_sum<<<132 * 8, 256>>>(d_in, d_out, n);
}
