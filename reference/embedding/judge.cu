/*
 * reference/embedding/judge.cu - the trusted judge of the embedding lab.
 *
 * Exact match: out[i*dim + j] must have the bit pattern of
 * weight[indices[i]*dim + j]. Both are regenerated on the GPU from the seed
 * element by element (the 19.7 GB table of the bigvocab case is never built).
 */
#include "judge_common.cuh"
#include "cases.h"

#include <math.h>

static __global__ void emb_compare(const float *got, size_t n, int dim, uint64_t seed_w,
                                   uint64_t seed_i, uint64_t vocab, struct jd_acc *acc)
{
    struct jd_local l;
    jd_local_init(&l);
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / (size_t)dim, j = e % (size_t)dim;
        uint64_t row = (uint64_t)gen_index(seed_i, i, vocab);
        float want = gen_f32_sym(seed_w, row * (uint64_t)dim + j), g = got[e];
        int unwritten = __float_as_uint(g) == JD_POISON_BITS;
        int bad = __float_as_uint(g) != __float_as_uint(want);
        double err = fabs((double)g - (double)want);
        jd_local_add(&l, e, err, want != 0 ? err / fabs((double)want) : err, bad, unwritten);
    }
    jd_local_flush(&l, acc);
}

static size_t emb_out_count(const struct lab_case_def *c)
{
    return (size_t)c->p[0] * (size_t)c->p[1];
}

static void emb_judge(const struct lab_case_def *c, uint64_t case_seed, const float *out,
                      size_t count, struct jd_result *r)
{
    int dim = (int)c->p[1];
    uint64_t vocab = (uint64_t)c->p[2], sw = gen_stream(case_seed, 0), si = gen_stream(case_seed, 1);
    struct jd_acc *acc;
    unsigned long long bad;
    float *got;

    JD_CUDA(cudaMalloc(&got, count * sizeof(float)));
    JD_CUDA(cudaMemcpy(got, out, count * sizeof(float), cudaMemcpyHostToDevice));
    acc = jd_acc_new();
    emb_compare<<<jd_grid(count), 256>>>(got, count, dim, sw, si, vocab, acc);
    jd_acc_take(acc, r, &bad);
    cudaFree(got);
    r->passed = bad == 0;
    if (!r->passed) {
        long long e = r->first_bad_index, i = e / dim, j = e % dim;
        uint64_t row = (uint64_t)gen_index(si, (uint64_t)i, vocab);
        uint64_t flat = row * (uint64_t)dim + (uint64_t)j;
        float want = gen_f32_sym(sw, flat);
        uint32_t bits;
        int len = 0;
        memcpy(&bits, &out[e], 4);
        if (r->unwritten > 0)
            len = snprintf(r->message, sizeof(r->message),
                           "%llu of %zu outputs were never written: your grid does not cover all "
                           "elements. ",
                           r->unwritten, count);
        if (bits == JD_POISON_BITS) {
            snprintf(r->message + len, sizeof(r->message) - len,
                     "out[%lld][%lld] was never written (expected weight[%llu][%lld] = %.9g)", i,
                     j, (unsigned long long)row, j, want);
        } else {
            const char *hint = "";
            /* A row offset computed in 32 bits reads weight[(row*dim) mod 2^32 + j]. */
            if (flat >= (1ull << 31) &&
                (gen_f32_sym(sw, (uint32_t)(row * (uint64_t)dim) + (uint64_t)j) == out[e] ||
                 gen_f32_sym(sw, (uint64_t)(uint32_t)flat) == out[e]))
                hint = ": indices[i]*dim does not fit in 32 bits here; compute the offset in "
                       "int64_t";
            snprintf(r->message + len, sizeof(r->message) - len,
                     "out[%lld][%lld] = %.9g but expected weight[indices[%lld] = %llu][%lld] = "
                     "%.9g%s",
                     i, j, out[e], i, (unsigned long long)row, j, want, hint);
        }
    }
}

static double emb_bytes(const struct lab_case_def *c)
{
    double num = (double)c->p[0], dim = (double)c->p[1];
    return num * dim * 4 * 2 + num * 8;   /* rows read + rows written + indices */
}

static double emb_flops(const struct lab_case_def *c)
{
    (void)c;
    return 0;
}

static const struct jd_lab JD_LAB = {"embedding", emb_out_count, emb_judge, emb_bytes, emb_flops};

#include "judge_common.cu"
