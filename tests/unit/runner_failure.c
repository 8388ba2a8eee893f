/*
 * runner_failure.c - unit tests for run_failure (runner/grade/run.c): the
 * sentence a student reads when a run ended badly. A wall-clock timeout
 * names the program's own time, not the sandbox's set-up (ours, and not
 * counted against the limit); a CPU-time timeout names the CPU time used,
 * not the wall clock. Prints TAP lines.
 */
#include <stdio.h>
#include <string.h>

#include "runner/grade/run.h"

#include "tests/unit/tap.h"

int main(void)
{
    struct sandbox_verdict v;
    char buf[512];
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

    /* A check run's sentence (run_check_failure): a wall-clock timeout
     * says how its limit was set and which case ran; a CPU-time timeout
     * is not given the wall limit's advice (an endless loop, a limit of
     * 12 s) for a program that used 40 s of CPU in 3 s of wall clock. */
    struct run_limits l;
    memset(&l, 0, sizeof l);
    l.derived = 1, l.naive_seconds = 0.42, l.factor = 5, l.floor = 10, l.startup = 2;
    m = run_check_failure(&v, &l, 12.0, "2^28", buf, sizeof buf);
    check(m && strstr(m, "40.2 s of CPU time") && strstr(m, "every thread") &&
              !strstr(m, "time limit of 12.0 s") && !strstr(m, "loop that never ends"),
          "a check run's CPU-time timeout: the CPU sentence, not the wall limit's advice");
    v.cpu_limit = 0;
    v.wall_seconds = 14.0;
    m = run_check_failure(&v, &l, 12.0, "2^28", buf, sizeof buf);
    check(m && strstr(m, "time limit of 12.0 s while case 2^28 was running") &&
              strstr(m, "naive reference"),
          "a check run's wall-clock timeout: its limit, how it was set, the case that ran");
    m = run_check_failure(&v, &l, 12.0, NULL, buf, sizeof buf);
    check(m && !strstr(m, "while case"), "a hidden case is not named");

    memset(&v, 0, sizeof v);
    v.output_limit = 1;
    v.timed_out = 1;
    m = run_failure(&v, buf, sizeof buf);
    check(m && strstr(m, "Output limit exceeded"), "an output flood says so, whatever else ended it");
    return failures ? 1 : 0;
}
