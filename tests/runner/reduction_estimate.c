/*
 * reduction_estimate.c - built and run by tests/runner/python_estimate.t
 * (the host's C compiler, labs/common/gen.cuh as host C): for one case seed
 * and n, the exact sum of the reduction lab's inputs (double), the judge's
 * tolerance tau(n) * sum|x| (reference/reduction/judge.cu), and the error of
 * estimators that read k of the n elements:
 *   mean     n times the mean of the k elements read (evenly spaced)
 *   model    the heavy elements found exactly, the unread ones at their
 *            expected count and size, the bulk from the mean of the bulk
 *            elements read (the best guess without the seed)
 *   n-only   k = 0: n times the generator's expected mean over all seeds
 * Prints one line per (estimator, k): "name k err tol".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "gen.cuh"

static double tau(double n)
{
    return ldexp(1.0, -23) * (2 * log2(n > 1 ? n : 1) + sqrt(n) / 8);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    uint64_t st = strtoull(argv[1], NULL, 16);
    uint64_t n = strtoull(argv[2], NULL, 10);
    double sum = 0, mag = 0;
    for (uint64_t i = 0; i < n; i++) {
        double x = gen_f32_reduction(st, i);
        sum += x;
        mag += fabs(x);
    }
    double tol = tau((double)n) * mag, sign = (st & GEN_TOP_BIT) ? -1 : 1;
    double ph = ldexp(1.0, -GEN_HEAVY_BITS), eh = 1.5 * 1048576.0 - 0.0625;
    /* Over all seeds: bulk mean 0.875 (b uniform in [2^21, 2^22)). */
    printf("n-only 0 %.17g %.17g\n", sign * n * ((1 - ph) * 0.875 + ph * eh) - sum, tol);
    for (uint64_t k = 1024; k <= n / 2; k *= 4) {
        double s = 0, bulk = 0, heavy = 0;
        uint64_t nb = 0, nh = 0;
        for (uint64_t j = 0; j < k; j++) {
            double x = gen_f32_reduction(st, j * (n / k));
            s += x;
            if (fabs(x) >= 1048576.0)
                heavy += x, nh++;
            else
                bulk += x, nb++;
        }
        printf("mean %llu %.17g %.17g\n", (unsigned long long)k, s * ((double)n / k) - sum, tol);
        double unread = (double)(n - k);
        double model = heavy + (nb ? bulk / nb : 0) * (double)(n - nh) * (1 - ph) +
                       sign * unread * ph * eh;
        printf("model %llu %.17g %.17g\n", (unsigned long long)k, model - sum, tol);
    }
    return 0;
}
