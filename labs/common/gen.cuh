/*
 * gen.cuh - the counter-based input generator shared by the harness (device),
 * the judge (device) and the CPU baseline (host C or C++).
 *
 * Every input element is a pure function of (seed, index): no state, no
 * order, so the 8.6 GB reduction input is generated on the GPU in one pass,
 * the judge regenerates exactly the same values without ever reading the
 * student's process, and a host program gets bit-identical floats (every
 * value is an integer times a power of two, exact in float: no FMA or
 * rounding-mode difference between host and device can change a bit).
 *
 * Seeds: the run seed (64 bits, secret, from the runner) -> one seed per case
 * (gen_case_seed, mixing in the case name) -> one stream per buffer
 * (gen_stream). The top bit of every derived seed is the run seed's top bit;
 * gen_recheck_seed flips it. The reduction lab takes the sign of its values
 * from that bit, so the timed inputs and the re-check inputs always have sums
 * of opposite sign and a cached answer can never pass the re-check.
 */
#ifndef CUGRADE_GEN_CUH
#define CUGRADE_GEN_CUH

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GEN_FN static inline __host__ __device__
#else
#define GEN_FN static inline
#endif

#define GEN_TOP_BIT 0x8000000000000000ull
#define GEN_RECHECK_KEY 0x5245434845434b21ull   /* "RECHECK!" */

/* splitmix64's finalizer: a bijection on 64 bits with full avalanche. */
GEN_FN uint64_t gen_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* The 64 random bits of element i of the stream seeded by seed. */
GEN_FN uint64_t gen_u64(uint64_t seed, uint64_t i)
{
    return gen_mix64(seed ^ gen_mix64(i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
}

/* Keep the top bit of parent, take the other 63 from h. */
GEN_FN uint64_t gen__keep_top(uint64_t parent, uint64_t h)
{
    return (h & ~GEN_TOP_BIT) | (parent & GEN_TOP_BIT);
}

/* The seed of one case: the run seed mixed with the case name (FNV-1a). */
GEN_FN uint64_t gen_case_seed(uint64_t run_seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *name; name++) {
        h ^= (unsigned char)*name;
        h *= 0x100000001b3ull;
    }
    return gen__keep_top(run_seed, gen_mix64(run_seed ^ gen_mix64(h)));
}

/* The seed of buffer k (0 = first input, 1 = second...) of a case. */
GEN_FN uint64_t gen_stream(uint64_t case_seed, uint64_t k)
{
    return gen__keep_top(case_seed, gen_mix64(case_seed + (k + 1) * 0xd1b54a32d192ed03ull));
}

/* The seed of the inputs used to re-check timed outputs: unpredictable
 * without the run seed, top bit flipped. */
GEN_FN uint64_t gen_recheck_seed(uint64_t run_seed)
{
    return (gen_mix64(run_seed ^ GEN_RECHECK_KEY) & ~GEN_TOP_BIT) | (~run_seed & GEN_TOP_BIT);
}

/* A float in [-1, 1) on a grid of 2^-23: (k - 2^23) * 2^-23, k a 24-bit
 * integer. Used for matmul and embedding values. */
GEN_FN float gen_f32_sym(uint64_t seed, uint64_t i)
{
    int32_t k = (int32_t)(gen_u64(seed, i) >> 40) - (1 << 23);
    return (float)k * (1.0f / 8388608.0f);
}

/* The reduction lab's values. A case of lab.json has "signs": 1 or 2.
 *
 * signs 1 (one sign): s * (k + 2^21) * 2^-23 with k a 23-bit integer, so |x|
 * is in [0.25, 1.25) (mean 0.75) and the sign s is the seed's top bit. The
 * sum is well conditioned (|sum| = sum of |x|): losing even a small share of
 * the elements moves it far outside the tolerance, and a float32 total
 * accumulated one element at a time stalls (the 2.5e9 case teaches both).
 * But n * 0.75 predicts that sum to a few standard deviations, far inside
 * the tolerance of a large n: a case a submission could answer from n alone.
 *
 * signs 2 (balanced): (k - 2^23 + b) * 2^-23 with k a 24-bit integer: noise
 * uniform in [-1, 1) (sd 1/sqrt(3)) around a small mean b * 2^-23. The bias
 * b = s * R * 2^22 / isqrt(n), R in [40, 72) from the seed (gen_reduction_bias),
 * puts the mean's share of the sum at R * sqrt(3)/2 = 35 to 62 standard
 * deviations of the noise's share: the sum still has the sign s, so a
 * re-check (top bit flipped) has the opposite sign, and a sum missing a share
 * of the elements is short by about that share. The noise of the elements a
 * program did not read, sd sqrt(unread / 3), is what no statistic predicts:
 * at 2^28 even an estimator told b exactly, reading half the elements,
 * misses the tolerance (gen_reduction_tolerance) by about 40 tolerances
 * (docs/python.md, "Inputs no statistic predicts"). The timed cases are
 * balanced. Every value is an integer below 2^24 times 2^-23: exact. */
#define GEN_ONE_SIGN INT32_MIN   /* gen_reduction_bias of a signs-1 case */

/* floor(sqrt(n)), exact, integers only (host and device agree). */
GEN_FN uint64_t gen_isqrt(uint64_t n)
{
    uint64_t r = 0;
    for (int b = 31; b >= 0; b--) {
        uint64_t t = r | (1ull << b);
        if (t * t <= n)
            r = t;
    }
    return r;
}

/* The bias of a case's values (see above): GEN_ONE_SIGN for signs 1. */
GEN_FN int32_t gen_reduction_bias(uint64_t seed, uint64_t n, int signs)
{
    if (signs != 2)
        return GEN_ONE_SIGN;
    uint64_t r = 40 + (gen_mix64(seed ^ 0x6d65616e6d65616eull) >> 58) % 32;  /* "meanmean" */
    uint64_t q = n > 0 ? gen_isqrt(n) : 1;
    uint64_t b = (r << 22) / q;
    if (b > (1ull << 22))
        b = 1ull << 22; /* a tiny n: keep |k - 2^23 + b| < 2^24 */
    return (seed & GEN_TOP_BIT) ? -(int32_t)b : (int32_t)b;
}

/* Element i of a reduction case whose bias is bias (gen_reduction_bias). */
GEN_FN float gen_f32_reduction(uint64_t seed, uint64_t i, int32_t bias)
{
    if (bias == GEN_ONE_SIGN) {
        int32_t k = (int32_t)(gen_u64(seed, i) >> 41) + (1 << 21);
        float x = (float)k * (1.0f / 8388608.0f);
        return (seed & GEN_TOP_BIT) ? -x : x;
    }
    int32_t k = (int32_t)(gen_u64(seed, i) >> 40) - (1 << 23) + bias;
    return (float)k * (1.0f / 8388608.0f);
}

/* The judge's tolerance for a reduction sum (docs/labs.md): from the
 * reference sum and sum of squares (in double) of the n inputs,
 *     tau(n) * (|sum| + 3 * sqrt(sumsq)),  tau(n) = 2^-23 (2 log2 n + sqrt(n)/8).
 * |sum| + 3 sqrt(sumsq) is the size the running totals of any natural
 * summation order reach (the sum itself, plus a 3-sigma excursion of the
 * noise); the rounding error of one addition is at most 2^-24 of it.
 * 2 log2(n) tau bounds a pairwise (tree) sum; sqrt(n)/8 covers a float32
 * atomicAdd of one partial per 64 or more elements, whose errors add up like
 * a random walk. For a one-sign case this is tau(n) * sum|x| to within
 * 4/sqrt(n): the same as before balanced cases existed. */
GEN_FN double gen_reduction_tolerance(double n, double sum, double sumsq)
{
    double tau = ldexp(1.0, -23) * (2 * log2(n > 1 ? n : 1) + sqrt(n) / 8);
    return tau * (fabs(sum) + 3 * sqrt(sumsq));
}

/* An index in [0, range) (range >= 1), nearly uniform (64-bit modulo). */
GEN_FN int64_t gen_index(uint64_t seed, uint64_t i, uint64_t range)
{
    return (int64_t)(gen_u64(seed, i) % range);
}

/* One case of a lab, as generated from lab.json into cases.h by
 * labs/common/gen-cases.py. p[] holds the lab's parameters in a fixed order:
 * reduction {n, signs}, matmul {M, N, K}, embedding {num_indices, dim, vocab}. */
struct lab_case_def {
    const char *name;
    int timing;
    long long p[4];
};

/* Parse a run seed of 1 to 32 hex digits ("0x" optional): the server sends
 * 128 bits. Up to 16 digits the seed is the number itself (so every seed
 * used before, e.g. the baselines' fixed one, makes the same inputs); with
 * 17 to 32 digits the high part is folded in: lo ^ gen_mix64(hi ^ key),
 * so every digit changes the inputs. The generator's state stays 64 bits
 * (2^64 input sets are far beyond guessing). The harness, the judge and the
 * CPU baseline all parse with this, so they agree. Returns 0 or -1. */
GEN_FN int gen_seed_parse_wide(const char *s, uint64_t *out)
{
    uint64_t hi = 0, lo = 0;
    int n = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    for (; *s; s++, n++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            return -1;
        if (n == 32)
            return -1;
        hi = hi << 4 | lo >> 60;
        lo = lo << 4 | (uint64_t)d;
    }
    if (n == 0)
        return -1;
    *out = n <= 16 ? lo : lo ^ gen_mix64(hi ^ 0x5eed5eed5eed5eedull);
    return 0;
}

/* Parse a seed written as hex ("0x" optional, 1-16 digits): the 64-bit form
 * of gen_seed_parse_wide, which gives the same value for such a seed.
 * Returns 0 or -1 (also for 17 or more digits). */
GEN_FN int gen_seed_parse(const char *s, uint64_t *out)
{
    const char *d = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? s + 2 : s;
    int n = 0;
    while (d[n])
        n++;
    if (n > 16)
        return -1;
    return gen_seed_parse_wide(s, out);
}

#endif
