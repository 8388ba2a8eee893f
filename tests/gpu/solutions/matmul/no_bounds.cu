// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=bounds-check note="missing bounds checks in a 16x16 tiled kernel: wrong on shapes that are not multiples of 16"
#include <cuda_runtime.h>
#include <stddef.h>

#define T 16

__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float as[T][T], bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float sum = 0;
    for (int k0 = 0; k0 < K; k0 += T) {
        // BUG: no bounds checks: assumes M, N, K are multiples of 16
        as[threadIdx.y][threadIdx.x] = A[(size_t)row * K + k0 + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = B[(size_t)(k0 + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < T; k++)
            sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
        C[(size_t)row * N + col] = sum;
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
