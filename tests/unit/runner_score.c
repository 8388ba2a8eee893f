/*
 * runner_score.c - unit tests for runner/grade/score.c: the rubric applied to
 * canned judge outputs, sanitizer verdicts and timings, down to the result
 * document's fields (docs/api.md). Prints TAP lines.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rubric.h"
#include "runner/grade/score.h"

#include "tests/unit/tap.h"

static const char *RUBRIC =
    "{\"lab\":\"matmul\",\"opens\":\"2026-11-01T00:00:00Z\",\"due\":\"2026-12-04T23:59:00Z\","
    "\"late\":{\"policy\":\"accept\",\"hard_deadline\":\"2026-12-06T23:59:00Z\","
    "\"penalty_percent_per_day\":10},"
    "\"limits\":{\"max_in_flight\":1,\"max_per_hour\":30,\"max_attempts\":3},"
    "\"correctness\":[{\"case\":\"1x1x1\",\"points\":5,\"visibility\":\"visible\"},"
    "{\"case\":\"17x31x13\",\"points\":5,\"visibility\":\"visible\"},"
    "{\"case\":\"4096^3\",\"points\":10,\"visibility\":\"after_due_date\"}],"
    "\"sanitizer\":{\"points\":10,\"tools\":[\"memcheck\",\"racecheck\"]},"
    "\"speed\":[{\"name\":\"speed vs cuBLAS\",\"metric\":\"ratio_to_cublas\",\"requires_correct\":true,"
    "\"tiers\":[{\"name\":\"within 2x of cuBLAS\",\"threshold\":2.0,\"points\":30},"
    "{\"name\":\"within 3x of cuBLAS\",\"threshold\":3.0,\"points\":20},"
    "{\"name\":\"within 6x of cuBLAS\",\"threshold\":6.0,\"points\":10}]}]}";

/* The judge's stdout for a submission whose 17x31x13 case misses 40 outputs. */
static const char *JUDGE_ONE_BAD =
    "{\"cases\":[{\"name\":\"1x1x1\",\"passed\":true,\"max_abs_err\":0,\"max_rel_err\":0},"
    "{\"name\":\"17x31x13\",\"passed\":false,\"max_abs_err\":1e30,\"max_rel_err\":1,"
    "\"first_bad_index\":487,\"unwritten\":40,\"message\":\"40 outputs still NaN\"},"
    "{\"name\":\"4096^3\",\"passed\":true,\"max_abs_err\":2e-4,\"max_rel_err\":1e-5}]}";

static const char *JUDGE_ALL_GOOD =
    "{\"cases\":[{\"name\":\"1x1x1\",\"passed\":true},{\"name\":\"17x31x13\",\"passed\":true},"
    "{\"name\":\"4096^3\",\"passed\":true,\"max_abs_err\":2e-4}]}";

static json_t *test_named(json_t *doc, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(doc, "tests"), i, t) if (
        strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return t;
    return NULL;
}

static double num(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static struct score_timing timing(double student, double cublas)
{
    struct score_timing t;
    memset(&t, 0, sizeof t);
    t.have = 1;
    t.case_name = "4096^3";
    t.student_ms = student;
    t.samples = 41;
    t.rel_err = 0.004;
    t.recheck_passed = 1;
    t.naive_ms = 900;
    t.optimized_ms = 40;
    t.cublas_ms = cublas;
    t.cpu_ms = NAN;
    t.flops = 2.0 * 4096 * 4096 * 4096;
    t.bytes = 3.0 * 4096 * 4096 * 4;
    t.copy_gbs = 2950;
    t.peak_gflops = 66900;
    return t;
}

static void load_cases(const char *judge, struct score_input *in)
{
    json_t *doc = json_loads(judge, 0, NULL);
    if (score_cases_from_judge(doc, &in->cases, &in->ncases) != 0)
        failures++;
    json_decref(doc);
}

/* 12. Student-influenced text (program_output, exception text, findings):
 * control characters and terminal escapes dropped, newline and tab kept,
 * invalid UTF-8 replaced, a cut never inside a character (json_string
 * refuses invalid UTF-8: a split character used to drop the whole text). */
static void test_text_clean(void)
{
    char out[64];
    const char *esc = "n=\x1b[31mred\x1b[0m\a\b\x7f ok\x1b]0;title\a\r\n\tend\xc2\x9b";
    int cut = (int)score_text_clean(out, sizeof out, esc, strlen(esc), 0);
    check(strcmp(out, "n=red ok\n\tend") == 0 && !cut,
          "control characters and escape sequences dropped, newline and tab kept");
    /* "é" is 2 bytes: 9 bytes of room hold "aaaaaaa" and no half "é" */
    const char *acc = "aaaaaaa\xc3\xa9zz";
    cut = (int)score_text_clean(out, 9, acc, strlen(acc), 0);
    json_t *js = json_string(out);
    check(strcmp(out, "aaaaaaa") == 0 && cut && js, "cut before a character, never inside one");
    json_decref(js);
    cut = (int)score_text_clean(out, 10, acc, strlen(acc), 0);
    check(strcmp(out, "aaaaaaa\xc3\xa9") == 0 && cut, "...the whole character when it fits");
    const char *bad = "a\xff\xc3-\xe0\x80\x80z";
    score_text_clean(out, sizeof out, bad, strlen(bad), 0);
    js = json_string(out);
    check(js && strcmp(out, "a?" "?-?" "?" "?z") == 0, "invalid UTF-8 bytes become '?', the rest stays");
    json_decref(js);
    score_text_clean(out, sizeof out, "a`b\nc", 5, 1);
    check(strcmp(out, "a'b c") == 0, "flat: no backtick nor newline (a Markdown code span)");
    char same[] = "in\x1bZ place\x01";
    score_text_clean(same, sizeof same, same, strlen(same), 0);
    check(strcmp(same, "in place") == 0, "in place: dst may be src");

    /* The judge's case message (a Python exception's text) is cleaned. */
    json_t *doc = json_loads("{\"cases\":[{\"name\":\"1\",\"passed\":false,\"message\":"
                             "\"your code raised \\u001b[2Jboom\\u0007\"}]}",
                             0, NULL);
    struct score_case *c = NULL;
    size_t n = 0;
    check(doc && score_cases_from_judge(doc, &c, &n) == 0 && n == 1 &&
              strcmp(c[0].message, "your code raised boom") == 0,
          "a case's message loses its control characters");
    score_cases_free(c, n);
    json_decref(doc);
}

/* The direction of a speed line comes from its row of the metric table,
 * never from the metric's name: two rows whose names say the opposite of
 * their direction score and rank by the row. */
static void test_direction_from_table(struct rubric *r)
{
    struct score_sanitizer clean[2] = {{.tool = "memcheck", .ran = 1, .clean = 1},
                                       {.tool = "racecheck", .ran = 1, .clean = 1}};
    struct score_input in_ = {.lab = "matmul", .status = "graded", .sanitizers = clean,
                              .nsanitizers = 2};
    struct score_input *in = &in_;
    load_cases(JUDGE_ALL_GOOD, in);
    static const struct metric slowdown = {"slowdown_vs_cublas", "cublas", 1,
                                           METRIC_TIME_OVER_BASELINE, 1e12, "x",
                                           "your time over cuBLAS's (lower is better)"};
    static const struct metric ratio_up = {"ratio_of_cublas_speed", "cublas", 0,
                                           METRIC_BASELINE_OVER_TIME, 1e12, "x",
                                           "cuBLAS's time over yours (higher is better)"};
    const struct metric *saved = r->speed[0].metric;
    in->timing = timing(20.0, 10.0); /* twice cuBLAS's time */

    r->speed[0].metric = &slowdown;
    json_t *doc = score_result(r, in);
    json_t *tm = json_object_get(json_object_get(doc, "cugrade"), "timing");
    json_t *sp = json_array_get(json_object_get(json_object_get(doc, "cugrade"), "speed"), 0);
    ok(fabs(num(tm, "metric_value") - 2) < 1e-9 && fabs(num(tm, "speedup") - 0.5) < 1e-9,
       "a lower-is-better row not named ratio_*: the scoreboard's speedup is 1/value (%g)",
       num(tm, "speedup"));
    check(num(sp, "points") == 30 && json_is_true(json_object_get(sp, "lower_is_better")),
          "...and its tier is met at or below the threshold (2 <= 2: 30 points)");
    check(strcmp(json_string_value(json_object_get(tm, "metric_label")), slowdown.label) == 0 &&
              strcmp(json_string_value(json_object_get(tm, "metric_text")), "2.00x") == 0 &&
              strcmp(json_string_value(json_object_get(sp, "unit")), "x") == 0 &&
              strcmp(json_string_value(json_object_get(sp, "label")), slowdown.label) == 0,
          "the result carries the row's label, unit and the value as shown, for the client");
    json_decref(doc);

    r->speed[0].metric = &ratio_up;
    doc = score_result(r, in);
    tm = json_object_get(json_object_get(doc, "cugrade"), "timing");
    sp = json_array_get(json_object_get(json_object_get(doc, "cugrade"), "speed"), 0);
    ok(fabs(num(tm, "metric_value") - 0.5) < 1e-9 && fabs(num(tm, "speedup") - 0.5) < 1e-9,
       "a higher-is-better row named ratio_*: the speedup is the value itself (%g)",
       num(tm, "speedup"));
    check(num(sp, "points") == 0 && json_is_false(json_object_get(sp, "lower_is_better")),
          "...and 0.5 meets no tier of 2, 3 or 6: they are minimums for it");
    json_decref(doc);
    r->speed[0].metric = saved;
    score_cases_free(in->cases, in->ncases);
}

int main(void)
{
    struct rubric r;
    char err[256];
    json_t *rdoc = json_loads(RUBRIC, 0, NULL);
    check(rdoc && rubric_parse(rdoc, NULL, &r, err, sizeof err) == 0, "the test rubric parses");

    struct score_sanitizer clean[2] = {{.tool = "memcheck", .ran = 1, .clean = 1},
                                       {.tool = "racecheck", .ran = 1, .clean = 1}};

    /* 1. Everything right, 1.5x cuBLAS: the top tier. */
    struct score_input in = {.lab = "matmul", .gpu = "NVIDIA H100", .rubric_version = 3,
                             .status = "graded", .sanitizers = clean, .nsanitizers = 2};
    load_cases(JUDGE_ALL_GOOD, &in);
    in.timing = timing(15.0, 10.0);
    json_t *doc = score_result(&r, &in);
    check(doc != NULL, "a result document is built");
    check(num(doc, "max_score") == 60, "max_score = correctness 20 + sanitizer 10 + best tier 30");
    check(num(doc, "score") == 60, "all correct, clean, within 2x: full marks");
    json_t *sp = test_named(doc, "speed vs cuBLAS");
    check(sp && num(sp, "score") == 30 &&
              strstr(json_string_value(json_object_get(sp, "output")), "within 2x"),
          "the speed line names the tier met");
    json_t *cg = json_object_get(doc, "cugrade");
    json_t *tm = json_object_get(cg, "timing");
    check(fabs(num(tm, "metric_value") - 1.5) < 1e-9 && fabs(num(tm, "speedup") - 1 / 1.5) < 1e-9,
          "metric_value is the ratio, speedup its inverse (higher is better)");
    check(num(tm, "gflops") > 9000 && num(tm, "gflops") < 9200, "GFLOP/s from flops and the median");
    check(json_is_false(json_object_get(tm, "flagged")), "a plausible time is not flagged");
    check(strcmp(json_string_value(json_object_get(test_named(doc, "correctness: 4096^3"),
                                                   "visibility")),
                 "after_due_date") == 0,
          "a case's visibility comes from the rubric");
    check(json_integer_value(json_object_get(cg, "rubric_version")) == 3,
          "the rubric version is recorded");
    json_decref(doc);

    /* 2. 4x cuBLAS: the 6x tier only. */
    in.timing = timing(40.0, 10.0);
    doc = score_result(&r, &in);
    check(num(test_named(doc, "speed vs cuBLAS"), "score") == 10, "4x cuBLAS earns the 6x tier");
    json_decref(doc);

    /* 3. 7x cuBLAS: no tier. */
    in.timing = timing(70.0, 10.0);
    doc = score_result(&r, &in);
    check(num(test_named(doc, "speed vs cuBLAS"), "score") == 0 && num(doc, "score") == 30,
          "7x cuBLAS earns no speed points");
    json_decref(doc);

    /* 4. Faster than the FP32 peak allows: flagged, no speed points. */
    in.timing = timing(0.5, 10.0); /* 137 GFLOP in 0.5 ms = 275 TFLOP/s */
    doc = score_result(&r, &in);
    tm = json_object_get(json_object_get(doc, "cugrade"), "timing");
    check(json_is_true(json_object_get(tm, "flagged")) &&
              json_string_value(json_object_get(tm, "flag_reason")),
          "a time past the physical floor is flagged with a reason");
    check(num(test_named(doc, "speed vs cuBLAS"), "score") == 0,
          "a flagged time earns no speed points");
    check(json_is_null(json_object_get(tm, "speedup")), "a flagged time has no scoreboard speedup");
    json_decref(doc);

    /* 5. The re-check after timing failed (a cached answer). */
    in.timing = timing(15.0, 10.0);
    in.timing.recheck_passed = 0;
    doc = score_result(&r, &in);
    check(num(test_named(doc, "speed vs cuBLAS"), "score") == 0,
          "a failed re-check earns no speed points");
    tm = json_object_get(json_object_get(doc, "cugrade"), "timing");
    check(json_is_true(json_object_get(tm, "flagged")) &&
              strstr(json_string_value(json_object_get(tm, "flag_reason")), "fresh inputs"),
          "a failed re-check is flagged: a cached answer");
    json_decref(doc);

    /* 5b. The judge flagged the time (past its bandwidth or peak bound). */
    in.timing = timing(15.0, 10.0);
    in.timing.judge_flag_reason = "faster than the memory system allows";
    doc = score_result(&r, &in);
    tm = json_object_get(json_object_get(doc, "cugrade"), "timing");
    check(json_is_true(json_object_get(tm, "flagged")) &&
              num(test_named(doc, "speed vs cuBLAS"), "score") == 0,
          "a time the judge flags earns no speed points");
    json_decref(doc);

    /* 5c. The speed lines, as the GPU test reads them. */
    in.timing = timing(25.0, 10.0);
    doc = score_result(&r, &in);
    json_t *sl = json_array_get(json_object_get(json_object_get(doc, "cugrade"), "speed"), 0);
    check(sl && strcmp(json_string_value(json_object_get(sl, "tier")), "within 3x of cuBLAS") == 0 &&
              num(sl, "points") == 20 && fabs(num(sl, "value") - 2.5) < 1e-9,
          "cugrade.speed names the tier met, its points and the metric");
    json_decref(doc);

    /* 5d. compute-sanitizer could not run (ours): the line is not charged. */
    struct score_sanitizer broken[2] = {{.tool = "memcheck", .ran = 0, .infra_failed = 1},
                                        {.tool = "racecheck", .ran = 1, .clean = 1}};
    in.sanitizers = broken;
    doc = score_result(&r, &in);
    check(num(test_named(doc, "sanitizer (memcheck, racecheck)"), "score") == 10,
          "a sanitizer that could not run for the runner's reasons is not charged");
    json_decref(doc);
    in.sanitizers = clean;
    score_cases_free(in.cases, in.ncases);

    /* 6. One case wrong, with unwritten outputs; racecheck found a race. */
    struct score_finding race = {.file = "kernel.cu", .line = 12,
                                 .message = "Error: Race reported between Write access and Read access",
                                 .hint = "put __syncthreads()"};
    struct score_sanitizer dirty[2] = {{.tool = "memcheck", .ran = 1, .clean = 1},
                                       {.tool = "racecheck", .ran = 1, .clean = 0,
                                        .findings = &race, .nfindings = 1}};
    struct score_input in2 = {.lab = "matmul", .gpu = "g", .status = "graded",
                              .sanitizers = dirty, .nsanitizers = 2};
    load_cases(JUDGE_ONE_BAD, &in2);
    in2.timing = timing(15.0, 10.0);
    doc = score_result(&r, &in2);
    check(num(doc, "score") == 15, "wrong case and a race: 5 + 10 correctness points only");
    json_t *bad = test_named(doc, "correctness: 17x31x13");
    const char *out = json_string_value(json_object_get(bad, "output"));
    check(bad && strcmp(json_string_value(json_object_get(bad, "status")), "failed") == 0 &&
              strstr(out, "first bad index 487") && strstr(out, "never written"),
          "a failed case reports its first bad index and unwritten outputs");
    check(strstr(json_string_value(json_object_get(test_named(doc, "speed vs cuBLAS"), "output")),
                 "every correctness case must pass") != NULL,
          "speed requires every case correct");
    json_t *san = json_array_get(json_object_get(json_object_get(doc, "cugrade"), "sanitizer"), 1);
    json_t *f0 = json_array_get(json_object_get(san, "findings"), 0);
    check(f0 && json_integer_value(json_object_get(f0, "line")) == 12 &&
              strcmp(json_string_value(json_object_get(f0, "file")), "kernel.cu") == 0,
          "sanitizer findings carry file:line");
    check(json_array_size(json_object_get(json_object_get(doc, "cugrade"), "hints")) >= 2,
          "hints for the grid and the race");
    json_decref(doc);

    /* 7. runtime_error keeps the points of cases that passed before the crash. */
    in2.status = "runtime_error";
    in2.status_message = "Your program was killed by signal 11 (Segmentation fault).";
    in2.nsanitizers = 0;
    in2.timing.have = 0;
    doc = score_result(&r, &in2);
    check(num(doc, "score") == 15 &&
              strstr(json_string_value(json_object_get(doc, "output")), "signal 11"),
          "runtime_error: passed cases count, the summary says why it stopped");
    json_decref(doc);
    score_cases_free(in2.cases, in2.ncases);

    /* 8. A compile error earns nothing and says so. */
    struct score_input in3 = {.lab = "matmul", .status = "compile_error",
                              .compile_log = "kernel.cu(6): error: expected a \";\""};
    doc = score_result(&r, &in3);
    check(num(doc, "score") == 0 && num(doc, "max_score") == 60, "compile error: 0 of 60");
    check(strcmp(json_string_value(json_object_get(json_object_get(doc, "cugrade"), "compile_log")),
                 "kernel.cu(6): error: expected a \";\"") == 0,
          "the compile log is in the document");
    json_decref(doc);

    /* 9. A rejection carries the symbol and the reason. */
    struct score_input in4 = {.lab = "matmul", .status = "rejected",
                              .rejection_symbol = "cublasSgemm_v2",
                              .rejection_reason = "cuBLAS is not allowed"};
    doc = score_result(&r, &in4);
    json_t *rej = json_object_get(json_object_get(doc, "cugrade"), "rejection");
    check(num(doc, "score") == 0 &&
              strcmp(json_string_value(json_object_get(rej, "symbol")), "cublasSgemm_v2") == 0,
          "rejected: the symbol and the reason");
    json_decref(doc);

    /* 10. Metrics. */
    struct score_timing t = timing(10.0, 5.0);
    check(fabs(score_metric(metric_find("speedup_vs_naive"), &t) - 90) < 1e-9, "speedup_vs_naive");
    check(fabs(score_metric(metric_find("ratio_to_optimized"), &t) - 0.25) < 1e-9,
          "ratio_to_optimized");
    check(isnan(score_metric(metric_find("speedup_vs_cpu"), &t)),
          "a missing baseline gives no metric");
    t.bytes = 2950e6; /* 2950 MB in 10 ms = 295 GB/s of 2950 */
    check(fabs(score_metric(metric_find("bandwidth_share"), &t) - 0.1) < 1e-9, "bandwidth_share");
    check(fabs(score_floor_ms(&t) - 2.054) < 0.01, "the floor is the larger of the two bounds");

    /* 11. The judge's output is checked. */
    struct score_case *c;
    size_t n;
    json_t *junk = json_loads("{\"cases\":[{\"name\":1}]}", 0, NULL);
    check(score_cases_from_judge(junk, &c, &n) == -EINVAL, "a malformed judge output is refused");
    json_decref(junk);

    test_direction_from_table(&r);
    test_text_clean();
    rubric_free(&r);
    json_decref(rdoc);
    return failures ? 1 : 0;
}
