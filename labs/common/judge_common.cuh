/*
 * judge_common.cuh - what every lab's trusted judge shares
 * (reference/<lab>/judge.cu includes this, defines `static const struct
 * jd_lab JD_LAB`, then includes judge_common.cu, which holds main()).
 *
 *   judge --seed HEX --channel FILE [--cases a,b,c] [--device FILE]
 *
 * The channel was written by a process that ran student code: every length,
 * count, name and number in it is hostile input. Nothing in it can crash the
 * judge or make it read past what it allocated; a record that does not match
 * the lab's cases fails that case with a message. The judge regenerates every
 * input from the seed and computes references itself (on the GPU).
 */
#ifndef CUGRADE_JUDGE_COMMON_CUH
#define CUGRADE_JUDGE_COMMON_CUH

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>

#include "gen.cuh"

#define JD_POISON_BITS 0x7fdeadedu   /* = HC_POISON_BITS of the harness */

/* The verdict on one case's output. */
struct jd_result {
    int passed;
    double max_abs_err, max_rel_err;
    long long first_bad_index;        /* -1 if none */
    unsigned long long unwritten;     /* outputs still holding the poison */
    /* A one-value output (the reduction's sum): the answer and the
     * reference, sent as "got"/"expected" for the runner's bug catalogue
     * (runner/feedback/hint.c); have_value 0 for other labs. */
    int have_value;
    double got, expected;
    char message[600];
};

struct jd_lab {
    const char *name;
    /* Output elements (f32) the harness must send for case c. */
    size_t (*out_count)(const struct lab_case_def *c);
    /* Judge count floats of output (host memory) against the reference for
     * case c generated from case_seed. Fills r (passed, errors, message). */
    void (*judge)(const struct lab_case_def *c, uint64_t case_seed, const float *out,
                  size_t count, struct jd_result *r);
    /* Bytes a perfect implementation must move, and its flops. */
    double (*bytes)(const struct lab_case_def *c);
    double (*flops)(const struct lab_case_def *c);
};

static void jd_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define JD_CUDA(call)                                                                   \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            jd_die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    } while (0)

/* A grid of 256-thread blocks for a grid-stride loop over n elements. */
static __attribute__((unused)) int jd_grid(size_t n)
{
    size_t b = (n + 255) / 256;
    return (int)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

/* Device-side accumulators for comparison kernels. */
struct jd_acc {
    unsigned long long unwritten, bad, first_bad;   /* first_bad: ~0ull if none */
    unsigned long long max_abs_bits, max_rel_bits;   /* doubles >= 0 as bits */
};

/* A thread's share of a comparison: kept in registers over a grid-stride
 * loop, flushed with one set of atomics at the end. */
struct jd_local {
    double max_abs, max_rel;
    unsigned long long unwritten, bad, first_bad;
};

static __device__ void jd_local_init(struct jd_local *l)
{
    l->max_abs = l->max_rel = 0;
    l->unwritten = l->bad = 0;
    l->first_bad = ~0ull;
}

/* One element: err and rel are >= 0, or NaN/inf (counted as infinite). */
static __device__ void jd_local_add(struct jd_local *l, unsigned long long i, double err,
                                    double rel, int bad, int unwritten)
{
    if (!(err >= 0))
        err = INFINITY;
    if (!(rel >= 0))
        rel = INFINITY;
    if (!unwritten) {
        l->max_abs = fmax(l->max_abs, err);
        l->max_rel = fmax(l->max_rel, rel);
    }
    l->unwritten += unwritten != 0;
    if (bad || unwritten) {
        l->bad++;
        if (i < l->first_bad)
            l->first_bad = i;
    }
}

static __device__ void jd_local_flush(const struct jd_local *l, struct jd_acc *a)
{
    if (l->max_abs > 0)
        atomicMax(&a->max_abs_bits, (unsigned long long)__double_as_longlong(l->max_abs));
    if (l->max_rel > 0)
        atomicMax(&a->max_rel_bits, (unsigned long long)__double_as_longlong(l->max_rel));
    if (l->unwritten)
        atomicAdd(&a->unwritten, l->unwritten);
    if (l->bad) {
        atomicAdd(&a->bad, l->bad);
        atomicMin(&a->first_bad, l->first_bad);
    }
}

/* A zeroed device accumulator (first_bad = none). Caller frees with jd_acc_take. */
static __attribute__((unused)) struct jd_acc *jd_acc_new(void)
{
    struct jd_acc h, *d;
    memset(&h, 0, sizeof(h));
    h.first_bad = ~0ull;
    JD_CUDA(cudaMalloc(&d, sizeof(h)));
    JD_CUDA(cudaMemcpy(d, &h, sizeof(h), cudaMemcpyHostToDevice));
    return d;
}

/* Wait for the comparison, copy the accumulator into r's fields, free d. */
static __attribute__((unused)) void jd_acc_take(struct jd_acc *d, struct jd_result *r, unsigned long long *bad)
{
    struct jd_acc h;
    JD_CUDA(cudaGetLastError());
    JD_CUDA(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost));
    JD_CUDA(cudaFree(d));
    memcpy(&r->max_abs_err, &h.max_abs_bits, sizeof(double));
    memcpy(&r->max_rel_err, &h.max_rel_bits, sizeof(double));
    r->unwritten = h.unwritten;
    r->first_bad_index = h.first_bad == ~0ull ? -1 : (long long)h.first_bad;
    *bad = h.bad;
}

#endif
