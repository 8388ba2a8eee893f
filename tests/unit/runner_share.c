/*
 * runner_share.c - unit tests for runner/gpu/share.c, the share clock: a run's
 * time limit counted on its share of the GPU. Alone it is the wall clock;
 * with four users in the ledger it runs four times as long on the wall
 * clock before it fires; a run that ends first is not a timeout; the fd it
 * hands the sandbox gets its byte when the limit is reached; a clock told to
 * yield cuts its run, not as a timeout, once a timing run waits. Prints TAP.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/gpu/admit.h"
#include "runner/sandbox/sandbox.h"
#include "runner/gpu/share.h"

#include "tests/unit/tap.h"

/* Wait for the clock's cancel byte (at most timeout_ms). 1 when it came. */
static int cancelled(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1;
}

int main(void)
{
    char dir[] = "/tmp/cugrade-share-XXXXXX", ledger[256];
    if (!mkdtemp(dir)) {
        printf("not ok - mkdtemp\n1..1\n");
        return 1;
    }
    snprintf(ledger, sizeof ledger, "%s/gpu-0.active", dir);

    check(share_of(1.0, 4) == 0.25 && share_of(1.0, 1) == 1.0 && share_of(1.0, 0) == 1.0,
          "share_of: wall time over the users, at least one");
    check(share_tick(1.0, 0, 0, 1) == 1.0 && share_tick(1.0, 0, 0.5, 1) == 0.5 &&
              share_tick(1.0, 0, 0.5, 2) == 0.25 && share_tick(1.0, 0.25, 0.25, 1) == 0.5,
          "share_tick: a tick less its pause and its CPU stall, over the users");
    check(share_tick(1.0, 0.6, 0.6, 1) == 0 && share_tick(0.1, 0, 0.3, 3) == 0,
          "share_tick: a stall or pause longer than the tick counts nothing, never less");

    /* Alone: the wall clock. */
    struct share_clock c;
    int fd = -1;
    check(share_clock_start(&c, ledger, 0.3, &fd) == 0 && fd >= 0, "a clock starts and hands an fd");
    int got = cancelled(fd, 5000);
    int fired = share_clock_stop(&c);
    check(got && fired, "alone, the clock fires: the sandbox's cancel fd gets its byte");
    check(c.used >= 0.3 && c.wall >= 0.3,
          "alone, the share is the wall clock (fired after about its limit)");

    /* Four users: this process holds four lines of the ledger. */
    long long tok[4];
    int held = 1;
    for (int i = 0; i < 4; i++)
        held &= admit_reserve(ledger, ~0ULL, 0, 0, &tok[i], NULL) == 0 && tok[i] != 0;
    check(held && admit_count(ledger) == 4, "four users in the ledger");
    check(share_clock_start(&c, ledger, 0.3, &fd) == 0, "a clock beside three other users");
    got = cancelled(fd, 10000);
    fired = share_clock_stop(&c);
    check(got && fired && c.peak_users == 4, "beside them it fires too, having seen 4 users");
    check(c.wall >= 0.3 * 3, "...but only after about four times its limit on the wall clock");

    /* A run that ends before its share is used up is no timeout. */
    check(share_clock_start(&c, ledger, 5.0, &fd) == 0, "a clock with a 5 s limit");
    got = cancelled(fd, 300);
    fired = share_clock_stop(&c);
    check(!got && !fired, "stopped after 0.3 s: no cancel byte, not fired");

    /* A timing run's clock (job_time.c): alone on the GPU (the exclusive
     * lock) the four lines are other jobs waiting, not sharing: the wall. */
    check(share_clock_start(&c, ledger, 0.3, &fd) == 0, "a clock beside four lines, then alone");
    share_clock_alone(&c);
    got = cancelled(fd, 5000);
    fired = share_clock_stop(&c);
    check(got && fired && c.wall < 0.3 * 3, "alone, it fires after about its limit, ledger or not");

    /* Paused (the wait at a timing run's gate), it counts nothing. */
    struct sandbox_pause pz;
    sandbox_pause_init(&pz);
    sandbox_pause_begin(&pz);
    check(share_clock_start_paused(&c, ledger, 0.3, &pz, &fd) == 0, "a paused clock");
    share_clock_alone(&c);
    got = cancelled(fd, 700);
    sandbox_pause_end(&pz);
    int late = cancelled(fd, 5000);
    fired = share_clock_stop(&c);
    check(!got && late && fired && c.wall >= 0.7 + 0.3,
          "paused for 0.7 s it does not fire; resumed, it fires after its limit");
    check(share_wall_ceiling(4, 8) == 8 && share_wall_ceiling(60, 8) == 60 &&
          share_wall_ceiling(300, 8) == 8 * SHARE_MAX_STRETCH,
          "the wall ceiling: the ceiling, at least the limit, at most 16 limits");

    /* A profile's clock yields to a timing run (profile_run.c): nothing in
     * the timing ledger, it runs on; a line there, it is cut at once. */
    char timing[256];
    snprintf(timing, sizeof timing, "%s/gpu-0.timing", dir);
    check(share_clock_start_yield(&c, ledger, 5.0, timing, &fd) == 0, "a clock that yields");
    got = cancelled(fd, 300);
    check(!got && !c.yielded, "no timing run waits: it runs on");
    long long ttok = admit_enter(timing);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    got = cancelled(fd, 5000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double after = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fired = share_clock_stop(&c);
    check(ttok != 0 && got && c.yielded && !fired && after < 1.0,
          "a timing run waits: the run is cut within a tick, yielded, not a timeout");
    admit_release(timing, ttok);
    unlink(timing);

    /* A warm run's clock (pool.c): started long before its job with the
     * ceiling as its limit, counted from zero to the job's limit when the
     * job comes. */
    check(share_clock_start(&c, ledger, 100.0, &fd) == 0, "a clock started before its job");
    got = cancelled(fd, 300);
    share_clock_restart(&c, 0.3);
    /* Beside four users the share is a quarter of the wall clock, so
     * used * 4 <= wall from a restart on: the 0.3 s before it (0.075 of
     * share) left in used would break that at once and at the end, where
     * a bound on used alone, or on the time to fire, cannot tell 0.075. */
    double used0 = c.used;
    int zeroed = used0 < 0.15 && c.wall < 0.15 && used0 * 4 <= c.wall + 1e-9 &&
                 c.limit == 0.3; /* within a tick of the restart */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int got2 = cancelled(fd, 5000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    after = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    fired = share_clock_stop(&c);
    ok(!got && zeroed && got2 && fired && after < 5.0 && c.used * 4 <= c.wall + 1e-9,
       "restarted to 0.3 s, it counts from zero and fires (after %.2f s beside four users; "
       "share %.3f s of %.3f s wall)",
       after, c.used, c.wall);

    for (int i = 0; i < 4; i++)
        admit_release(ledger, tok[i]);
    check(admit_count(ledger) == 0, "the users left the ledger");
    unlink(ledger);
    rmdir(dir);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
