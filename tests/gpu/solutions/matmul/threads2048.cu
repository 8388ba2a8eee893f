// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=launch-limits note="2048 threads per block (64x32): every launch fails with invalid configuration"
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
    dim3 block(64, 32), grid((N + 63) / 64, (M + 31) / 32);   // BUG: 2048 threads per block
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
