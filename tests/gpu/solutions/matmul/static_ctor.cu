// expect: status=rejected note="static constructor: code that runs before main, before the harness owns the process"
#include <cuda_runtime.h>
#include <stddef.h>

static float *warm;

// CHEAT attempt: runs before the harness's main() (e.g. to pre-compute or tamper).
__attribute__((constructor)) static void before_main(void)
{
    cudaMalloc(&warm, 1 << 20);
}

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
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm<<<grid, block>>>(A, B, C, M, N, K);
}
