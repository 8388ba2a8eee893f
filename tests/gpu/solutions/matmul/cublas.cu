// expect: status=rejected symbol=cublasCreate_v2 note="calls cuBLAS, which the matmul lab forbids"
#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    static cublasHandle_t h;
    const float one = 1, zero = 0;
    if (h == NULL)
        cublasCreate(&h);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
}
