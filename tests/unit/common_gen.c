/*
 * common_gen.c - host-side tests of labs/common/gen.cuh, the input generator
 * the harness, the judge and the CPU baseline must agree on bit for bit.
 * TAP output.
 */
#include "labs/common/gen.cuh"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/tap.h"

int main(void)
{
    uint64_t s, seed = 0x0123456789abcdefull, top = 0x8123456789abcdefull;
    int ok;

    /* splitmix64's finalizer of 0 and 1: fixed values (a change here changes
     * every input and breaks cached baselines). */
    check(gen_mix64(0) == 0 && gen_mix64(1) == 0x5692161d100b05e5ull, "gen_mix64 known values");
    check(gen_u64(seed, 7) == gen_u64(seed, 7) && gen_u64(seed, 7) != gen_u64(seed, 8) &&
              gen_u64(seed, 7) != gen_u64(seed + 1, 7),
          "gen_u64 is a function of (seed, index)");

    check(gen_case_seed(seed, "1000") != gen_case_seed(seed, "100") &&
              gen_case_seed(seed, "1000") == gen_case_seed(seed, "1000"),
          "case seeds differ by name");
    check((gen_case_seed(top, "x") >> 63) == 1 && (gen_case_seed(seed, "x") >> 63) == 0 &&
              (gen_stream(gen_case_seed(top, "x"), 3) >> 63) == 1,
          "derived seeds keep the run seed's top bit");
    check((gen_recheck_seed(seed) >> 63) == 1 && (gen_recheck_seed(top) >> 63) == 0 &&
              (gen_recheck_seed(seed) & ~GEN_TOP_BIT) != (seed & ~GEN_TOP_BIT),
          "the re-check seed flips the top bit and changes the rest");

    s = gen_stream(gen_case_seed(seed, "2^28"), 0);
    ok = 1;
    for (uint64_t i = 0; i < 200000; i++) {
        float x = gen_f32_reduction(s, i, GEN_ONE_SIGN);
        double k = (double)x * 8388608.0;
        ok &= x >= 0.25f && x < 1.25f && k == floor(k);
    }
    check(ok, "reduction values: positive seed gives [0.25, 1.25) on a 2^-23 grid");
    s = gen_stream(gen_case_seed(top, "2^28"), 0);
    ok = 1;
    for (uint64_t i = 0; i < 1000; i++)
        ok &= gen_f32_reduction(s, i, GEN_ONE_SIGN) <= -0.25f && gen_f32_reduction(s, i, GEN_ONE_SIGN) > -1.25f;
    check(ok, "reduction values: top-bit seed gives all negative values");
    {
        double sum = 0;
        for (uint64_t i = 0; i < 100000; i++)
            sum += gen_f32_reduction(gen_stream(gen_case_seed(seed, "x"), 0), i, GEN_ONE_SIGN);
        check(fabs(sum / 100000 - 0.75) < 0.01, "reduction values: mean 0.75");
    }
    check(gen_reduction_bias(seed, 1 << 28, 1) == GEN_ONE_SIGN &&
              gen_reduction_bias(seed, 1 << 28, 0) == GEN_ONE_SIGN,
          "a one-sign case has no bias");
    {
        /* balanced: bias R * 2^22 / sqrt(n), R in [40, 72), the seed's sign */
        int in_range = 1, pos = 0, neg = 0;
        for (uint64_t j = 0; j < 2000; j++) {
            uint64_t st = gen_stream(gen_case_seed(j * 0x9e3779b97f4a7c15ull, "2^28"), 0);
            int32_t b = gen_reduction_bias(st, 1 << 28, 2);
            int32_t m = b < 0 ? -b : b;
            in_range &= m >= (40 << 22) / 16384 && m < (72 << 22) / 16384 &&
                        (b < 0) == (int)(st >> 63);
            pos += b > 0;
            neg += b < 0;
        }
        check(in_range && pos > 800 && neg > 800,
              "balanced bias: |b| in [40, 72) * 2^22 / sqrt(n), its sign the seed's top bit");
        check(gen_reduction_bias(seed, 1, 2) == (1 << 22) && gen_reduction_bias(top, 1, 2) == -(1 << 22),
              "balanced bias of a tiny n is capped at 2^22 (values stay below 2^24 * 2^-23)");
        check(gen_isqrt(0) == 0 && gen_isqrt(15) == 3 && gen_isqrt(16) == 4 &&
                  gen_isqrt(2500000000ull) == 50000 && gen_isqrt(2499999999ull) == 49999 &&
                  gen_isqrt(1ull << 34) == 1ull << 17,
              "gen_isqrt is floor(sqrt(n))");
    }
    {
        uint64_t sp = gen_stream(gen_case_seed(seed, "2^26"), 0), sn = gen_stream(gen_case_seed(top, "2^26"), 0);
        int32_t bp = gen_reduction_bias(sp, 1 << 26, 2), bn = gen_reduction_bias(sn, 1 << 26, 2);
        double sum_p = 0, sum_n = 0, sq = 0;
        int grid = 1, pneg = 0;
        for (uint64_t i = 0; i < 1000000; i++) {
            float x = gen_f32_reduction(sp, i, bp);
            double k = (double)x * 8388608.0;
            grid &= k == floor(k) && fabs(x) < 2.0f;
            pneg += x < 0;
            sum_p += x;
            sq += (double)x * x;
            sum_n += gen_f32_reduction(sn, i, bn);
        }
        /* mean b * 2^-23 (about 3e-3), noise sd 1/sqrt(3): the mean of 1e6 is
         * b * 2^-23 +- 6e-4 */
        check(grid && pneg > 450000 && pneg < 500000,
              "balanced values: both signs, on the 2^-23 grid, |x| < 2");
        check(fabs(sum_p / 1e6 - bp / 8388608.0) < 3e-3 && sum_p > 0 && sum_n < 0,
              "balanced values: mean b * 2^-23, the seed's sign");
        check(fabs(sq / 1e6 - 1.0 / 3) < 0.01, "balanced values: noise variance 1/3");
    }
    {
        /* The tolerance of a one-sign case is tau(n) * sum|x| (what it was),
         * to within 4 / sqrt(n) of it. */
        double n = 1 << 20, sum = 0.75 * n, sumsq = n * (0.75 * 0.75 + 1.0 / 12);
        double tau = ldexp(1.0, -23) * (2 * 20 + 1024.0 / 8), old = tau * sum;
        double t = gen_reduction_tolerance(n, sum, sumsq);
        check(t > old && t < old * (1 + 4.0 / 1024), "one-sign tolerance: tau(n) * sum|x|");
        check(gen_reduction_tolerance(n, -sum, sumsq) == t, "the tolerance takes |sum|");
    }
    ok = 1;
    {
        int neg = 0;
        for (uint64_t i = 0; i < 100000; i++) {
            float x = gen_f32_sym(seed, i);
            ok &= x >= -1.0f && x < 1.0f;
            neg += x < 0;
        }
        check(ok && neg > 49000 && neg < 51000, "symmetric values in [-1, 1), half negative");
    }
    ok = 1;
    for (uint64_t i = 0; i < 100000; i++)
        ok &= gen_index(seed, i, 1200000) >= 0 && gen_index(seed, i, 1200000) < 1200000 &&
              gen_index(seed, i, 1) == 0;
    check(ok, "indices in [0, range)");

    check(gen_seed_parse("0x1F", &s) == 0 && s == 31, "seed parse: 0x prefix");
    check(gen_seed_parse("ffffffffffffffff", &s) == 0 && s == ~0ull, "seed parse: 16 digits");
    check(gen_seed_parse("1ffffffffffffffff", &s) != 0, "seed parse: 17 digits refused");
    check(gen_seed_parse("", &s) != 0 && gen_seed_parse("0x", &s) != 0 &&
              gen_seed_parse("12g", &s) != 0,
          "seed parse: empty or non-hex refused");
    return failures ? 1 : 0;
}
