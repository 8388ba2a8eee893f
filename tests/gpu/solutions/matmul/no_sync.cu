// expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no hint=missing-syncthreads note="missing the second __syncthreads() of the tile loop: a shared-memory race"
#include <cuda_runtime.h>
#include <stddef.h>

#define T 16

__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float as[T][T], bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float sum = 0;
    for (int k0 = 0; k0 < K; k0 += T) {
        as[threadIdx.y][threadIdx.x] = row < M && k0 + threadIdx.x < K ? A[(size_t)row * K + k0 + threadIdx.x] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = k0 + threadIdx.y < K && col < N ? B[(size_t)(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++)
            sum += as[threadIdx.y][k] * bs[k][threadIdx.x];
        // BUG: no __syncthreads() here: the next tile overwrites as/bs while slower warps still read them
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
