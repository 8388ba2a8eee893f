/*
 * profile_hints.c - turn a saved ncu report into the result's profile:
 *
 *   profile_hints REPORT.csv [ROOT LAB [SOURCE.csv DIR]]
 *
 * reads `ncu --csv --page raw` output (as runner/feedback/profile.c asks for it) and
 * prints result.cugrade.profile as JSON, the lab's harness kernels left out
 * when ROOT and LAB are given, and the hints' source lines from ncu's
 * source page SOURCE.csv (the student's file in DIR) when given. For checking the hint rules on a
 * report captured on a GPU host, and for the page tests' fixture.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runner/feedback/profile.h"

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 4 && argc != 6) {
        fprintf(stderr, "usage: profile_hints REPORT.csv [ROOT LAB [SOURCE.csv DIR]]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static char text[16 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char **skip = argc >= 4 ? profile_harness_kernels(argv[2], argv[3]) : NULL;
    struct profile_report r;
    profile_report_init(&r);
    int rc = profile_csv_parse(text, (const char *const *)skip, &r);
    profile_names_free(skip);
    if (rc < 0) {
        fprintf(stderr, "profile_hints: cannot parse %s (%d)\n", argv[1], rc);
        return 1;
    }
    json_t *doc = profile_json(&r, 0.0);
    profile_report_free(&r);
    if (doc && argc == 6) {
        FILE *sf = fopen(argv[4], "rb");
        static char page[16 << 20];
        size_t pn = sf ? fread(page, 1, sizeof page - 1, sf) : 0;
        if (sf)
            fclose(sf);
        page[pn] = '\0';
        struct profile_source src;
        profile_source_init(&src);
        if (!sf || profile_source_parse(page, argv[5], &src) < 0) {
            fprintf(stderr, "profile_hints: cannot read %s\n", argv[4]);
            return 1;
        }
        profile_hints_locate(json_object_get(doc, "hints"), &src);
        profile_source_free(&src);
    }
    if (!doc || json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_SORT_KEYS) < 0)
        return 1;
    printf("\n");
    json_decref(doc);
    return 0;
}
