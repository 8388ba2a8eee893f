/*
 * common_rubric.c - unit tests for common/rubric.c: parsing, the errors an
 * admin sees for a bad PUT, tier selection, max_score, ISO times, and the
 * repository's own rubrics/ against its labs/. TAP output.
 */
#include "rubric.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"

static const char *good =
    "{\"lab\": \"matmul\",\n"
    " \"opens\": \"2026-11-01T00:00:00Z\",\n"
    " \"due\": \"2026-12-04T23:59:00Z\",\n"
    " \"late\": {\"policy\": \"accept\", \"hard_deadline\": \"2026-12-06T23:59:00Z\", "
    "\"penalty_percent_per_day\": 10},\n"
    " \"limits\": {\"max_in_flight\": 1, \"max_per_hour\": 30, \"max_attempts\": 3},\n"
    " \"correctness\": [{\"case\": \"1x1x1\", \"points\": 5, \"visibility\": \"visible\"},\n"
    "                 {\"case\": \"4096^3\", \"points\": 10, \"visibility\": "
    "\"after_due_date\"}],\n"
    " \"sanitizer\": {\"points\": 10, \"tools\": [\"memcheck\", \"racecheck\"]},\n"
    " \"speed\": [{\"name\": \"speed vs cuBLAS\", \"metric\": \"ratio_to_cublas\", "
    "\"requires_correct\": true,\n"
    "            \"tiers\": [{\"name\": \"within 2x of cuBLAS\", \"threshold\": 2.0, \"points\": "
    "30},\n"
    "                      {\"name\": \"within 3x of cuBLAS\", \"threshold\": 3.0, \"points\": "
    "20},\n"
    "                      {\"name\": \"within 6x of cuBLAS\", \"threshold\": 6.0, \"points\": "
    "10}]},\n"
    "           {\"name\": \"bandwidth\", \"metric\": \"bandwidth_share\", \"requires_correct\": "
    "false,\n"
    "            \"tiers\": [{\"name\": \"half\", \"threshold\": 0.5, \"points\": 4},\n"
    "                      {\"name\": \"most\", \"threshold\": 0.8, \"points\": 8}]}]}\n";

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (j == NULL) {
        fprintf(stderr, "# test JSON broken: %s\n", e.text);
        exit(2);
    }
    return j;
}

/* Parse good with the first occurrence of from replaced by to. */
static int parse_variant(const char *from, const char *to, const struct lab *lab, char *err,
                         size_t errlen)
{
    char text[8192];
    const char *p = strstr(good, from);
    struct rubric r;
    json_t *j;
    int rc;
    if (p == NULL) {
        fprintf(stderr, "# variant: \"%s\" not found\n", from);
        exit(2);
    }
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
    j = load(text);
    rc = rubric_parse(j, lab, &r, err, errlen);
    json_decref(j);
    if (rc == 0)
        rubric_free(&r);
    return rc;
}

static int refused(const char *from, const char *to, const char *needle)
{
    char err[512] = "";
    int rc = parse_variant(from, to, NULL, err, sizeof(err));
    if (rc != -EINVAL || strstr(err, needle) == NULL) {
        fprintf(stderr, "# rc=%d err=\"%s\" (wanted \"%s\")\n", rc, err, needle);
        return 0;
    }
    return 1;
}

int main(void)
{
    struct rubric r;
    char err[512], buf[64];
    const char *tier;
    double t;
    json_t *j = load(good);
    int rc;

    rc = rubric_parse(j, NULL, &r, err, sizeof(err));
    check(rc == 0, "the formats.md example parses");
    if (rc != 0) {
        fprintf(stderr, "# %s\n", err);
        return 1;
    }
    check(strcmp(r.lab, "matmul") == 0, "lab");
    check(r.due == 1796428740.0 && r.opens == 1793491200.0 && r.hard_deadline == 1796601540.0,
          "opens, due and hard_deadline in Unix seconds");
    check(r.late_policy == RUBRIC_LATE_ACCEPT && r.penalty_percent_per_day == 10, "late policy");
    check(r.max_in_flight == 1 && r.max_per_hour == 30 && r.max_attempts == 3, "limits");
    check(r.ncorrectness == 2 && strcmp(r.correctness[1].case_name, "4096^3") == 0 &&
              strcmp(r.correctness[1].visibility, "after_due_date") == 0 &&
              r.correctness[0].points == 5,
          "correctness lines");
    check(r.sanitizer_points == 10 && r.sanitize_memcheck && r.sanitize_racecheck, "sanitizer");
    check(r.profile == 1, "profiling hints are on without a \"profile\" key");
    {
        char perr[512] = "";
        const char *lim = "\"limits\": {";
        json_t *pj;
        struct rubric pr;
        char ptext[8192];
        const char *pp = strstr(good, lim);
        snprintf(ptext, sizeof(ptext), "%.*s\"profile\": false, %s", (int)(pp - good), good, pp);
        pj = load(ptext);
        check(rubric_parse(pj, NULL, &pr, perr, sizeof(perr)) == 0 && pr.profile == 0,
              "\"profile\": false turns profiling hints off");
        rubric_free(&pr);
        json_decref(pj);
        check(refused(lim, "\"profile\": \"no\", \"limits\": {", "profile: must be true or false"),
              "\"profile\" must be a boolean");
    }
    check(r.nspeed == 2 && r.speed[0].metric == metric_find("ratio_to_cublas") &&
              r.speed[0].requires_correct == 1 && r.speed[0].ntiers == 3 &&
              r.speed[1].metric == metric_find("bandwidth_share") &&
              r.speed[1].requires_correct == 0,
          "speed lines and metric direction");
    check(r.max_score == 5 + 10 + 10 + 30 + 8, "max_score = cases + sanitizer + best tier per line");

    {
        /* The handout says the rubric's tiers (rubric_handout), best first. */
        char tx[256];
        rubric_tiers_text(&r.speed[0], tx, sizeof tx);
        check(strcmp(tx, "**within 2x: 30 points**, within 3x: 20, within 6x: 10") == 0,
              "tiers text: a lower-is-better metric says 'within', the most points first");
        rubric_tiers_text(&r.speed[1], tx, sizeof tx);
        check(strcmp(tx, "**80%: 8 points**, 50%: 4") == 0,
              "tiers text: a share is a percentage, ordered by points not by the rubric's order");
        rubric_tiers_text(NULL, tx, sizeof tx);
        check(strcmp(tx, "no speed points") == 0, "tiers text: no line, no speed points");
        rubric_tiers_text(&r.speed[0], tx, 12);
        check(strlen(tx) == 11, "tiers text: truncated to the buffer, terminated");
        char *h =
            rubric_handout(&r, "Speed: {{tiers:ratio_to_cublas}}; copy: {{tiers:bandwidth_share}}."
                               " {{tiers:speedup_vs_cpu}} {{tiers:nope {{tiers:}} {{server}}");
        check(h && strcmp(h, "Speed: **within 2x: 30 points**, within 3x: 20, within 6x: 10; copy: "
                             "**80%: 8 points**, 50%: 4. no speed points {{tiers:nope {{tiers:}} "
                             "{{server}}") == 0,
              "handout: each {{tiers:METRIC}} is the rubric's line; a metric it has no line "
              "of is no speed points; anything else is left as written");
        free(h);
        h = rubric_handout(NULL, "a {{tiers:speedup_vs_cpu}}\n");
        check(h && strcmp(h, "a no speed points\n") == 0, "handout: no rubric, no speed points");
        free(h);
        check(rubric_handout(&r, NULL) == NULL, "handout: no text, NULL");
        char many[4096] = "\"tiers\": [";
        for (int i = 0; i < RUBRIC_MAX_TIERS; i++) /* and the example's three */
            snprintf(many + strlen(many), sizeof many - strlen(many),
                     "{\"name\": \"t%d\", \"threshold\": %d, \"points\": 1}, ", i, i + 2);
        strcat(many, "{\"name\": \"within 2x of cuBLAS\"");
        check(refused("\"tiers\": [{\"name\": \"within 2x of cuBLAS\"", many, "at most 16 tiers"),
              "a speed line of more than RUBRIC_MAX_TIERS tiers is refused");
    }
    check(rubric_speed_points(&r.speed[0], 1.5, &tier) == 30 && tier &&
              strcmp(tier, "within 2x of cuBLAS") == 0,
          "ratio 1.5 meets the 2x tier (best of all met)");
    check(rubric_speed_points(&r.speed[0], 2.0, &tier) == 30, "a threshold is inclusive");
    check(rubric_speed_points(&r.speed[0], 2.5, &tier) == 20 && strcmp(tier, "within 3x of cuBLAS") == 0,
          "ratio 2.5 meets the 3x tier");
    check(rubric_speed_points(&r.speed[0], 6.01, &tier) == 0 && tier == NULL,
          "ratio past the last tier earns nothing");
    check(rubric_speed_points(&r.speed[0], NAN, &tier) == 0 && tier == NULL,
          "a NaN metric (no timing) earns nothing");
    check(rubric_speed_points(&r.speed[1], 0.9, &tier) == 8 && strcmp(tier, "most") == 0,
          "higher-is-better: 0.9 meets the 0.8 tier");
    check(rubric_speed_points(&r.speed[1], 0.6, &tier) == 4, "higher-is-better: 0.6 meets 0.5 only");
    check(rubric_speed_points(&r.speed[1], 0.1, NULL) == 0, "higher-is-better: below all tiers");
    rubric_free(&r);
    check(r.lab == NULL && r.ncorrectness == 0, "rubric_free zeroes");
    json_decref(j);

    /* Bad documents: each refused with the field named. */
    check(refused("\"points\": 5,", "\"points\": -1,", "correctness[0].points: must be a number >= 0"),
          "negative points refused, field named");
    check(refused("\"points\": 5,", "\"points\": \"5\",", "correctness[0].points"),
          "string points refused");
    check(refused("\"visibility\": \"visible\"", "\"visibility\": \"public\"",
                  "correctness[0].visibility"),
          "unknown visibility refused");
    check(refused("\"metric\": \"ratio_to_cublas\"", "\"metric\": \"speed\"", "speed[0].metric"),
          "unknown metric refused");
    check(refused("\"due\"", "\"dew\"", "dew: unknown field"), "a misspelt key is refused");
    check(refused("\"due\": \"2026-12-04T23:59:00Z\",", "", "due: missing"), "due is required");
    check(refused("\"2026-12-04T23:59:00Z\"", "\"2026-12-04 23:59\"", "due: must be an ISO 8601"),
          "a malformed date refused");
    check(refused("\"2026-11-01T00:00:00Z\"", "\"2026-12-31T00:00:00Z\"", "opens: must be before due"),
          "opens after due refused");
    check(refused("\"2026-12-06T23:59:00Z\"", "\"2026-12-01T00:00:00Z\"", "late.hard_deadline"),
          "hard deadline before due refused");
    check(refused("\"policy\": \"accept\"", "\"policy\": \"maybe\"", "late.policy"),
          "unknown late policy refused");
    check(refused("\"penalty_percent_per_day\": 10", "\"penalty_percent_per_day\": 150",
                  "late.penalty_percent_per_day"),
          "penalty over 100% refused");
    check(refused("\"max_in_flight\": 1", "\"max_in_flight\": 1.5", "limits.max_in_flight"),
          "non-integer limit refused");
    check(refused("{\"case\": \"4096^3\"", "{\"case\": \"1x1x1\"", "correctness[1].case: \"1x1x1\" is listed twice"),
          "a case listed twice refused");
    check(refused("\"tools\": [\"memcheck\", \"racecheck\"]", "\"tools\": [\"helgrind\"]",
                  "sanitizer.tools[0]"),
          "unknown sanitizer tool refused");
    check(refused("\"threshold\": 0.5", "\"threshold\": 50", "speed[1].tiers[0].threshold"),
          "a bandwidth share threshold over 1 refused");
    check(refused("\"tiers\": [{\"name\": \"half\", \"threshold\": 0.5, \"points\": 4},\n"
                  "                      {\"name\": \"most\", \"threshold\": 0.8, \"points\": 8}]",
                  "\"tiers\": []", "speed[1].tiers: must be a non-empty array"),
          "empty tiers refused");
    check(refused("\"name\": \"bandwidth\"", "\"name\": \"speed vs cuBLAS\"", "used twice"),
          "duplicate speed line names refused");
    check(refused("\"requires_correct\": true", "\"requires_correct\": 1",
                  "speed[0].requires_correct"),
          "requires_correct must be a boolean");
    {
        json_t *a = json_array();
        rc = rubric_parse(a, NULL, &r, err, sizeof(err));
        check(rc == -EINVAL && strstr(err, "must be a JSON object"), "a non-object is refused");
        json_decref(a);
    }

    /* Against a lab: case names and the lab's name are checked. */
    {
        struct lab lab;
        struct lab_case cases[2] = {{.name = (char *)"1x1x1"}, {.name = (char *)"4096^3"}};
        memset(&lab, 0, sizeof(lab));
        lab.name = (char *)"matmul";
        lab.cases = cases;
        lab.ncases = 2;
        rc = parse_variant("\"due\"", "\"due\"", &lab, err, sizeof(err));
        check(rc == 0, "valid against its lab");
        rc = parse_variant("\"case\": \"4096^3\"", "\"case\": \"8192^3\"", &lab, err, sizeof(err));
        check(rc == -EINVAL && strstr(err, "correctness[1].case: \"8192^3\" is not a case of lab matmul"),
              "unknown case refused against the lab");
        lab.name = (char *)"reduction";
        rc = parse_variant("\"due\"", "\"due\"", &lab, err, sizeof(err));
        check(rc == -EINVAL && strstr(err, "lab:"), "another lab's rubric refused");
    }

    /* Defaults: no late, no limits, no sanitizer, no speed. */
    {
        json_t *m = load("{\"lab\":\"x\",\"due\":\"2026-12-15T23:59:00Z\","
                         "\"correctness\":[{\"case\":\"a\",\"points\":1}]}");
        rc = rubric_parse(m, NULL, &r, err, sizeof(err));
        check(rc == 0 && r.late_policy == RUBRIC_LATE_REFUSE && r.max_in_flight == 1 &&
                  r.max_attempts == 3 && r.nspeed == 0 && r.max_score == 1 &&
                  strcmp(r.correctness[0].visibility, "visible") == 0,
              "defaults: refuse late, limits, visible");
        if (rc == 0)
            rubric_free(&r);
        json_decref(m);
    }

    /* Times */
    check(rubric_time_parse("1970-01-01T00:00:00Z", &t) == 0 && t == 0, "epoch");
    check(rubric_time_parse("2026-12-04T23:59:00+01:00", &t) == 0 && t == 1796428740.0 - 3600,
          "a zone offset is applied");
    check(rubric_time_parse("2026-12-04T23:59:00.5Z", &t) == 0 && t == 1796428740.5,
          "fractional seconds");
    check(rubric_time_parse("2026-12-04T23:59:00", &t) == -EINVAL, "a time without zone is refused");
    check(rubric_time_parse("2026-02-30T00:00:00Z", &t) == -EINVAL, "February 30 refused");
    check(rubric_time_parse("2024-02-29T00:00:00Z", &t) == 0 &&
              rubric_time_parse("2026-02-29T00:00:00Z", &t) == -EINVAL,
          "leap years");
    check(rubric_time_parse("2026-12-04T23:59:00Zjunk", &t) == -EINVAL, "trailing junk refused");
    rubric_time_format(1796428740.0, buf, sizeof(buf));
    check(strcmp(buf, "2026-12-04T23:59:00Z") == 0, "format round-trips");

    /* The repository's rubrics against its labs. */
    {
        const char *repo = getenv("CUGRADE_ROOT");
        static const char *const names[] = {"reduction", "matmul", "embedding"};
        if (repo) {
            for (int i = 0; i < 3; i++) {
                char path[512], name[160];
                struct lab lab;
                json_error_t e;
                json_t *doc;
                snprintf(path, sizeof(path), "%s/labs/%s", repo, names[i]);
                rc = lab_load(path, &lab, err, sizeof(err));
                snprintf(name, sizeof(name), "rubrics/%s.json parses against labs/%s", names[i],
                         names[i]);
                if (rc != 0) {
                    fprintf(stderr, "# %s\n", err);
                    check(0, name);
                    continue;
                }
                snprintf(path, sizeof(path), "%s/rubrics/%s.json", repo, names[i]);
                doc = json_load_file(path, 0, &e);
                rc = doc ? rubric_parse(doc, &lab, &r, err, sizeof(err)) : -EINVAL;
                if (rc != 0)
                    fprintf(stderr, "# %s: %s\n", path, doc ? err : e.text);
                check(rc == 0 && r.max_score > 0 && r.due > 1.7e9, name);
                if (rc == 0)
                    rubric_free(&r);
                json_decref(doc);
                lab_free(&lab);
            }
        }
    }
    return failures ? 1 : 0;
}
