/*
 * reference/matmul/naive.cu - one thread per element of C, a plain loop over
 * k reading A and B from global memory. The lab's "naive" baseline.
 */
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void matmul_naive_kernel(const float *A, const float *B, float *C, int M, int N,
                                    int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0;
    if (row >= M || col >= N)
        return;
    for (int k = 0; k < K; k++)
        sum += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = sum;
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    matmul_naive_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
