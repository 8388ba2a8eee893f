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
        float x = gen_f32_reduction(s, i);
        double k = (double)x * 8388608.0;
        ok &= x >= 0.25f && x < 1.25f && k == floor(k);
    }
    check(ok, "reduction values: positive seed gives [0.25, 1.25) on a 2^-23 grid");
    s = gen_stream(gen_case_seed(top, "2^28"), 0);
    ok = 1;
    for (uint64_t i = 0; i < 1000; i++)
        ok &= gen_f32_reduction(s, i) <= -0.25f && gen_f32_reduction(s, i) > -1.25f;
    check(ok, "reduction values: top-bit seed gives all negative values");
    {
        double sum = 0;
        for (uint64_t i = 0; i < 100000; i++)
            sum += gen_f32_reduction(gen_stream(gen_case_seed(seed, "x"), 0), i);
        check(fabs(sum / 100000 - 0.75) < 0.01, "reduction values: mean 0.75");
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
