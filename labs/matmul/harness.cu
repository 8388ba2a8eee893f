/*
 * labs/matmul/harness.cu - the trusted harness of the matmul lab.
 * Linked with the student's object; see labs/common/harness_common.cu for the
 * command line and docs/formats.md for what it writes.
 *
 * Buffers (row-major): A (MxK, stream 0), B (KxN, stream 1), values in
 * [-1, 1) from gen_f32_sym; C (MxN), the output. Each is followed by a guard.
 */
#include "harness_common.cuh"
#include "cases.h"

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K);

static struct {
    float *a, *b, *c;
    int m, n, k;
} G;

static __global__ void mm_gen(float *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = gen_f32_sym(seed, i);
}

static __global__ void mm_verify(const float *p, size_t n, uint64_t seed, unsigned long long *bad)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c += __float_as_uint(p[i]) != __float_as_uint(gen_f32_sym(seed, i));
    if (c)
        atomicAdd(bad, c);
}

static void mm_regen(uint64_t case_seed)
{
    size_t na = (size_t)G.m * G.k, nb = (size_t)G.k * G.n;
    mm_gen<<<hc_grid(na), 256>>>(G.a, na, gen_stream(case_seed, 0));
    mm_gen<<<hc_grid(nb), 256>>>(G.b, nb, gen_stream(case_seed, 1));
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaDeviceSynchronize());
}

static int mm_setup(const struct lab_case_def *c, uint64_t case_seed)
{
    G.m = (int)c->p[0];
    G.n = (int)c->p[1];
    G.k = (int)c->p[2];
    if (hc_alloc((void **)&G.a, (size_t)G.m * G.k * sizeof(float), HC_GUARD_BITS) != 0 ||
        hc_alloc((void **)&G.b, (size_t)G.k * G.n * sizeof(float), HC_GUARD_BITS) != 0 ||
        hc_alloc((void **)&G.c, (size_t)G.m * G.n * sizeof(float), HC_POISON_BITS) != 0)
        return -1;
    mm_regen(case_seed);
    return 0;
}

static void mm_call(void)
{
    matmul(G.a, G.b, G.c, G.m, G.n, G.k);
}

static unsigned long long mm_inputs_modified(uint64_t case_seed)
{
    size_t na = (size_t)G.m * G.k, nb = (size_t)G.k * G.n;
    unsigned long long c = 0;
    HC_CUDA(cudaMemset(hc_dcounter, 0, sizeof(c)));
    mm_verify<<<hc_grid(na), 256>>>(G.a, na, gen_stream(case_seed, 0), hc_dcounter);
    mm_verify<<<hc_grid(nb), 256>>>(G.b, nb, gen_stream(case_seed, 1), hc_dcounter);
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaMemcpy(&c, hc_dcounter, sizeof(c), cudaMemcpyDeviceToHost));
    return c + hc_guard_damage(G.a) + hc_guard_damage(G.b);
}

static float *mm_output(size_t *count)
{
    *count = (size_t)G.m * G.n;
    return G.c;
}

static void mm_teardown(void)
{
    G.a = G.b = G.c = NULL;
}

static const struct hc_lab HC_LAB = {
    "matmul", mm_setup, mm_regen, mm_call, mm_inputs_modified, mm_output, mm_teardown,
};

#include "harness_common.cu"
