/*
 * runner_admit.c - unit tests for runner/gpu/admit.c, GPU memory admission:
 * the fit rule, the ledger shared by processes (a second job waits while a
 * live one holds the memory, is admitted once it lets go, and a dead
 * process's entry does not wedge the GPU), the device record's memory, and
 * the reservation of each phase of a job (lock.h): the check run's biggest
 * case, the timing case after it, the sanitizers' small case alone; and
 * the turn: a job waiting for a big reservation is not passed by younger,
 * smaller ones that fit in the gaps; and a waiter asked to give itself
 * back (the runner's hand-back) leaves the queue at once; and threads of
 * one runner reading and rewriting ledgers at once lose no entry.
 * Prints TAP lines.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"

#include "tests/unit/tap.h"

/* A child that reserves mb and then waits for a byte on a pipe (or exits
 * at once when hold is 0). Returns its pid; *ready is read once it holds. */
static pid_t holder(const char *path, unsigned long long mb, int hold, int *go_fd)
{
    int ready[2], go[2];
    if (pipe(ready) < 0 || pipe(go) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        long long tok;
        close(go[1]); /* EOF on go[0] once the parent closes its end */
        close(ready[0]);
        char c = admit_reserve(path, 1000, mb, 1, &tok, NULL) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(2);
        if (hold && read(go[0], &c, 1) < 0)
            _exit(3);
        _exit(0);
    }
    char c = 0;
    if (read(ready[0], &c, 1) != 1 || c != 'y')
        pid = -1;
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    *go_fd = go[1];
    return pid;
}

/* A child that waits in turn (queue) for mb of 1000, at most 5 s, then
 * writes 'y' or 'n' on the returned pipe and holds until killed. */
static pid_t waiter(const char *path, const char *queue, unsigned long long mb, int *result_fd)
{
    int res[2];
    if (pipe(res) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        long long tok;
        close(res[0]);
        char c =
            admit_reserve_turn(path, queue, 1000, mb, 5, &tok, NULL, NULL, NULL) == 0 ? 'y' : 'n';
        if (write(res[1], &c, 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    close(res[1]);
    *result_fd = res[0];
    return pid;
}

/* Read the waiter's answer within secs: 'y', 'n', or 0 (none yet). */
static char waiter_answer(int fd, double secs)
{
    fd_set s;
    FD_ZERO(&s);
    FD_SET(fd, &s);
    struct timeval tv = {(time_t)secs, (suseconds_t)((secs - (time_t)secs) * 1e6)};
    char c = 0;
    if (select(fd + 1, &s, NULL, NULL, &tv) == 1 && read(fd, &c, 1) != 1)
        c = 0;
    return c;
}

/* The turn (admit_reserve_turn): another process holds 800 of 1000; an
 * older waiter wants 500, a younger one 100 (which fits beside the 800).
 * The younger waits behind the older; both are admitted once the 800 go. */
static void check_turn(const char *path)
{
    char queue[] = "/tmp/cugrade-admitq-XXXXXX";
    int qfd = mkstemp(queue), go = -1, big = -1, small = -1;
    long long tok = 0;
    check(qfd >= 0, "a queue ledger");
    close(qfd);
    pid_t holder_pid = holder(path, 800, 1, &go);
    pid_t older = waiter(path, queue, 500, &big);
    check(holder_pid > 0 && older > 0 && waiter_answer(big, 0.3) == 0,
          "800 of 1000 held: a job waiting for 500 waits");
    check(admit_count(queue) == 1, "it is in the queue while it waits");
    check(admit_reserve_turn(path, queue, 1000, 100, 0.3, &tok, NULL, NULL, NULL) == -EBUSY &&
              tok == 0,
          "a younger job of 100, which fits beside the 800, waits behind it");
    check(admit_reserve_turn(path, NULL, 1000, 100, 0, &tok, NULL, NULL, NULL) == 0 && tok > 0 &&
              admit_release(path, tok) == 0,
          "(by fit alone, outside the turn, 100 would have been admitted)");
    pid_t younger = waiter(path, queue, 100, &small);
    check(younger > 0 && waiter_answer(small, 0.3) == 0, "so does a younger waiting process");
    kill(holder_pid, SIGKILL); /* (the waiters share its pipe: no EOF for it) */
    waitpid(holder_pid, NULL, 0);
    close(go);
    check(waiter_answer(big, 2) == 'y', "the 800 let go: the older waiter is admitted");
    check(waiter_answer(small, 2) == 'y', "and the younger one beside it (500 + 100 fit)");
    check(admit_count(queue) == 0 && admit_count(path) == 2, "the queue is empty, both hold");
    kill(older, SIGKILL);
    kill(younger, SIGKILL);
    waitpid(older, NULL, 0);
    waitpid(younger, NULL, 0);
    close(big);
    close(small);
    check(admit_count(path) == 0, "killed, their entries are dropped");
    unlink(queue);
}

static int asked(void *arg)
{
    return *(int *)arg;
}

/* Hand-back (admit_reserve_turn's give_up): a waiter told to give up (its give_up answers 1)
 * leaves the queue with -EXDEV at its next look, not after its wait; one
 * that fits at its first look is admitted whatever the flag. */
static void check_give_up(const char *path)
{
    char queue[] = "/tmp/cugrade-admitq-XXXXXX";
    int qfd = mkstemp(queue), go = -1;
    long long tok = 0;
    int flag = 1;
    check(qfd >= 0, "a queue ledger");
    close(qfd);
    pid_t holder_pid = holder(path, 800, 1, &go);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = admit_reserve_turn(path, queue, 1000, 500, 30, &tok, NULL, asked, &flag);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (r != -EXDEV || secs >= 10)
        printf("# answer %d after %.2f s\n", r, secs);
    check(holder_pid > 0 && r == -EXDEV && tok == 0 && secs < 10,
          "800 of 1000 held: a waiter for 500 asked to hand itself back gives up at once, not "
          "after its 30 s");
    check(admit_count(queue) == 0, "and is out of the queue");
    check(admit_reserve_turn(path, queue, 1000, 100, 5, &tok, NULL, asked, &flag) == 0 && tok > 0 &&
              admit_release(path, tok) == 0,
          "a job of 100 that fits at its first look is admitted, asked or not");
    kill(holder_pid, SIGKILL);
    waitpid(holder_pid, NULL, 0);
    close(go);
    unlink(queue);
}

/* Threads of one runner use the ledgers at once (job threads, share
 * clocks reading the GPU's users ledger every 100 ms): one thread's parse
 * of a ledger must not take lines from another's. With strtok (one hidden
 * position for the whole process) a rewrite after a mixed-up read dropped
 * live entries, on an H200 "cannot shrink its GPU reservation: No such
 * file or directory", and admission let in more than fit. */
#define THREAD_ROUNDS 5000
#define THREAD_ENTRIES 60

static void *count_other(void *arg)
{
    const char *other = arg;
    for (int i = 0; i < THREAD_ROUNDS; i++)
        (void)admit_count(other);
    return NULL;
}

static void check_threads(void)
{
    char path[] = "/tmp/cugrade-admit-XXXXXX", other[] = "/tmp/cugrade-admit-XXXXXX";
    long long tok[THREAD_ENTRIES], t;
    int fd = mkstemp(path), fd2 = mkstemp(other), lost = 0, bad_count = 0;
    check(fd >= 0 && fd2 >= 0, "two ledger files");
    close(fd);
    close(fd2);
    for (int i = 0; i < THREAD_ENTRIES; i++)
        if (admit_reserve(path, 1u << 30, 1000 + i, 0, &tok[i], NULL) != 0)
            tok[i] = 0;
    for (int i = 0; i < 2; i++)
        (void)admit_reserve(other, 1u << 30, 7, 0, &t, NULL);
    check(admit_count(path) == THREAD_ENTRIES && admit_count(other) == 2,
          "a ledger of 60 entries and another of 2");
    pthread_t th;
    int started = pthread_create(&th, NULL, count_other, other) == 0;
    for (int i = 0; i < THREAD_ROUNDS; i++) {
        if (admit_resize(path, tok[i % THREAD_ENTRIES], 1000 + i % THREAD_ENTRIES) != 0)
            lost++;
        if (admit_count(path) != THREAD_ENTRIES)
            bad_count++;
    }
    if (started)
        pthread_join(th, NULL);
    check(started && lost == 0 && bad_count == 0 && admit_count(path) == THREAD_ENTRIES,
          "5000 rewrites of a ledger while another thread reads another: no entry lost "
          "(resizes that found none, counts off)");
    if (lost || bad_count)
        printf("# %d resizes found no entry, %d counts were off\n", lost, bad_count);
    unlink(path);
    unlink(other);
}

int main(void)
{
    struct admit_entry e[2] = {{1, 1, 600}, {2, 2, 300}};
    char path[] = "/tmp/cugrade-admit-XXXXXX", rec[] = "/tmp/cugrade-devrec-XXXXXX";
    long long tok = -1, tok2 = -1, tok3 = -1;
    double waited = 0;
    int go = -1;

    check(admit_fits(NULL, 0, 1000, 5000), "a job alone always fits, even past the capacity");
    check(admit_fits(e, 1, 1000, 400) && !admit_fits(e, 1, 1000, 401), "600 + 400 fits in 1000, 401 does not");
    check(!admit_fits(e, 2, 1000, 200), "600 + 300 + 200 does not fit in 1000");
    check(admit_fits(e, 2, 0, 99999), "capacity 0 (unknown): admission is off");

    int fd = mkstemp(path);
    check(fd >= 0, "a ledger file");
    close(fd);
    check(admit_reserve(path, 0, 500, 0, &tok, NULL) == 0 && tok == 0,
          "unknown capacity: admitted at once, no entry");
    check(admit_reserve(path, 1000, 600, 0, &tok, NULL) == 0 && tok > 0, "a first job is admitted");
    check(admit_reserve(path, 1000, 600, 0.3, &tok2, &waited) == -EBUSY && waited >= 0.3 && tok2 == 0,
          "a second job that does not fit waits, then -EBUSY");
    check(admit_reserve(path, 1000, 300, 0, &tok2, NULL) == 0 && tok2 > 0 && tok2 != tok,
          "a job that fits beside it is admitted");
    check(admit_release(path, tok) == 0 && admit_release(path, tok2) == 0, "both let go");
    check(admit_reserve(path, 1000, 900, 0, &tok, NULL) == 0, "after they let go the memory is free");
    check(admit_release(path, tok) == 0 && admit_release(path, 0) == 0, "release; token 0 is a no-op");

    /* A job whose biggest case is behind it shrinks its reservation: the
     * next one is admitted beside it without waiting for its end. */
    check(admit_reserve(path, 1000, 900, 0, &tok, NULL) == 0, "a big job holds 900 of 1000");
    check(admit_reserve(path, 1000, 500, 0.2, &tok2, NULL) == -EBUSY, "500 more does not fit");
    check(admit_resize(path, tok, 400) == 0, "the big job shrinks to 400");
    check(admit_reserve(path, 1000, 500, 0, &tok2, NULL) == 0, "now 500 fits beside it at once");
    check(admit_resize(path, tok, 950) == 0 &&
              admit_reserve(path, 1000, 101, 0.1, &tok3, NULL) == -EBUSY &&
              admit_reserve(path, 1000, 100, 0, &tok3, NULL) == 0,
          "a resize never grows a reservation (400 stays 400: 100 fits, 101 does not)");
    check(admit_resize(path, 12345, 1) == -ENOENT, "an unknown token: -ENOENT");
    check(admit_resize(path, 0, 1) == 0, "token 0 is a no-op");
    check(admit_release(path, tok) == 0 && admit_release(path, tok2) == 0 &&
              admit_release(path, tok3) == 0 && admit_count(path) == 0,
          "all three let go");

    pid_t pid = holder(path, 800, 1, &go);
    check(pid > 0, "another process holds 800 of 1000");
    check(admit_reserve(path, 1000, 500, 0.2, &tok, NULL) == -EBUSY, "while it lives, 500 more waits");
    close(go); /* its read returns 0: it exits without letting go */
    waitpid(pid, NULL, 0);
    check(admit_reserve(path, 1000, 500, 0, &tok, NULL) == 0,
          "a dead process's reservation is dropped: a crashed runner cannot wedge the GPU");
    admit_release(path, tok);
    check_turn(path);
    check_give_up(path);
    check_threads();
    unlink(path);

    fd = mkstemp(rec);
    const char *line = "{\"type\":\"device\",\"name\":\"NVIDIA H100 80GB HBM3\",\"mem_bytes\":85045460992,\"runtime\":13000}\n";
    check(fd >= 0 && write(fd, line, strlen(line)) == (ssize_t)strlen(line), "a device record");
    close(fd);
    check(admit_device_mb(rec) == 81105, "the device record's memory in MiB");
    unlink(rec);
    check(admit_device_mb(rec) == 0, "no record: 0 (admission off)");

    /* Per phase (docs/runner.md, "GPU memory admission"): the reduction
     * lab's declarations, two sanitizers. */
    struct lab red;
    memset(&red, 0, sizeof red);
    red.device_mb = 9800, red.timing_device_mb = 1280, red.sanitize_device_mb = 256;
    unsigned long long ctx = ADMIT_CONTEXT_MB, al = ADMIT_STUDENT_MB;
    check(lock_admit_need(&red, 2, 0) == 9800 + al + 4 * ctx,
          "the check run: the biggest case, the allowance, check + judge + 2 sanitizers");
    check(lock_admit_need(&red, 2, 1) == 9800 + al + 5 * ctx,
          "a Python check run: the owner's and the tenant's contexts, the judge's, 2 sanitizers'");
    check(lock_admit_after_check(&red, 2, 0) == 1280 + al + 4 * ctx &&
              lock_admit_after_check(&red, 0, 0) == 1280 + al + 2 * ctx,
          "timed: the timing case, with the sanitizers' contexts until they end");
    check(lock_admit_after_check(&red, 2, 1) == 1280 + al + 5 * ctx &&
              lock_admit_after_check(&red, 0, 1) == 1280 + al + 3 * ctx,
          "a Python job timed: the timing case, its owner's, tenant's and judge's contexts "
          "(and the sanitizers' until they end)");
    check(lock_admit_sanitize_only(&red, 2) == 256 + al + 3 * ctx,
          "only the sanitizers left: their small case, the judge's and their contexts");
    check(lock_admit_sanitize_only(&red, 0) == ctx, "nothing left but the judge: its context");
    check(lock_admit_time_prestart(&red, 0) == 1280 + ctx,
          "a CUDA timing run started beside the check: its case and the harness's context");
    check(lock_admit_time_prestart(&red, 1) == 1280 + 2 * ctx,
          "a Python one: its case, the owner's and the tenant's contexts (both before the gate)");
    red.sanitize_device_mb = 9800; /* undeclared: device_mb; never above after_check */
    check(lock_admit_sanitize_only(&red, 2) == lock_admit_after_check(&red, 2, 0),
          "an undeclared sanitize case keeps no more than after the check");
    return failures ? 1 : 0;
}
