// expect: status=graded correctness=pass sanitizer=clean tier="within 2x of cuBLAS" flagged=no note="correct and fast: 128x128 tiles, 8x8 per thread, float4 shared reads"
#include <cuda_runtime.h>
#include <stddef.h>

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define THREADS 256
#define PAD 4

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
matmul_opt_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                  int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN + PAD];
    const int tid = threadIdx.x, tr = tid / (BN / TN), tc = tid % (BN / TN);
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    float acc[TM][TN];
    float ra[TM], rb[TN];

#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (VEC) {
            /* A tile: 128 rows x 8 k = 256 float4, one per thread. */
            int r = tid / 2, c = (tid % 2) * 4, gr = bm + r, gc = k0 + c;
            float4 v = make_float4(0, 0, 0, 0);
            if (gr < M && gc < K)   /* K % 4 == 0: all four are in range */
                v = *(const float4 *)&A[(size_t)gr * K + gc];
            As[c + 0][r] = v.x;
            As[c + 1][r] = v.y;
            As[c + 2][r] = v.z;
            As[c + 3][r] = v.w;
            /* B tile: 8 k x 128 cols = 256 float4. */
            r = tid / 32;
            c = (tid % 32) * 4;
            gr = k0 + r;
            gc = bn + c;
            v = make_float4(0, 0, 0, 0);
            if (gr < K && gc < N)   /* N % 4 == 0 */
                v = *(const float4 *)&B[(size_t)gr * N + gc];
            *(float4 *)&Bs[r][c] = v;
        } else {
#pragma unroll
            for (int l = 0; l < (BM * BK) / THREADS; l++) {
                int idx = tid + l * THREADS, r = idx / BK, c = idx % BK;
                int gr = bm + r, gc = k0 + c;
                As[c][r] = gr < M && gc < K ? A[(size_t)gr * K + gc] : 0.0f;
            }
#pragma unroll
            for (int l = 0; l < (BK * BN) / THREADS; l++) {
                int idx = tid + l * THREADS, r = idx / BN, c = idx % BN;
                int gr = k0 + r, gc = bn + c;
                Bs[r][c] = gr < K && gc < N ? B[(size_t)gr * N + gc] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float4 a0 = *(const float4 *)&As[k][tr * TM], a1 = *(const float4 *)&As[k][tr * TM + 4];
            float4 b0 = *(const float4 *)&Bs[k][tc * TN], b1 = *(const float4 *)&Bs[k][tc * TN + 4];
            ra[0] = a0.x, ra[1] = a0.y, ra[2] = a0.z, ra[3] = a0.w;
            ra[4] = a1.x, ra[5] = a1.y, ra[6] = a1.z, ra[7] = a1.w;
            rb[0] = b0.x, rb[1] = b0.y, rb[2] = b0.z, rb[3] = b0.w;
            rb[4] = b1.x, rb[5] = b1.y, rb[6] = b1.z, rb[7] = b1.w;
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; i++) {
        int r = bm + tr * TM + i;
        if (r >= M)
            break;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            int c = bn + tc * TN + j;
            if (c < N)
                C[(size_t)r * N + c] = acc[i][j];
        }
    }
}

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    bool vec = K % 4 == 0 && N % 4 == 0 && ((size_t)A % 16) == 0 && ((size_t)B % 16) == 0;
    if (vec)
        matmul_opt_kernel<true><<<grid, THREADS>>>(A, B, C, M, N, K);
    else
        matmul_opt_kernel<false><<<grid, THREADS>>>(A, B, C, M, N, K);
}
