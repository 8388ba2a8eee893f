/*
 * profile.c - libFuzzer target: runner/feedback/profile.c's reader of ncu's
 * `--csv --page raw` report. The report is a file in the sandbox's /work,
 * which the student's process can write too, so it is outside bytes: the
 * parser must never read past the text or crash, and whatever it accepts
 * must go through the hint rules and the result document. The same bytes
 * go through the source page's reader (profile_source.c) and the hints'
 * lines: bounded (PROFILE_SOURCE_MAX_LINES), and every kept line's text
 * printable ASCII without backticks.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/feedback/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    assert(text);
    memcpy(text, data, size);
    text[size] = '\0';
    static const char *const skip[] = {"hc_fill_u32", "mm_gen", NULL};
    struct profile_report r;
    profile_report_init(&r);
    int rc = profile_csv_parse(text, skip, &r);
    assert(rc == 0 || rc == -EBADMSG || rc == -ENOMEM);
    for (size_t i = 0; i < r.nkernels; i++)
        assert(r.kernels[i].name && json_is_object(r.kernels[i].metrics));
    struct profile_source src;
    profile_source_init(&src);
    int sr = profile_source_parse(text, "/work", &src);
    assert(sr == 0 || sr == -ENOMEM);
    assert(src.n <= PROFILE_SOURCE_MAX_LINES);
    for (size_t i = 0; i < src.n; i++) {
        assert(src.lines[i].line > 0 && src.lines[i].kernel && src.lines[i].file);
        for (const char *c = src.lines[i].text; *c; c++)
            assert(*c >= 0x20 && *c <= 0x7e && *c != '`');
    }
    json_t *doc = profile_json(&r, 1.0);
    if (doc) {
        json_t *hints = json_object_get(doc, "hints");
        assert(json_array_size(hints) <= PROFILE_MAX_HINTS);
        assert(json_array_size(json_object_get(doc, "kernels")) <= PROFILE_MAX_KERNELS);
        assert(profile_hints_locate(hints, &src) <= (int)json_array_size(hints));
        json_decref(doc);
    }
    /* a hint of each kind with a line, whatever the report held */
    json_t *three =
        json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]", "id", "uncoalesced_global", "text",
                  "u", "kernel", "k", "id", "bank_conflicts", "text", "b", "kernel", "k", "id",
                  "divergence", "text", "d", "kernel", "k");
    if (three) {
        assert(profile_hints_locate(three, &src) <= 3);
        json_decref(three);
    }
    profile_source_free(&src);
    profile_report_free(&r);
    free(text);
    return 0;
}
