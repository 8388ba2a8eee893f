/*
 * verdict.h - what a job's runs report about the student's program, as
 * every phase keeps it: a case's verdict from the judge, a sanitizer's
 * verdict and its findings; and student-influenced text made safe to
 * store and show.
 */
#ifndef CUGRADE_VERDICT_H
#define CUGRADE_VERDICT_H

#include <stddef.h>

struct score_case {
    char *name;
    int ran; /* 0: no verdict (the program died before it) */
    int passed;
    double max_abs_err, max_rel_err; /* NAN when unknown */
    long long first_bad_index;       /* -1 when none */
    long long unwritten;             /* -1 when unknown */
    char *message;                   /* may be NULL */
    int have_value;                  /* the judge sent got/expected (a one-value output: a sum) */
    double got, expected;            /* the output and the reference, when have_value */
};

struct score_finding {
    char *file; /* "kernel.cu", may be NULL */
    int line;   /* 0 when unknown */
    char *message;
    char *hint; /* may be NULL */
};

struct score_sanitizer {
    const char *tool; /* "memcheck" | "racecheck" */
    int ran;          /* 0: not run (e.g. the program crashed earlier) */
    int clean;
    int infra_failed; /* the sanitizer could not run for a reason of ours: not charged */
    struct score_finding *findings;
    size_t nfindings;
    char note[256]; /* why not run / how it ended, for the student */
};

/* Student-influenced text (program output, exception text, a sanitizer's
 * finding) made safe to store and show: the at most srclen bytes of src
 * (up to a NUL) copied into dst (len bytes, NUL-terminated) without control
 * characters (newline and tab kept; terminal escape sequences and C1
 * controls dropped whole), each byte that is not part of valid UTF-8
 * replaced by '?', and cut before a character that does not fit, never
 * inside one. flat: newline and tab become spaces and '`' becomes '\'', so
 * the text cannot leave a Markdown code span. dst may be src (the text
 * never grows). Returns 1 when src was cut, else 0. */
size_t score_text_clean(char *dst, size_t len, const char *src, size_t srclen, int flat);

void score_cases_free(struct score_case *cases, size_t n);
/* Free one finding's strings (the finding itself is its array's). */
void score_finding_clear(struct score_finding *f);
void score_sanitizer_clear(struct score_sanitizer *s);

#endif
