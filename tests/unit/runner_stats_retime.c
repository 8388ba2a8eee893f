/*
 * runner_stats_retime.c - unit tests for runner/timing/retime.c and the noise
 * parts of runner/grade/score.c: a metric's 95% interval from the timings'
 * intervals, the "within the noise of a tier threshold" decision, and the
 * re-timing loop against a fake timing source (samples near a threshold:
 * re-timed up to the bound and no further; far from it: not re-timed; a
 * noisy first round that later rounds settle). Prints TAP lines.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>

#include "rubric.h"
#include "lab.h"
#include "runner/timing/baseline.h"
#include "runner/config.h"
#include "runner/grade/grade.h"
#include "runner/run/run.h"
#include "runner/timing/retime.h"
#include "runner/grade/score.h"

#include "tests/unit/tap.h"

static const char *RUBRIC =
    "{\"lab\":\"reduction\",\"opens\":\"2026-11-01T00:00:00Z\",\"due\":\"2026-12-04T23:59:00Z\","
    "\"late\":{\"policy\":\"accept\",\"hard_deadline\":\"2026-12-06T23:59:00Z\","
    "\"penalty_percent_per_day\":10},"
    "\"limits\":{\"max_in_flight\":1,\"max_per_hour\":30,\"max_attempts\":3},"
    "\"correctness\":[{\"case\":\"2^28\",\"points\":10,\"visibility\":\"visible\"}],"
    "\"speed\":[{\"name\":\"speedup over one CPU thread\",\"metric\":\"speedup_vs_cpu\","
    "\"requires_correct\":true,"
    "\"tiers\":[{\"name\":\"100x faster than one CPU thread\",\"threshold\":100,\"points\":15},"
    "{\"name\":\"30x faster than one CPU thread\",\"threshold\":30,\"points\":8}]}]}";

static const char *RUBRIC_CUBLAS =
    "{\"lab\":\"matmul\",\"opens\":\"2026-11-01T00:00:00Z\",\"due\":\"2026-12-04T23:59:00Z\","
    "\"late\":{\"policy\":\"accept\",\"hard_deadline\":\"2026-12-06T23:59:00Z\","
    "\"penalty_percent_per_day\":10},"
    "\"limits\":{\"max_in_flight\":1,\"max_per_hour\":30,\"max_attempts\":3},"
    "\"correctness\":[{\"case\":\"4096^3\",\"points\":10,\"visibility\":\"visible\"}],"
    "\"speed\":[{\"name\":\"speed vs cuBLAS\",\"metric\":\"ratio_to_cublas\","
    "\"requires_correct\":true,"
    "\"tiers\":[{\"name\":\"within 2x of cuBLAS\",\"threshold\":2.0,\"points\":30},"
    "{\"name\":\"within 3x of cuBLAS\",\"threshold\":3.0,\"points\":20}]}]}";

/* A deterministic spread: uniform in [-1, 1) from a 64-bit LCG. */
static double jitter(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / (double)(1ULL << 52) - 1.0;
}

/* The fake timing source: per round, `n` student samples around
 * student_ms (relative spread `spread`, or `later_spread` after round 0)
 * and 5 CPU samples around cpu_ms; counts its rounds. */
struct fake {
    double student_ms, cpu_ms, spread, later_spread;
    size_t n;
    int rounds;
    int stop_at;     /* return 7 (a verdict) at this round; -1 never */
    uint64_t seed;
};

static int fake_round(void *ctx, int k, struct retime_pool *p, struct score_timing *t)
{
    struct fake *f = ctx;
    double x[400], c[5];
    if (k != f->rounds)
        return -EPROTO; /* rounds come in order, one call each */
    f->rounds++;
    if (k == f->stop_at)
        return 7;
    double sp = k == 0 ? f->spread : f->later_spread;
    for (size_t i = 0; i < f->n; i++)
        x[i] = f->student_ms * (1 + sp * jitter(&f->seed));
    for (size_t i = 0; i < 5; i++)
        c[i] = f->cpu_ms * (1 + 0.002 * jitter(&f->seed));
    if (retime_append(p, RETIME_STUDENT, x, f->n) || retime_append(p, RETIME_CPU, c, 5))
        return -ENOMEM;
    t->have = 1;
    t->recheck_passed = 1;
    t->case_name = "2^28";
    return 0;
}

/* Run the loop on a fresh timing with bound; the rounds made. */
static int run(const struct rubric *r, struct fake *f, int bound, struct score_timing *t, int *rc)
{
    struct retime_pool p;
    memset(&p, 0, sizeof p);
    memset(t, 0, sizeof *t);
    t->naive_ms = t->optimized_ms = t->cublas_ms = t->cpu_ms = NAN;
    f->rounds = 0;
    struct retime_source src = {fake_round, f};
    *rc = retime_run(r, bound, &src, &p, t);
    retime_pool_free(&p);
    return f->rounds;
}

static const char *speed_output(const struct rubric *r, const struct score_timing *t)
{
    static char out[1024];
    struct score_case c = {.name = "2^28", .ran = 1, .passed = 1, .max_abs_err = 0,
                           .max_rel_err = 0, .first_bad_index = -1, .unwritten = -1};
    struct score_input in = {.lab = "reduction", .gpu = "H100", .status = "graded",
                             .cases = &c, .ncases = 1, .timing = *t};
    json_t *doc = score_result(r, &in);
    json_t *tests = json_object_get(doc, "tests");
    const char *o = json_string_value(
        json_object_get(json_array_get(tests, json_array_size(tests) - 1), "output"));
    snprintf(out, sizeof out, "%s", o ? o : "");
    json_decref(doc);
    return out;
}

int main(void)
{
    struct rubric r, rc;
    char err[256];
    json_t *d = json_loads(RUBRIC, 0, NULL), *d2 = json_loads(RUBRIC_CUBLAS, 0, NULL);
    check(d && rubric_parse(d, NULL, &r, err, sizeof err) == 0, "the reduction rubric parses");
    check(d2 && rubric_parse(d2, NULL, &rc, err, sizeof err) == 0, "the matmul rubric parses");
    json_decref(d);
    json_decref(d2);
    const struct rubric_speed *sp = &r.speed[0];

    /* score_tier_uncertain: a threshold inside the interval. */
    double th = 0;
    check(score_tier_uncertain(sp, 98, 103, &th) && th == 100, "98..103 holds the 100x threshold");
    check(!score_tier_uncertain(sp, 101, 140, &th), "101..140 is clear of every threshold");
    check(!score_tier_uncertain(sp, 40, 90, &th), "40..90 is one tier (30x) throughout");
    check(score_tier_uncertain(sp, 25, 31, &th) && th == 30, "25..31 holds the 30x threshold");
    check(!score_tier_uncertain(sp, NAN, 31, &th), "an unknown interval decides nothing");

    /* score_metric_ci: both timings measured -> 97.5% intervals. */
    struct score_timing t;
    memset(&t, 0, sizeof t);
    t.have = t.recheck_passed = 1;
    t.student_ms = 3;
    t.cublas_ms = 2;
    t.naive_ms = t.optimized_ms = t.cpu_ms = NAN;
    t.student = (struct score_spread){2.9, 3.1, 2.8, 3.2, 50, 0, 0.95, 0.975, 0, 0};
    t.cublas = (struct score_spread){1.95, 2.05, 1.9, 2.1, 50, 1, 0.95, 0.975, 0, 0};
    double lo, hi;
    check(score_metric_ci(metric_find("ratio_to_cublas"), &t, &lo, &hi) == 0.95,
          "the metric CI is 95%");
    ok(fabs(lo - 2.8 / 2.1) < 1e-12 && fabs(hi - 3.2 / 1.9) < 1e-12,
       "ratio CI from the two 97.5%% intervals: %g..%g", lo, hi);
    t.cublas.samples = 0; /* a cached baseline: exact */
    score_metric_ci(metric_find("ratio_to_cublas"), &t, &lo, &hi);
    ok(fabs(lo - 2.9 / 2) < 1e-12 && fabs(hi - 3.1 / 2) < 1e-12,
       "a cached baseline counts as exact: the student's 95%% interval alone (%g..%g)", lo, hi);
    t.student.samples = 0;
    check(score_metric_ci(metric_find("ratio_to_cublas"), &t, &lo, &hi) == 0 && isnan(lo),
          "no spread of the student's time: no interval");
    t.student.samples = 50;
    t.bytes = 1e9;
    t.copy_gbs = 1000;
    score_metric_ci(metric_find("bandwidth_share"), &t, &lo, &hi);
    ok(fabs(lo - 1.0 / 3.1) < 1e-12 && fabs(hi - 1.0 / 2.9) < 1e-12,
       "bandwidth_share: the slow end gives the low share (%g..%g)", lo, hi);

    /* 1. Near the threshold: student 2.54 ms +-8%, CPU 254 ms: ~100x. */
    struct fake near = {2.54, 254.0, 0.08, 0.08, 30, 0, -1, 1};
    int code, rounds = run(&r, &near, 2, &t, &code);
    ok(code == 0 && rounds == 3 && t.retimed == 2,
       "near 100x: re-timed up to the bound 2 and no further (%d rounds, retimed %d)", rounds,
       t.retimed);
    ok(strstr(t.retime_reason, "the most allowed") && strstr(t.retime_reason, "threshold 100"),
       "the reason says why and that the bound was hit: %s", t.retime_reason);
    ok(t.samples == 90 && t.cpu.samples == 15 && t.cpu.interleaved,
       "every round's samples are pooled: 90 student, 15 CPU (%zu, %zu)", t.samples,
       t.cpu.samples);
    const char *o = speed_output(&r, &t);
    ok(strstr(o, "(95% CI ") && strstr(o, "\xe2\x80\x93") && strstr(o, "re-timed 2 times") &&
           strstr(o, "within the noise even after re-timing"),
       "the speed line shows the value, its 95%% CI and the re-timing: %s", o);
    double v1 = score_metric(metric_find("speedup_vs_cpu"), &t);
    const char *tier1 = NULL;
    rubric_speed_points(sp, v1, &tier1);

    /* Deterministic: the same samples, the same rounds, value and tier. */
    struct score_timing t2;
    near.seed = 1;
    run(&r, &near, 2, &t2, &code);
    const char *tier2 = NULL;
    rubric_speed_points(sp, score_metric(metric_find("speedup_vs_cpu"), &t2), &tier2);
    check(score_metric(metric_find("speedup_vs_cpu"), &t2) == v1 && tier1 == tier2 && t2.retimed == t.retimed,
          "the same samples give the same rounds, value and tier");

    /* 2. Far from every threshold: 1000x. */
    struct fake far = {2.54, 2540.0, 0.08, 0.08, 30, 0, -1, 2};
    rounds = run(&r, &far, 2, &t, &code);
    ok(code == 0 && rounds == 1 && t.retimed == 0 && t.retime_reason[0] == '\0',
       "far from a threshold (1000x): timed once, not re-timed (%d rounds)", rounds);
    o = speed_output(&r, &t);
    ok(strstr(o, "(92% CI ") && strstr(o, "too few samples for 95%") && !strstr(o, "re-timed") &&
           strstr(o, ": 100x faster"),
       "its line shows the CI and the tier, no re-timing; 5 CPU samples cannot give 97.5%%, "
       "so the joint level shown is the exact one, 92%%: %s", o);
    double lo5, hi5;
    ok(fabs(score_metric_ci(metric_find("speedup_vs_cpu"), &t, &lo5, &hi5) - (1 - 0.0625 - (1 - t.student.cov2))) <
           1e-12,
       "the joint confidence is 1 - the two misses (Bonferroni) with the exact coverages");

    /* 3. A noisy first round (+-20% around 101.6x) that a tight round settles. */
    struct fake settle = {2.50, 254.0, 0.20, 0.002, 200, 0, -1, 3};
    rounds = run(&r, &settle, 2, &t, &code);
    ok(code == 0 && rounds == 2 && t.retimed == 1 && strstr(t.retime_reason, "now clear"),
       "noisy round 0 near 100x, a tight round 1: re-timed once, then clear (%d rounds: %s)",
       rounds, t.retime_reason);

    /* 4. Re-timing off (bound 0): decided by the median at once, and said. */
    rounds = run(&r, &near, 0, &t, &code);
    ok(rounds == 1 && t.retimed == 0 && strstr(t.retime_reason, "re-timing is off"),
       "bound 0: one round, the reason says re-timing is off (%s)", t.retime_reason);

    /* 5. A verdict from the source stops the loop and is returned. */
    near.stop_at = 1;
    rounds = run(&r, &near, 2, &t, &code);
    check(code == 7 && rounds == 2, "a verdict in a re-timing round stops the loop, returned");
    near.stop_at = -1;

    /* 6. No speed points anyway (re-check failed): no re-timing. */
    memset(&t, 0, sizeof t);
    t.have = 1;
    t.recheck_passed = 0;
    t.student_ms = 2.54;
    t.cpu_ms = 254;
    t.student = (struct score_spread){2.3, 2.7, 2.2, 2.8, 30, 0, 0.95, 0.975, 0, 0};
    check(retime_uncertain(&r, &t, err, sizeof err) < 0,
          "a failed re-check earns nothing: no re-timing");
    t.recheck_passed = 1;
    check(retime_uncertain(&r, &t, err, sizeof err) == 0 && strstr(err, "threshold 100"),
          "the same timing with the re-check passed is within the noise");

    /* 7. Lower-is-better near 2x cuBLAS, both interleaved. */
    memset(&t, 0, sizeof t);
    t.have = t.recheck_passed = 1;
    t.student_ms = 3.0;
    t.cublas_ms = 1.5;
    t.naive_ms = t.optimized_ms = t.cpu_ms = NAN;
    t.student = (struct score_spread){2.95, 3.05, 2.9, 3.1, 40, 0, 0.95, 0.975, 0, 0};
    t.cublas = (struct score_spread){1.48, 1.52, 1.47, 1.53, 40, 1, 0.95, 0.975, 0, 0};
    check(retime_uncertain(&rc, &t, err, sizeof err) == 0, "2.0x cuBLAS +-4% holds the 2x threshold");
    t.student_ms = 4.0;
    t.student = (struct score_spread){3.95, 4.05, 3.9, 4.1, 40, 0, 0.95, 0.975, 0, 0};
    check(retime_uncertain(&rc, &t, err, sizeof err) < 0, "2.7x cuBLAS +-4% is clear");

    /* The host's record of CPU baseline batches: appended, newest read. */
    char rpath[] = "/tmp/cugrade-record-XXXXXX";
    int fd = mkstemp(rpath);
    check(fd >= 0, "a temporary record");
    close(fd);
    double rec[BASELINE_CPU_RECORD];
    check(baseline_record_read(rpath, rec, BASELINE_CPU_RECORD) == 0, "an empty record reads nothing");
    int added = 0;
    for (int i = 1; i <= 30; i++)
        added += baseline_record_add(rpath, 200.0 + i) == 0;
    check(baseline_record_add(rpath, NAN) == -EINVAL && baseline_record_add(rpath, -1) == -EINVAL,
          "a NaN or negative median is not recorded");
    FILE *jf = fopen(rpath, "a");
    if (jf) {
        fputs("junk\n", jf);
        fclose(jf);
    }
    size_t k = baseline_record_read(rpath, rec, BASELINE_CPU_RECORD);
    ok(added == 30 && k == BASELINE_CPU_RECORD && rec[0] == 206 && rec[k - 1] == 230,
       "the newest %d of 30 batches are read back, oldest first, junk skipped (%zu: %g..%g)",
       BASELINE_CPU_RECORD, k, rec[0], k ? rec[k - 1] : 0);
    double few[3];
    k = baseline_record_read(rpath, few, 3);
    check(k == 3 && few[0] == 228 && few[2] == 230, "a smaller window reads the newest 3");
    unlink(rpath);
    check(baseline_record_read("/nonexistent/record", rec, 5) == 0, "a missing record reads nothing");
    check(isnan(baseline_record_age("/nonexistent/record")), "a missing record has no age");
    FILE *af = fopen(rpath, "w");
    if (af) {
        fputs("200.0\n", af);
        fclose(af);
    }
    double rage = baseline_record_age(rpath);
    ok(rage >= 0 && rage < 5, "a record appended to just now is %.3f s old", rage);
    struct timespec ago[2] = {{time(NULL) - 100, 0}, {time(NULL) - 100, 0}};
    utimensat(AT_FDCWD, rpath, ago, 0);
    rage = baseline_record_age(rpath);
    ok(rage > 99 && rage < 105, "one last appended to 100 s ago is ~100 s old (%.1f)", rage);
    ago[0].tv_sec = ago[1].tv_sec = time(NULL) + 60;
    utimensat(AT_FDCWD, rpath, ago, 0);
    check(isnan(baseline_record_age(rpath)), "one dated in the future has no age (not fresh)");
    unlink(rpath);

    /* Shared batches (baseline.h): a baseline batch one job timed is kept
     * per GPU, and another job's first round takes it while it is fresh. */
    char cdir[] = "/tmp/cugrade-share-XXXXXX";
    check(mkdtemp(cdir) != NULL, "a temporary cache");
    struct grade_env genv = {.cache = cdir, .gpu_index = "3"};
    struct lab glab = {.name = "matmul"};
    struct run_ctx grc = {.env = &genv, .lab = &glab};
    double kept[12], *got = NULL, age = -1;
    size_t ngot = 0;
    for (int i = 0; i < 12; i++)
        kept[i] = 1.5 + 0.01 * i;
    check(baseline_batch_recent(&grc, "cublas", "4096^3", 30, &got, &ngot, &age) == -ENOENT,
          "no batch kept yet: -ENOENT");
    check(baseline_batch_keep(&grc, "cublas", "4096^3", kept, 12) == 0, "a cuBLAS batch is kept");
    int rr = baseline_batch_recent(&grc, "cublas", "4096^3", 30, &got, &ngot, &age);
    ok(rr == 0 && ngot == 12 && got && got[0] == 1.5 && fabs(got[11] - 1.61) < 1e-12 &&
           age >= 0 && age < 5,
       "another job takes it within the window: 12 samples, %.3f s old (%d)", age, rr);
    free(got);
    got = NULL;
    check(baseline_batch_recent(&grc, "naive", "4096^3", 30, &got, &ngot, &age) == -ENOENT &&
              baseline_batch_recent(&grc, "cublas", "1024^3", 30, &got, &ngot, &age) == -ENOENT,
          "a batch is the baseline's and the case's only");
    genv.gpu_index = "4";
    check(baseline_batch_recent(&grc, "cublas", "4096^3", 30, &got, &ngot, &age) == -ENOENT,
          "and this GPU's only: GPU 4 does not take GPU 3's");
    genv.gpu_index = "3";
    char bpath[PATH_MAX];
    snprintf(bpath, sizeof bpath, "%s/gpu-3.batch-matmul-4096_3-cublas.json", cdir);
    struct {
        const char *case_name, *samples;
        double when;
        int want;
        const char *why;
    } bad[] = {
        {"4096^3", "[1,2]", -20, 0, "a batch 20 s old is fresh in a 30 s window"},
        {"4096^3", "[1,2]", -100, -ESTALE, "one 100 s old is stale"},
        {"4096^3", "[1,2]", 60, -ESTALE,
         "one dated 60 s in the future (a clock set back) is not taken as fresh"},
        {"4096_3", "[1,2]", -1, -EIO, "another case whose name makes the same slug is not taken"},
        {"4096^3", "[1,-2]", -1, -EIO, "a negative sample: the file is not taken"},
        {"4096^3", "[]", -1, -EIO, "no samples: not taken"},
        {"4096^3", "[1,2", -1, -EIO, "truncated JSON: not taken"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *bf = fopen(bpath, "w");
        if (bf) {
            fprintf(bf, "{\"baseline\":\"cublas\",\"case\":\"%s\",\"at\":%.3f,\"samples_ms\":%s}",
                    bad[i].case_name, (double)time(NULL) + bad[i].when, bad[i].samples);
            fclose(bf);
        }
        rr = baseline_batch_recent(&grc, "cublas", "4096^3", 30, &got, &ngot, &age);
        ok(rr == bad[i].want && (rr != 0 || (ngot == 2 && age > 15 && age < 25)), "%s (%d)",
           bad[i].why, rr);
        free(got);
        got = NULL;
    }
    unlink(bpath);
    check(symlink("/etc/passwd", bpath) == 0 &&
              baseline_batch_recent(&grc, "cublas", "4096^3", 30, &got, &ngot, &age) == -EIO,
          "a link in its place is not followed");
    unlink(bpath);
    check(mkfifo(bpath, 0600) == 0 &&
              baseline_batch_recent(&grc, "cublas", "4096^3", 30, &got, &ngot, &age) == -EIO,
          "a FIFO in its place is not waited on");
    unlink(bpath);
    rmdir(cdir);

    /* In the pool: a shared batch alone is shared, not interleaved; with
     * a batch of the job's own beside it (a re-timing round), both. */
    struct retime_pool sp_pool;
    memset(&sp_pool, 0, sizeof sp_pool);
    double stu[20], cub[10];
    for (int i = 0; i < 20; i++)
        stu[i] = 3.0 + 0.001 * i;
    for (int i = 0; i < 10; i++)
        cub[i] = 1.5 + 0.001 * i;
    struct score_timing st;
    memset(&st, 0, sizeof st);
    st.naive_ms = st.optimized_ms = st.cublas_ms = st.cpu_ms = NAN;
    check(retime_append(&sp_pool, RETIME_STUDENT, stu, 20) == 0 &&
              retime_append_shared(&sp_pool, RETIME_CUBLAS, cub, 10, 7.5) == 0,
          "a shared cuBLAS batch joins the pool");
    check(retime_append_shared(&sp_pool, RETIME_CUBLAS, cub, 10, 1) == -EEXIST,
          "one shared batch per series: its samples are not counted twice");
    ok(retime_apply(&sp_pool, &st) == 0 && st.cublas.shared && !st.cublas.interleaved &&
           st.cublas.shared_age_s == 7.5 && st.cublas.samples == 10 && st.cublas_ms > 1.5,
       "it is the cuBLAS timing, marked shared (7.5 s old), not interleaved");
    check(retime_append(&sp_pool, RETIME_CUBLAS, cub, 10) == 0 && retime_apply(&sp_pool, &st) == 0 &&
              st.cublas.shared && st.cublas.interleaved && st.cublas.samples == 20,
          "with the job's own re-timing batch: interleaved and shared, 20 samples pooled");
    struct score_input sin = {.lab = "matmul", .gpu = "H100", .status = "graded", .timing = st};
    sin.timing.have = 1;
    sin.timing.recheck_passed = 1;
    sin.timing.student_ms = 3.0;
    json_t *sdoc = score_result(&rc, &sin);
    json_t *tms = json_object_get(json_object_get(json_object_get(sdoc, "cugrade"), "timing"),
                                  "timings");
    json_t *cb = NULL, *tent;
    size_t ti;
    json_array_foreach(tms, ti, tent) if (strcmp(json_string_value(json_object_get(tent, "name")),
                                                 "cublas") == 0) cb = tent;
    ok(cb && json_real_value(json_object_get(cb, "shared_age_s")) == 7.5 &&
           json_is_true(json_object_get(cb, "interleaved")),
       "the result's timings[] says how old the shared batch was (shared_age_s)");
    json_decref(sdoc);
    retime_pool_free(&sp_pool);

    check(RETIME_PYTHON_BOUND == 1 && RETIME_PYTHON_BOUND < RETIME_BOUND,
          "a Python submission gets one extra round (each restarts the interpreters)");

    rubric_free(&r);
    rubric_free(&rc);
    return failures ? 1 : 0;
}
