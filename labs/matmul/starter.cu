// Lab: tiled matrix multiply (SGEMM). Read README.md first.
//
// C = A * B, row-major: A is M x K, B is K x N, C is M x N, all device
// pointers to float. M, N, K are any sizes from 1 to 4096 (not only
// multiples of 16, 32 or 64). FP32 arithmetic: no TF32 tensor cores, no
// half precision, no cuBLAS. One default stream.
#include <cuda_runtime.h>
#include <stddef.h>

#define TILE 16

__global__ void matmul_kernel(const float *A, const float *B, float *C, int M, int N, int K)
{
    // TODO: load TILE x TILE tiles of A and B into shared memory (zero-fill
    // past the edges), __syncthreads(), accumulate, __syncthreads(), repeat
    // along K; write C[row][col] only when row < M and col < N.
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
