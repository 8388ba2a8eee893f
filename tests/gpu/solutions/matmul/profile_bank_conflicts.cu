// expect: status=graded correctness=pass sanitizer=clean tier=any flagged=no profile=bank_conflicts@19 hint=bank-conflicts after=all note="correct 32x32 tiles, but B's tile is stored transposed and read down a column: the 32 threads of a warp hit one bank (32-way conflicts), which the profiling hint names with the number; its worst line is 19, the read bt[threadIdx.x][k]"
#include <cuda_runtime.h>
#include <stddef.h>

#define T 32

__global__ void mm_bank(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float as[T][T], bt[T][T]; /* bt[c][k] = B[k0 + k][col0 + c] */
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float sum = 0;
    for (int k0 = 0; k0 < K; k0 += T) {
        as[threadIdx.y][threadIdx.x] =
            row < M && k0 + threadIdx.x < K ? A[(size_t)row * K + k0 + threadIdx.x] : 0.0f;
        bt[threadIdx.x][threadIdx.y] =
            k0 + threadIdx.y < K && col < N ? B[(size_t)(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; k++)
            sum += as[threadIdx.y][k] * bt[threadIdx.x][k];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    mm_bank<<<grid, block>>>(A, B, C, M, N, K);
}
