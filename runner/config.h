/*
 * config.h - the runner's environment switches, all in one table
 * (config.c): each CUGRADE_* variable the runner reads has one row there
 * (name, default, range or allowed values, unit, one line of doc, and its
 * kind: operator, tuning or test hook), one parser fills struct
 * runner_config from the environment, and every runner file reads its
 * switch from runner_cfg(), never getenv. A value out of its range is an
 * error at start naming the switch, the range and the value: the runner
 * refuses to start rather than run on a default nobody asked for.
 *
 * `cugrade-runner --help-env` prints the table; docs/runner.md's
 * "Environment switches" section is that table (`--help-env markdown`),
 * and tests/runner/config.t checks both against the sources.
 *
 * Variables the runner writes into a child's environment (the sandbox's,
 * the owner's, the harness's) are not switches and are not here.
 */
#ifndef CUGRADE_RUNNER_CONFIG_H
#define CUGRADE_RUNNER_CONFIG_H

#include <limits.h>
#include <stdio.h>

/* What a switch is for; --help-env and the doc list them in this order. */
enum runner_config_kind {
    RUNNER_CONFIG_OPERATOR, /* set by whoever deploys a runner */
    RUNNER_CONFIG_TUNING,   /* a measured default; change it with a benchmark */
    RUNNER_CONFIG_TEST,     /* set by tests/ (faults, short timeouts, no GPU) */
};

/* runner_config.sandbox_user's values (CUGRADE_SANDBOX_USER). */
enum { RUNNER_USER_AUTO, RUNNER_USER_ROOT, RUNNER_USER_NOBODY, RUNNER_USER_BOX };

/* The switches' values, after parsing. A text switch left unset or empty
 * is "" unless its row has a default; an integer switch whose row has no
 * default is -1 when unset. Booleans are 0 or 1. */
struct runner_config {
    /* operator */
    char root[PATH_MAX];
    char bwrap[PATH_MAX];
    char ncu[PATH_MAX];
    char python[PATH_MAX];
    char cgroup[1024];
    long sandbox_uid_base;
    long runners_per_host;
    long gpu_memory_mb;
    double profile_wait;
    /* tuning */
    double baseline_refresh;
    long front_jobs;
    double front_seconds;
    long compile_nice;
    double gpu_down_wait;
    double gpu_probe_seconds;
    /* test hooks */
    long no_gpu;
    long sandbox_user;
};

/* Fill *c from the environment: every row of the table, its default when
 * the variable is unset or empty. Returns 0, or -EINVAL with a sentence in
 * err (room for len) naming the first bad switch, its allowed values and
 * the value given; *c is then only partly filled. */
int runner_config_parse(struct runner_config *c, char *err, size_t len);

/* Parse the environment again into the runner's configuration (for
 * main's start, and for tests that change the environment). Returns 0, or
 * -EINVAL with err as runner_config_parse says, the configuration in use
 * then unchanged. */
int runner_config_reload(char *err, size_t len);

/* The runner's configuration, parsed on first use. A bad value then ends
 * the process (exit 2) with the parser's sentence on stderr: main parses it
 * first, so that the runner refuses to start, not a job half-way. Never
 * NULL. */
const struct runner_config *runner_cfg(void);

/* Print the table to f: markdown 0, for a terminal (`--help-env`); 1, the
 * markdown table of docs/runner.md's "Environment switches" section. */
void runner_config_print(FILE *f, int markdown);

/* The installation prefix of interpreter python, "PREFIX/bin/NAME" (a
 * venv's), into out (room for len): a directory other than /. Returns 0,
 * or -EINVAL when python is not in such a bin/. */
int runner_python_prefix(const char *python, char *out, size_t len);

/* The number of rows in the table (tests), and how many are of kind. */
size_t runner_config_count(int kind);

#endif
