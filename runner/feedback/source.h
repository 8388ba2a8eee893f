/*
 * source.h - the student's source file read as text, for the hints
 * (runner/feedback/hint.c): comments and literals blanked, a barrier under a
 * thread-dependent condition, a launch configuration over the GPU's limits.
 * Every scan is bounded (a hostile file costs at most a few hundred million
 * character steps); sources over 256 KiB are not read at all.
 */
#ifndef CUGRADE_RUNNER_SOURCE_H
#define CUGRADE_RUNNER_SOURCE_H

#include <stddef.h>

/* A NUL-terminated copy of source (CUDA C, or Python when python) with
 * comments and string and character literals blanked, newlines kept so
 * lines still count: Python's '#' comments and every string form (' " '''
 * """, prefixed r b f u), CUDA C's // and block comments, "..." '...' and
 * R"(...)" raw strings. Caller frees; NULL when there is no source, it is
 * over the cap, or there is no memory. */
char *source_code(const char *source, size_t source_len, int python);

/* 1 when code (from source_code) has a barrier (__syncthreads() or
 * cuda.syncthreads()) under an if/while/for whose condition depends on the
 * thread: *line is its line, cond the condition (truncated to clen). */
int source_divergent_barrier(const char *code, int python, int *line, char *cond, size_t clen);

/* The first launch in code whose configuration, worked out from literals,
 * #defines and consts, is over the limits (1024 threads a block, grid y/z
 * 65535, 48 KiB of dynamic shared memory without opting in): a sentence
 * naming its line and number into buf, else "". */
void source_launch_over_limits(const char *code, int python, char *buf, size_t len);

#endif
