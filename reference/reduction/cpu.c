/*
 * reference/reduction/cpu.c - the lab's CPU baseline: one thread summing the
 * same inputs the harness generates (gen.cuh on the host), timed as the
 * median of several runs. Prints one JSON object on stdout:
 *
 *   cpu-baseline --case NAME [--seed HEX] [--reps N]
 *   {"case":"2^28","n":268435456,"reps":5,"median_ms":...,"samples_ms":[...],"sum":...}
 *
 * The sum is the plain loop a student would write first, accumulated in
 * double (a float accumulator stalls once it passes 2^24 and gives a wrong
 * answer); compiled with -O2 and no -ffast-math, so it is not vectorised:
 * that is what "a single CPU thread" means for the lab's speedup. Each
 * sample is the CPU time the loop took (now_ms).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.cuh"
#include "cases.h"

/* The process's CPU time, not the wall clock: the baseline is one
 * thread's work, and on a host whose CPUs a burst keeps busy the wall
 * clock also counts the time the loop waited for a CPU, which made the
 * CPU look slower and every student's speedup bigger the busier the host
 * was. Alone on a core the two agree. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *name = LAB_TIMING_CASE, *seed_s = "1";
    uint64_t seed = 0, s;
    int32_t bias;
    int reps = 5;
    const struct lab_case_def *c = NULL;
    double *t, sink = 0;
    float *x;
    size_t n;

    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--case") == 0)
            name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
            seed_s = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cpu-baseline [--case NAME] [--seed HEX] [--reps N]\n");
            return 2;
        }
    }
    for (size_t i = 0; i < LAB_NCASES; i++)
        if (strcmp(LAB_CASES[i].name, name) == 0)
            c = &LAB_CASES[i];
    if (c == NULL || gen_seed_parse_wide(seed_s, &seed) != 0 || reps < 1 || reps > 100) {
        fprintf(stderr, "cpu-baseline: unknown case, bad seed or bad --reps\n");
        return 2;
    }
    n = (size_t)c->p[0];
    s = gen_stream(gen_case_seed(seed, c->name), 0);
    bias = gen_reduction_bias(s, n, (int)c->p[1]);
    x = malloc(n * sizeof(float));
    t = malloc(reps * sizeof(double));
    if (x == NULL || t == NULL) {
        fprintf(stderr, "cpu-baseline: out of memory for %zu floats\n", n);
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = gen_f32_reduction(s, i, bias);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms(), sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += x[i];
        t[r] = now_ms() - t0;
        sink += sum;
    }
    printf("{\"case\":\"%s\",\"n\":%zu,\"reps\":%d,\"samples_ms\":[", c->name, n, reps);
    for (int r = 0; r < reps; r++)
        printf("%s%.3f", r ? "," : "", t[r]);
    qsort(t, reps, sizeof(double), cmp);
    printf("],\"median_ms\":%.3f,\"clock\":\"process_cpu\",\"sum\":%.17g}\n", t[reps / 2],
           sink / reps);
    free(x);
    free(t);
    return 0;
}
