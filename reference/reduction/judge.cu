/*
 * reference/reduction/judge.cu - the trusted judge of the reduction lab.
 *
 * Reference: the sum of the n inputs in double, computed on the GPU from
 * the seed (the judge never reads the student's inputs), and the sum of
 * their squares. Tolerance (gen.cuh gen_reduction_tolerance, docs/labs.md,
 * the handout):
 *
 *     |got - ref| <= tau(n) * (|ref| + 3 sqrt(sum x_i^2)),
 *     tau(n) = 2^-23 * (2*log2(n) + sqrt(n)/8)
 *
 * 2*log2(n)*eps bounds a pairwise (tree) sum; sqrt(n)/8*eps covers float
 * atomicAdd of one partial per 64+ elements, whose rounding errors add up
 * like a random walk. On a one-sign case a sum missing 1% of the elements
 * fails at every n, and a float sum accumulated one element at a time
 * stalls (x + 0.75 == x once x passes 2^24) and fails. On a balanced case
 * (the timed ones) the noise of the elements a program skipped is many
 * tolerances wide: no statistic of n or of a sample predicts the sum.
 */
#include "judge_common.cuh"
#include "cases.h"

#include <math.h>

static __global__ void red_ref(size_t n, uint64_t seed, int32_t bias, double *partial)
{
    __shared__ double s[256], a[256];
    double sum = 0, sq_sum = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        double x = gen_f32_reduction(seed, i, bias);
        sum += x;
        sq_sum += x * x;
    }
    s[threadIdx.x] = sum;
    a[threadIdx.x] = sq_sum;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) {
            s[threadIdx.x] += s[threadIdx.x + k];
            a[threadIdx.x] += a[threadIdx.x + k];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[2 * blockIdx.x] = s[0];
        partial[2 * blockIdx.x + 1] = a[0];
    }
}

/* The exact-enough sum and sum of squares (double; partials added on the
 * host in a fixed order, so the reference is deterministic). */
static void red_reference(size_t n, uint64_t seed, int signs, double *sum, double *sq_sum)
{
    int blocks = 4096;
    double *d, *h = (double *)malloc(2 * blocks * sizeof(double));
    if (h == NULL)
        jd_die("out of memory");
    JD_CUDA(cudaMalloc(&d, 2 * blocks * sizeof(double)));
    red_ref<<<blocks, 256>>>(n, seed, gen_reduction_bias(seed, n, signs), d);
    JD_CUDA(cudaGetLastError());
    JD_CUDA(cudaMemcpy(h, d, 2 * blocks * sizeof(double), cudaMemcpyDeviceToHost));
    JD_CUDA(cudaFree(d));
    *sum = *sq_sum = 0;
    for (int b = 0; b < blocks; b++) {
        *sum += h[2 * b];
        *sq_sum += h[2 * b + 1];
    }
    free(h);
}

static size_t red_out_count(const struct lab_case_def *c)
{
    (void)c;
    return 1;
}

static void red_judge(const struct lab_case_def *c, uint64_t case_seed, const float *out,
                      size_t count, struct jd_result *r)
{
    size_t n = (size_t)c->p[0];
    double ref, sq_sum, tol, got = out[0], err;
    uint32_t bits;
    (void)count;
    memcpy(&bits, out, 4);
    red_reference(n, gen_stream(case_seed, 0), (int)c->p[1], &ref, &sq_sum);
    tol = gen_reduction_tolerance((double)n, ref, sq_sum);
    err = fabs(got - ref);
    r->max_abs_err = err;
    r->max_rel_err = ref != 0 ? err / fabs(ref) : err;
    r->first_bad_index = -1;
    r->unwritten = bits == JD_POISON_BITS;
    r->passed = 0;
    r->have_value = !r->unwritten;
    r->got = got;
    r->expected = ref;
    if (r->unwritten) {
        r->first_bad_index = 0;
        snprintf(r->message, sizeof(r->message),
                 "d_out[0] was never written (it still holds the harness's poison NaN)");
    } else if (isnan(got)) {
        r->first_bad_index = 0;
        snprintf(r->message, sizeof(r->message),
                 "d_out[0] is NaN: did you read past the end of d_in? The harness puts NaNs "
                 "right after the n inputs");
    } else if (isinf(got)) {
        r->first_bad_index = 0;
        snprintf(r->message, sizeof(r->message), "d_out[0] is infinite but expected %.9g", ref);
    } else if (!(err <= tol)) {
        int len;
        r->first_bad_index = 0;
        len = snprintf(r->message, sizeof(r->message),
                       "d_out[0] = %.9g but expected %.9g (error %.3g > tolerance %.3g)", got, ref,
                       err, tol);
        /* Why it is missing (a grid too small, a float32 total that
         * stopped growing, a 32-bit index) is the runner's bug
         * catalogue's to say (runner/feedback/hint.c): it sees every case. */
        if (ref != 0 && got / ref >= 0 && got / ref < 0.999)
            snprintf(r->message + len, sizeof(r->message) - len,
                     ": %.2f%% of the sum of the %zu elements is missing",
                     100 * (1 - got / ref), n);
        else if (ref != 0 && got / ref > 1.001)
            snprintf(r->message + len, sizeof(r->message) - len,
                     ": %.2f%% too much; are some elements added twice (a missing "
                     "__syncthreads(), an overlapping grid)?",
                     100 * (got / ref - 1));
        else if (ref != 0 && got / ref < 0)
            snprintf(r->message + len, sizeof(r->message) - len,
                     ": the sign is wrong; is this the sum of other inputs (a cached answer)?");
    } else {
        r->passed = 1;
    }
}

static double red_bytes(const struct lab_case_def *c)
{
    return 4.0 * (double)c->p[0];
}

static double red_flops(const struct lab_case_def *c)
{
    return (double)c->p[0];
}

static const struct jd_lab JD_LAB = {"reduction", red_out_count, red_judge, red_bytes, red_flops};

#include "judge_common.cu"
