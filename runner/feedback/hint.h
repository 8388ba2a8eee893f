/*
 * hint.h - the classic-bug catalogue (docs/runner.md "Hints: the
 * classic-bug catalogue"): each entry of the course's troubleshooting
 * guides (a missing bounds check, a missing __syncthreads(), a 32-bit
 * index that wraps...) is a recognizer over what the runner knows of a
 * graded job -- the judge's per-case records, the harness's launch
 * errors, the program's stderr, the sanitizers' findings, the cases'
 * sizes, the student's source -- and a text that names the bug and its
 * fix with the numbers of the case at hand.
 *
 * The catalogue is the one place that says "this looks like bug X": the
 * judges report facts (what was wrong, where, by how much), score.c
 * prints what the catalogue recognized (cugrade.hints, hint_details, the
 * case's feedback line). A hint is about the student's code only: our
 * failures (system_error, a sanitizer that could not run) never reach it.
 */
#ifndef CUGRADE_HINT_H
#define CUGRADE_HINT_H

#include <jansson.h>
#include <stddef.h>

#include "lab.h"
#include "runner/run/verdict.h"

#define HINT_MAX 16 /* hints of one job: one per catalogue entry at most */
#define HINT_TEXT_MAX 720

/* Numbers of the profiler (runner/feedback/profile.c) for the timed case's
 * kernel, when it ran: the hooks of the three entries that need them.
 * A field that was not measured is NAN (or line 0). */
struct hint_profile {
    const char *kernel;               /* the kernel's name, may be NULL */
    const char *file;                 /* "kernel.cu", may be NULL */
    int line_uncoalesced;             /* each entry's worst source line (the profile's */
    int line_bank_conflicts;          /* source page), 0 when unknown: one kernel may */
    int line_divergence;              /* have all three, each on a line of its own */
    double sectors_per_request;       /* global loads+stores: 32-byte sectors per request */
    double ideal_sectors_per_request; /* what a coalesced access would take (4 for 4-byte words) */
    double bank_conflict_ways;        /* shared wavefronts per shared request (1: none) */
    double branch_efficiency;         /* 0..1: share of branches all threads of a warp agreed on */
};

/* What the runner knows of a job, borrowed for the call. Any pointer may
 * be NULL (the fact is unknown). */
struct hint_facts {
    const struct lab *lab; /* the cases' sizes (params) */
    int python;            /* a .py submission (Numba/CuPy) */
    const char *source;    /* the student's file, source_len bytes */
    size_t source_len;
    const char *program_err;        /* stderr of the run whose prints are the feedback */
    const struct score_case *cases; /* the judge's records (+ "not run" ones) */
    size_t ncases;
    const json_t *case_errors; /* the harness's launch errors: case -> "status: error: cause" */
    const struct score_sanitizer *sanitizers;
    size_t nsanitizers;
    const struct hint_profile *profile;
};

/* One recognized bug. */
struct hint {
    const char *id;           /* the catalogue entry, e.g. "float32-saturation" (static) */
    char case_name[128];      /* the case it was seen in, "" when not one case's */
    char text[HINT_TEXT_MAX]; /* Markdown, for the student */
};

struct hint_list {
    size_t n;
    struct hint v[HINT_MAX];
};

/* Run every recognizer of the catalogue over f, in the catalogue's order,
 * into out (emptied first): at most one hint per entry, the first case
 * (in f->cases' order) that shows it. Never fails: an entry whose facts
 * are missing does not fire. */
void hint_recognize(const struct hint_facts *f, struct hint_list *out);

/* The hint of entry id in l, or NULL. */
const struct hint *hint_find(const struct hint_list *l, const char *id);

/* The catalogue's ids, NULL-terminated (static), for docs and tests. */
const char *const *hint_ids(void);

#endif
