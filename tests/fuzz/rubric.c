/*
 * rubric.c - libFuzzer target: common/rubric.c, as an admin's rubric edit
 * reaches it (the server loads the body with JSON_REJECT_DUPLICATES and
 * validates it against the lab). The input is the document; it is checked
 * against labs/matmul (run from the repository root) and against no lab.
 * An accepted rubric must be self-consistent; a refused one must say why.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lab.h"
#include "common/rubric.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct lab matmul;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[512];
    if (lab_load("labs/matmul", &matmul, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz/rubric: run from the repository root: %s\n", err);
        exit(2);
    }
    return 0;
}

/* A deadline read back from its own formatting is the same second. */
static void check_time(double t)
{
    char buf[32], again[32];
    double back;
    if (t == 0)
        return;
    rubric_time_format(t, buf, sizeof(buf));
    if (strlen(buf) != 20) /* a year past 9999 does not format in four digits */
        return;
    assert(rubric_time_parse(buf, &back) == 0);
    assert(back == floor(t));
    rubric_time_format(back, again, sizeof(again));
    assert(strcmp(buf, again) == 0);
}

static void check_rubric(const json_t *doc, const struct lab *lab)
{
    struct rubric r;
    char err[512];
    int rc = rubric_parse(doc, lab, &r, err, sizeof(err));
    assert(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
    if (rc != 0) {
        assert(err[0] != '\0');
        return;
    }
    assert(r.lab && r.due > 0 && (r.opens == 0 || r.opens < r.due));
    assert(r.hard_deadline == 0 || r.hard_deadline >= r.due);
    assert(isfinite(r.max_score) && r.max_score >= 0);
    for (size_t i = 0; i < r.ncorrectness; i++) {
        assert(r.correctness[i].case_name && r.correctness[i].visibility);
        assert(r.correctness[i].points >= 0);
        if (lab)
            assert(lab_case_find(lab, r.correctness[i].case_name));
    }
    for (size_t i = 0; i < r.nspeed; i++) {
        static const double probe[] = {0, 0.5, 1, 2, 3.5, 10, 1e9, NAN, -1};
        for (size_t k = 0; k < sizeof(probe) / sizeof(probe[0]); k++) {
            const char *tier = NULL;
            double p = rubric_speed_points(&r.speed[i], probe[k], &tier);
            assert(p >= 0 && p <= r.max_score);
            assert(p == 0 || tier != NULL);
        }
    }
    check_time(r.opens);
    check_time(r.due);
    check_time(r.hard_deadline);
    rubric_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc)
        return 0;
    check_rubric(doc, &matmul);
    check_rubric(doc, NULL);
    if (json_is_string(doc)) { /* a bare time: the deadline parser alone */
        double t;
        if (rubric_time_parse(json_string_value(doc), &t) == 0 && t >= 0)
            check_time(t);
    }
    json_decref(doc);
    return 0;
}
