/*
 * python.h - Python submissions (Numba, CuPy): how their runs are started
 * (docs/python.md). A .py file is not compiled and linked with a harness:
 * the trusted owner (labs/common/py/owner.py) runs in the sandbox, owns the
 * result channel, the buffers and the clock, and starts the student's code
 * in a process of its own (labs/common/py/tenant.py). The job's phases are
 * the same as for CUDA C (job.h) less the inspection and the link.
 */
#ifndef CUGRADE_PYTHON_H
#define CUGRADE_PYTHON_H

#include <stddef.h>

/* Seconds added to a Python run's derived wall limit (limit.h): the owner's
 * and the tenant's interpreters, CuPy's and Numba's imports and the JIT's
 * warm-up call, which the naive CUDA reference the limits come from does
 * not pay. Still capped by the lab's run_seconds. */
#define PYTHON_STARTUP_SECONDS 10.0

/* 1 when filename names a Python submission (ends in ".py"). */
int python_submission(const char *filename);

/* The interpreter every Python run uses, inside the sandbox as outside:
 * $CUGRADE_PYTHON, else /usr/bin/python3. It must live under /usr (the
 * sandbox binds /usr read-only, and nothing else of the host's). */
const char *python_interpreter(void);

/* 1 when Python runs use Numba's CUDA simulator (CUGRADE_PY_SIM=1: CI and
 * hosts without a GPU; the times mean nothing there). */
int python_simulated(void);

/* The seed reaches the owner in its environment, never on its command
 * line: /proc/PID/cmdline is readable by the student's process (same uid),
 * /proc/PID/environ of the non-dumpable owner is not (docs/python.md).
 * Writes "CUGRADE_SEED=<seed>" into out. */
void python_seed_env(const char *seed, char *out, size_t len);

/* The owner's command line for one run, into argv (cap entries, NULL
 * terminated): mode "check" with cases = "a,b,c", or "time" with cases =
 * the timing case and max_ms. src is the student's file name in /work.
 * The strings are borrowed; path (PATH_MAX bytes) holds the file's path.
 * Returns the number of entries. */
size_t python_owner_argv(const char **argv, size_t cap, const char *lab, const char *mode,
                         const char *seed, const char *cases, const char *max_ms,
                         const char *src, char *path);

#endif
