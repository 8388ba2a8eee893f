// expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=grid-coverage note="grid too small: N/16 and M/16 round down, the last partial tiles are never computed"
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0;
        for (int k = 0; k < K; k++)
            sum += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = sum;
    }
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(16, 16), grid(N / 16 > 0 ? N / 16 : 1, M / 16 > 0 ? M / 16 : 1);   // BUG: rounds down
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
