/*
 * reference/matmul/cublas.cu - the cuBLAS baseline: SGEMM in FP32 with
 * TF32 off (CUBLAS_DEFAULT_MATH never uses TF32 tensor cores for SGEMM;
 * CUBLAS_TF32_TENSOR_OP_MATH would), on the legacy default stream, timed
 * by the same harness as the students. Row-major C = A*B is column-major
 * C^T = B^T * A^T, so the operands are passed swapped.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    static cublasHandle_t handle;
    const float alpha = 1.0f, beta = 0.0f;
    if (handle == NULL) {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS ||
            cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "baseline-cublas: cublasCreate failed\n");
            abort();
        }
    }
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N) !=
        CUBLAS_STATUS_SUCCESS)
        fprintf(stderr, "baseline-cublas: cublasSgemm failed\n");
}
