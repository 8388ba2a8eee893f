/*
 * reduction_estimate.c - built and run by tests/runner/python_estimate.t
 * (the host's C compiler, labs/common/gen.cuh as host C): for one case
 * stream seed, n and "signs", the exact sum of the reduction lab's inputs
 * (double), the judge's tolerance (gen_reduction_tolerance), and the error
 * of estimators that read k of the n elements (evenly spaced):
 *   n-only  k = 0: n times the mean bias over all seeds, given the sign
 *   mean    n times the mean of the k elements read
 *   model   the k elements read, plus the unread ones at the sample mean
 *           clamped to the range the bias can take (the best guess from
 *           what the generator's source says)
 *   oracle  the k elements read, plus the unread ones at the true mean (an
 *           estimator told the seed's bias: a bound on every estimator
 *           that does not read the unread elements)
 * Prints one line per (estimator, k): "name k err tol".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "gen.cuh"

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    uint64_t st = strtoull(argv[1], NULL, 16);
    uint64_t n = strtoull(argv[2], NULL, 10);
    int signs = atoi(argv[3]);
    int32_t bias = gen_reduction_bias(st, n, signs);
    double sum = 0, sumsq = 0;
    for (uint64_t i = 0; i < n; i++) {
        double x = gen_f32_reduction(st, i, bias);
        sum += x;
        sumsq += x * x;
    }
    double tol = gen_reduction_tolerance((double)n, sum, sumsq);
    double sign = (st & GEN_TOP_BIT) ? -1 : 1;
    /* The mean over all seeds: 0.75 for one sign; 56 * 2^22 / isqrt(n) * 2^-23
     * for balanced (R uniform in [40, 72)). */
    double mu_all = signs == 2 ? 56.0 * 4194304.0 / (double)gen_isqrt(n) / 8388608.0 : 0.75;
    double mu_lo = signs == 2 ? 40.0 * 4194304.0 / (double)gen_isqrt(n) / 8388608.0 : 0.25;
    double mu_hi = signs == 2 ? 72.0 * 4194304.0 / (double)gen_isqrt(n) / 8388608.0 : 1.25;
    double mu_true = bias == GEN_ONE_SIGN ? 0.75 * sign : bias / 8388608.0;
    printf("n-only 0 %.17g %.17g\n", sign * (double)n * mu_all - sum, tol);
    for (uint64_t k = 1024; k <= n / 2; k *= 4) {
        double s = 0;
        for (uint64_t j = 0; j < k; j++)
            s += gen_f32_reduction(st, j * (n / k), bias);
        double m = s / (double)k, unread = (double)(n - k);
        double a = fabs(m) < mu_lo ? mu_lo : fabs(m) > mu_hi ? mu_hi : fabs(m);
        printf("mean %llu %.17g %.17g\n", (unsigned long long)k, m * (double)n - sum, tol);
        printf("model %llu %.17g %.17g\n", (unsigned long long)k,
               s + unread * (m < 0 ? -a : a) - sum, tol);
        if (bias != GEN_ONE_SIGN)
            printf("oracle %llu %.17g %.17g\n", (unsigned long long)k, s + unread * mu_true - sum,
                   tol);
    }
    return 0;
}
