/*
 * runner_failure.c - unit tests for run_failure (runner/run/run.c) and
 * job_check_failure (runner/grade/job_check.c): the
 * sentence a student reads when a run ended badly. A wall-clock timeout
 * names the program's own time, not the sandbox's set-up (ours, and not
 * counted against the limit); a CPU-time timeout names the CPU time used,
 * not the wall clock. Prints TAP lines.
 */
#include <stdio.h>
#include <string.h>

#include "runner/run/run.h"
#include "runner/gpu/share.h"
#include "runner/grade/job.h"

#include "tests/unit/tap.h"

int main(void)
{
    struct sandbox_verdict v;
    char buf[1024]; /* job.h why_buf's size */
    const char *m;

    memset(&v, 0, sizeof v);
    v.exited = 1;
    check(run_failure(&v, buf, sizeof buf) == NULL, "a clean exit 0: no sentence");

    memset(&v, 0, sizeof v);
    v.timed_out = 1;
    v.wall_seconds = 12.4;
    v.setup_seconds = 2.3;
    m = run_failure(&v, buf, sizeof buf);
    check(m && strstr(m, "ran past the time limit (10.1 s)"),
          "a wall-clock timeout names the program's own 10.1 s, not the 12.4 s with our set-up");

    memset(&v, 0, sizeof v);
    v.timed_out = 1;
    v.cpu_limit = 1;
    v.wall_seconds = 3.0;
    v.cpu_seconds = 40.2;
    m = run_failure(&v, buf, sizeof buf);
    check(m && strstr(m, "40.2 s of CPU time") && !strstr(m, "3.0"),
          "a CPU-time timeout names the CPU time used (40.2 s), not the wall clock");

    /* A check run's sentence (job_check_failure): a wall-clock timeout
     * says how its limit was set and which case ran; a CPU-time timeout
     * is not given the wall limit's advice (an endless loop, a limit of
     * 12 s) for a program that used 40 s of CPU in 3 s of wall clock. */
    struct run_limits l;
    memset(&l, 0, sizeof l);
    l.derived = 1, l.naive_seconds = 0.42, l.factor = 5, l.floor = 10, l.startup = 2;
    /* A run that shared the GPU: 12 s of share in 30 s of wall time. */
    struct share_clock sc;
    memset(&sc, 0, sizeof sc);
    sc.used = 12.0, sc.wall = 30.0, sc.peak_users = 3;
    m = job_check_failure(&v, &l, 12.0, "2^28", &sc, buf, sizeof buf);
    check(m && strstr(m, "40.2 s of CPU time") && strstr(m, "every thread") &&
              !strstr(m, "time limit of 12.0 s") && !strstr(m, "loop that never ends") &&
              !strstr(m, "shared the GPU"),
          "a check run's CPU-time timeout: the CPU sentence, not the wall limit's advice nor "
          "the GPU share's (the CPU limit counts no share)");
    v.cpu_limit = 0;
    v.wall_seconds = 14.0;
    m = job_check_failure(&v, &l, 12.0, "2^28", NULL, buf, sizeof buf);
    check(m && strstr(m, "time limit of 12.0 s while case 2^28 was running") &&
              strstr(m, "naive reference") && !strstr(m, "shared the GPU"),
          "a check run's wall-clock timeout: its limit, how it was set, the case that ran");
    m = job_check_failure(&v, &l, 12.0, NULL, NULL, buf, sizeof buf);
    check(m && !strstr(m, "while case"), "a hidden case is not named");
    m = job_check_failure(&v, &l, 12.0, "2^28", &sc, buf, sizeof buf);
    check(m && strstr(m, "time limit of 12.0 s") && strstr(m, "up to 3 at once") &&
              strstr(m, "12.0 s of share in 30.0 s of wall time"),
          "a wall-clock timeout beside other jobs says the limit counted its share");
    /* Stretched by a busy host's CPUs alone (runner/gpu/share.h): said
     * so, and not blamed on other jobs on the GPU. */
    memset(&sc, 0, sizeof sc);
    sc.limit = 4.0, sc.used = 4.0, sc.wall = 20.0, sc.peak_users = 1, sc.stalled = 16.0;
    m = job_check_failure(&v, &l, 4.0, "2^28", &sc, buf, sizeof buf);
    check(m && strstr(m, "CPUs were busy") && strstr(m, "16.0 s of waiting for a CPU") &&
              strstr(m, "4.0 s counted in 20.0 s") && !strstr(m, "shared the GPU"),
          "a timeout stretched by the host's CPUs says so, and names no GPU sharing");
    sc.peak_users = 2;
    m = job_check_failure(&v, &l, 4.0, "2^28", &sc, buf, sizeof buf);
    check(m && strstr(m, "up to 2 at once") && strstr(m, "CPUs were busy"),
          "both causes, both said");
    /* A little more wall than the limit for neither cause (the sandbox's
     * own set-up): no sentence about either. */
    sc.peak_users = 1, sc.stalled = 0.1, sc.wall = 5.0;
    m = job_check_failure(&v, &l, 4.0, "2^28", &sc, buf, sizeof buf);
    check(m && !strstr(m, "shared the GPU") && !strstr(m, "CPUs"),
          "no cause that did not happen is named (up to 1 at once was once said)");

    memset(&v, 0, sizeof v);
    v.output_limit = 1;
    v.timed_out = 1;
    m = run_failure(&v, buf, sizeof buf);
    check(m && strstr(m, "Output limit exceeded"), "an output flood says so, whatever else ended it");
    return failures ? 1 : 0;
}
