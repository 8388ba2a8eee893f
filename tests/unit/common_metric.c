/*
 * common_metric.c - unit tests for common/metric.c, the one table of speed
 * metrics: every row is whole and consistent, every metric the
 * repository's rubrics name resolves to a row, an unknown metric is
 * refused with a sentence that lists the table, and each formula, the
 * higher-is-better turn and the display do what the table says. TAP output.
 */
#include "metric.h"
#include "rubric.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"

/* A one-line rubric whose only speed line names metric with a tier at threshold. */
static int parse_speed(const char *metric, double threshold, struct rubric *r, char *err,
                       size_t errlen)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"lab\": \"matmul\", \"due\": \"2026-12-04T23:59:00Z\", \"speed\": [{\"name\": "
             "\"speed\", \"metric\": \"%s\", \"tiers\": [{\"name\": \"t\", \"threshold\": %g, "
             "\"points\": 1}]}]}",
             metric, threshold);
    json_t *doc = json_loads(text, 0, NULL);
    if (!doc)
        return -EINVAL;
    int rc = rubric_parse(doc, NULL, r, err, errlen);
    json_decref(doc);
    return rc;
}

static void test_rows(void)
{
    size_t n = 0;
    int whole = 1, unique = 1, consistent = 1;
    for (const struct metric *m; (m = metric_at(n)) != NULL; n++) {
        whole &= m->name && *m->name && m->label && *m->label && m->unit && m->max_threshold > 0;
        unique &= metric_find(m->name) == m;
        /* A time over a baseline's is better lower; a speedup or share higher. */
        consistent &= m->lower_is_better == (m->formula == METRIC_TIME_OVER_BASELINE);
        consistent &= (m->baseline == NULL) == (m->formula == METRIC_SHARE_OF_COPY);
    }
    ok(n >= 5, "the table has the five metrics the labs use (%zu rows)", n);
    check(whole, "every row has a name, a label, a unit and a largest threshold");
    check(unique, "metric_find finds each row by its name, once");
    check(consistent, "each row's direction and baseline agree with its formula");
    const struct metric *m = metric_find("ratio_to_cublas");
    check(m && strcmp(m->baseline, "cublas") == 0 && m->lower_is_better,
          "ratio_to_cublas: against cuBLAS, lower is better");
    m = metric_find("bandwidth_share");
    check(m && m->baseline == NULL && !m->lower_is_better && m->max_threshold == 1.0,
          "bandwidth_share: of the copy bandwidth, higher is better, at most 1");
    check(metric_find(NULL) == NULL && metric_find("ratio_to_cuBLAS") == NULL &&
              metric_find("") == NULL,
          "no row for NULL, a miscased name or an empty one");
}

/* Every speed line of every rubrics/<lab>.json names a row of the table,
 * and the parsed line points at that row. */
static void test_repo_rubrics(const char *repo)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/rubrics", repo);
    DIR *d = opendir(path);
    int files = 0;
    struct dirent *de;
    check(d != NULL, "rubrics/ opens");
    while (d && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof path, "%s/rubrics/%s", repo, de->d_name);
        json_t *doc = json_load_file(path, 0, NULL);
        json_t *sp, *line;
        size_t i;
        int named = 0, found = 1;
        struct rubric r;
        files++;
        sp = json_object_get(doc, "speed");
        json_array_foreach(sp, i, line) {
            const char *name = json_string_value(json_object_get(line, "metric"));
            named++;
            if (!metric_find(name)) {
                fprintf(stderr, "# %s: speed[%zu].metric \"%s\" is not in the table\n", path, i,
                        name ? name : "(none)");
                found = 0;
            }
        }
        int rc = doc ? rubric_parse(doc, NULL, &r, err, sizeof err) : -EINVAL;
        if (rc == 0)
            for (i = 0; i < r.nspeed; i++)
                found &= r.speed[i].metric ==
                         metric_find(json_string_value(
                             json_object_get(json_array_get(sp, i), "metric")));
        else
            fprintf(stderr, "# %s: %s\n", path, err);
        ok(doc && rc == 0 && found && named > 0,
           "rubrics/%s: its %d speed metric(s) resolve to rows of the table", de->d_name, named);
        if (rc == 0)
            rubric_free(&r);
        json_decref(doc);
    }
    if (d)
        closedir(d);
    ok(files >= 5, "every lab's rubric was read (%d)", files);
}

static void test_unknown(void)
{
    struct rubric r;
    char err[512];
    int rc = parse_speed("ratio_to_cuBLAS", 2, &r, err, sizeof err);
    ok(rc == -EINVAL && strstr(err, "speed[0].metric") &&
           strstr(err, "\"ratio_to_cuBLAS\" is not a metric"),
       "an unknown metric is refused, naming the field and the value: %s", err);
    int all = 1;
    for (size_t i = 0; metric_at(i); i++)
        all &= strstr(err, metric_at(i)->name) != NULL;
    check(all, "...and the sentence lists every metric of the table");
    rc = parse_speed("bandwidth_share", 1.2, &r, err, sizeof err);
    ok(rc == -EINVAL && strstr(err, "threshold"),
       "a share's threshold above its row's largest (1) is refused: %s", err);
    rc = parse_speed("ratio_to_cublas", 1.2, &r, err, sizeof err);
    check(rc == 0 && r.speed[0].metric == metric_find("ratio_to_cublas"),
          "a ratio's 1.2 is fine, and the line points at the row");
    if (rc == 0) {
        const char *tier;
        check(rubric_speed_points(&r.speed[0], 1.1, &tier) == 1 &&
                  rubric_speed_points(&r.speed[0], 1.3, &tier) == 0,
              "a tier of a lower-is-better row is met at or below its threshold");
        rubric_free(&r);
    }
}

static void test_arithmetic(void)
{
    const struct metric *ratio = metric_find("ratio_to_cublas");
    const struct metric *cpu = metric_find("speedup_vs_cpu");
    const struct metric *share = metric_find("bandwidth_share");
    char buf[32];
    check(fabs(metric_value(ratio, 3, 2, 0, 0) - 1.5) < 1e-12, "time over baseline: 3/2");
    check(fabs(metric_value(cpu, 2, 100, 0, 0) - 50) < 1e-12, "baseline over time: 100/2");
    /* 1e9 bytes in 1 ms = 1000 GB/s, of 2000 GB/s: half. */
    check(fabs(metric_value(share, 1, 0, 1e9, 2000) - 0.5) < 1e-12, "share of the copy bandwidth");
    check(isnan(metric_value(ratio, 3, NAN, 0, 0)) && isnan(metric_value(ratio, 0, 2, 0, 0)) &&
              isnan(metric_value(share, 1, 0, 0, 2000)),
          "a missing input gives NAN, not 0 or inf");
    check(fabs(metric_speedup(ratio, 2) - 0.5) < 1e-12 && metric_speedup(cpu, 2) == 2 &&
              isnan(metric_speedup(cpu, 0)) && isnan(metric_speedup(cpu, NAN)),
          "speedup: lower-is-better inverted, higher-is-better kept, none from 0 or NAN");
    metric_format(ratio, 1.5, buf, sizeof buf);
    ok(strcmp(buf, "1.50x") == 0, "a ratio is shown with its unit: %s", buf);
    metric_format(share, 0.6123, buf, sizeof buf);
    ok(strcmp(buf, "0.612") == 0, "a share is shown as a fraction: %s", buf);
    metric_format(share, NAN, buf, sizeof buf);
    check(strcmp(buf, "n/a") == 0, "no value is shown as n/a");
    char names[256];
    metric_names(names, sizeof names);
    check(strncmp(names, "ratio_to_cublas, ratio_to_optimized, ", 37) == 0,
          "metric_names lists the table, comma-separated");
    metric_names(names, 8);
    check(strlen(names) == 7, "metric_names truncates to the buffer");
}

int main(void)
{
    const char *repo = getenv("CUGRADE_ROOT");
    test_rows();
    test_unknown();
    test_arithmetic();
    if (repo)
        test_repo_rubrics(repo);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
