// expect: status=rejected symbol=cudaStreamCreateWithFlags note="work on a non-blocking side stream: stream creation is forbidden in the matmul lab"
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
    static cudaStream_t side;
    if (side == NULL)
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    mm<<<grid, block, 0, side>>>(A, B, C, M, N, K);   // no sync: would look instant to stream-0 events
}
