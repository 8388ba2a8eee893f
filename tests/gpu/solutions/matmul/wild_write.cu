// expect: status=runtime_error correctness=fail sanitizer=dirty tier=none flagged=no note="a write 1 TiB past C: an illegal address breaks the context (runtime_error naming the case); memcheck, which ran beside the check, says where"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;
    float sum = 0;
    for (int k = 0; k < K; k++)
        sum += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = sum;
    // BUG: a stray debugging write, far outside any allocation
    if (row == 0 && col == 0)
        C[(size_t)1 << 38] = sum;
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
