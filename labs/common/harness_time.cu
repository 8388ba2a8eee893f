/*
 * harness_time.cu - the timing half of the trusted harness: `prog time`'s
 * warm-up, the timed calls until the median is known well enough, the
 * "timing" record and the re-check on fresh inputs. Not a translation unit
 * of its own: labs/common/harness_common.cu includes it where it stands,
 * after the channel, the student's device memory, the error naming and the
 * cases it uses, before main. Shipped with it in the student's bundle
 * (labs/bundle.json). No kernels here: runner/feedback/profile.c reads the
 * harness's own kernel names from harness_common.cu and harness.cu only.
 */

/* ---------------------------------------------------------------- timing */

static int hc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of sorted x and the relative half-width of its 95% confidence
 * interval from order statistics (no distribution assumed): ranks
 * n/2 -+ 0.98*sqrt(n). */
static double hc_median_rel_err(const double *sorted, int n, double *median)
{
    int lo, hi;
    double half;
    *median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    lo = (int)floor(n / 2.0 - 0.98 * sqrt((double)n));
    hi = (int)ceil(n / 2.0 + 0.98 * sqrt((double)n));
    if (lo < 0)
        lo = 0;
    if (hi > n - 1)
        hi = n - 1;
    half = (sorted[hi] - sorted[lo]) / 2;
    return *median > 0 ? half / *median : INFINITY;
}

/* Evict the inputs from L2 before a sample: write a buffer twice the L2's
 * size, and drop any persisting-L2 lines (they would survive the writes). */
static void hc_flush_l2(void)
{
    HC_CUDA(cudaMemsetAsync(hc_flush_buf, (int)(hc_flush_round++ & 0xff), hc_flush_bytes, 0));
    (void)cudaCtxResetPersistingL2Cache();
    (void)cudaGetLastError();
}

/* The timing gate (runner/grade/job_time.c, docs/runner.md's discipline): the
 * process start, CUDA's context, the buffers and the case's inputs ran
 * beside other jobs under the runner's shared GPU lock. Once the GPU is
 * idle on our side, 'r' on the gate; 'g' comes back when the runner holds
 * the GPU alone, and only then does any student code run. A gate that
 * closes without 'g' is ours (no student code ran): a harness failure. */
static void hc_gate_wait(void)
{
    char c = 'r';
    ssize_t n;
    if (hc_gate_fd < 0)
        return;
    /* Our set-up kernels end before we say so: they must not run into
     * another job's timing once the shared lock is let go. */
    HC_CUDA(cudaDeviceSynchronize());
    do
        n = write(hc_gate_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n == 1)
        do
            n = read(hc_gate_fd, &c, 1);
        while (n < 0 && errno == EINTR);
    if (n != 1 || c != 'g')
        hc_die("the runner's timing gate closed before the go");
    close(hc_gate_fd);
    hc_gate_fd = -1;
}

/* The timing of one case: each call's wall time and event time. */
struct hc_samples {
    double *ms, *sorted; /* HC_MAX_SAMPLES each */
    float *ev;
    int n, converged;
    double median, rel;
};

/* The timed calls of hc_run_time, until the median's confidence
 * half-width is under HC_TARGET_REL_ERR (s->converged) or the budget max_ms
 * is spent: each call's wall time (the whole device synchronized, so work
 * hidden on another stream counts) into s->ms, its event time into s->ev.
 * Returns 0, or -1 after reporting the student's CUDA error. */
static int hc_time_calls(const struct lab_case_def *c, double max_ms, cudaEvent_t ev0,
                         cudaEvent_t ev1, struct hc_samples *s)
{
    double start = hc_now_ms(), ms;
    cudaError_t e;
    for (;;) {
        double t0, t1;
        cudaError_t e1, e2;
        hc_poison_output();
        hc_flush_l2();
        HC_CUDA(cudaDeviceSynchronize());
        (void)cudaGetLastError();
        t0 = hc_now_ms();
        cudaEventRecord(ev0, 0);
        HC_LAB.call();
        e1 = cudaGetLastError();
        cudaEventRecord(ev1, 0);
        /* Synchronize the whole device before the end timestamp: work the
         * student hid on a non-blocking stream is counted too. */
        e2 = cudaDeviceSynchronize();
        t1 = hc_now_ms();
        e = e1 != cudaSuccess ? e1 : e2;
        if (e != cudaSuccess) {
            hc_report_error(c->name, e);
            return -1;
        }
        s->ms[s->n] = t1 - t0;
        s->ev[s->n] = 0;
        (void)cudaEventElapsedTime(&s->ev[s->n], ev0, ev1);
        (void)cudaGetLastError();
        s->n++;
        memcpy(s->sorted, s->ms, s->n * sizeof(double));
        qsort(s->sorted, s->n, sizeof(double), hc_cmp_double);
        s->rel = hc_median_rel_err(s->sorted, s->n, &s->median);
        if (s->n >= HC_MIN_SAMPLES && s->rel < HC_TARGET_REL_ERR) {
            s->converged = 1;
            return 0;
        }
        if (s->n == HC_MAX_SAMPLES)
            return 0;
        ms = hc_now_ms() - start;
        if (ms >= max_ms && s->n >= 3)
            return 0;
        if (ms >= 2 * max_ms) /* one call longer than the whole budget */
            return 0;
    }
}

/* The "timing" record of case c: the samples, their median and its error,
 * the events' median, the warm-up calls, the L2 flush, and seed2 (the
 * re-check's seed, which the judge checks). */
static void hc_send_timing(const struct lab_case_def *c, struct hc_samples *s, int warm,
                           uint64_t seed2)
{
    struct hc_sb b = {NULL, 0, 0};
    float evsorted_med;
    hc_sb_add(&b, "{\"type\":\"timing\",\"name\":");
    hc_sb_str(&b, c->name);
    hc_sb_add(&b, ",\"samples_ms\":[");
    for (int i = 0; i < s->n; i++)
        hc_sb_add(&b, "%s%.6f", i ? "," : "", s->ms[i]);
    qsort(s->ev, s->n, sizeof(float), [](const void *x, const void *y) {
        float a = *(const float *)x, bb = *(const float *)y;
        return a < bb ? -1 : a > bb;
    });
    evsorted_med = s->ev[s->n / 2];
    hc_sb_add(&b,
              "],\"median_ms\":%.6f,\"rel_err\":%.6f,\"n\":%d,\"converged\":%s,"
              "\"warmup\":%d,\"event_median_ms\":%.6f,\"flush_bytes\":%zu,"
              "\"seed2\":\"%016llx\"}",
              s->median, s->rel, s->n, s->converged ? "true" : "false", warm, (double)evsorted_med,
              hc_flush_bytes, (unsigned long long)seed2);
    hc_sb_send(&b);
}

static void hc_run_time(const struct lab_case_def *c, uint64_t seed, double max_ms)
{
    uint64_t cs = gen_case_seed(seed, c->name), seed2, cs2;
    struct hc_samples s;
    double start, ms;
    int warm = 0, l2 = 0;
    cudaEvent_t ev0, ev1;
    cudaError_t e;
    char name2[128];

    memset(&s, 0, sizeof s);
    s.rel = INFINITY;
    s.ms = (double *)malloc(HC_MAX_SAMPLES * sizeof(double));
    s.sorted = (double *)malloc(HC_MAX_SAMPLES * sizeof(double));
    s.ev = (float *)malloc(HC_MAX_SAMPLES * sizeof(float));
    if (s.ms == NULL || s.sorted == NULL || s.ev == NULL)
        hc_die("out of memory");
    HC_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    hc_flush_bytes = 2 * (size_t)l2 > (64u << 20) ? 2 * (size_t)l2 : (64u << 20);
    HC_CUDA(cudaMalloc(&hc_flush_buf, hc_flush_bytes));
    HC_CUDA(cudaEventCreate(&ev0));
    HC_CUDA(cudaEventCreate(&ev1));
    hc_setup(c, cs);
    hc_gate_wait();

    /* Warm-up: lazy module loading, first-touch allocations, clocks. */
    hc_blame_case = c->name;
    hc_student_ran = 1;
    start = hc_now_ms();
    do {
        hc_poison_output();
        HC_CUDA(cudaDeviceSynchronize());
        e = hc_call(NULL);
        if (e != cudaSuccess)
            hc_report_error(c->name, e);
        if (e != cudaSuccess)
            goto out; /* a launch error: nothing to time */
        warm++;
    } while (warm < 20 && (warm < 2 || hc_now_ms() - start < 30) &&
             hc_now_ms() - start < max_ms / 4);

    if (hc_time_calls(c, max_ms, ev0, ev1, &s) < 0)
        goto out;
    seed2 = gen_recheck_seed(seed);
    hc_send_timing(c, &s, warm, seed2);

    /* Re-check on fresh inputs: a cached answer fails here. */
    cs2 = gen_case_seed(seed2, c->name);
    HC_LAB.regen(cs2);
    hc_poison_output();
    HC_CUDA(cudaDeviceSynchronize());
    snprintf(name2, sizeof(name2), "%s@recheck", c->name);
    hc_blame_case = name2;
    e = hc_call(&ms);
    if (e != cudaSuccess)
        hc_report_error(name2, e);
    else
        hc_report_output(name2, cs2, ms);
out:
    hc_blame_case = NULL;
    HC_LAB.teardown();
    hc_free_all();
    cudaFree(hc_flush_buf);
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    free(s.ms);
    free(s.sorted);
    free(s.ev);
}
