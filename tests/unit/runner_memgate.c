/*
 * runner_memgate.c - unit tests for runner/grade/memgate.c, the runner's
 * side of a Python owner's questions for its big cases' memory: the two
 * lines parsed (anything else refused), "m CASE" answered 'g' or 'n' with
 * the run's clock stopped while the job's side waits, "d CASE" given back,
 * a case still grown given back when the gate ends, garbage ending the
 * gate, and a stop that ends a wait under way. Prints TAP lines.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runner/grade/memgate.h"

#include "tests/unit/tap.h"

/* The job's side, played: grow answers after wait_ms (or when told to
 * give up), with answer; both count their calls. */
struct fake {
    int wait_ms, answer;
    atomic_int grows, backs, gave_up;
    char last[80];
};

static int fake_grow(void *arg, const char *name, int (*give_up)(void *), void *g)
{
    struct fake *f = arg;
    f->grows++;
    snprintf(f->last, sizeof f->last, "%s", name);
    for (int ms = 0; ms < f->wait_ms; ms += 10) {
        if (give_up(g)) {
            f->gave_up++;
            return -EXDEV;
        }
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return f->answer;
}

static void fake_back(void *arg, const char *name)
{
    struct fake *f = arg;
    f->backs++;
    (void)name;
}

/* Send line, read the one-byte answer (0 when none came). */
static char ask(int fd, const char *line)
{
    char c = 0;
    if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) || read(fd, &c, 1) != 1)
        return 0;
    return c;
}

static void wait_for(atomic_int *v, int want)
{
    for (int i = 0; i < 300 && *v < want; i++) {
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
}

int main(void)
{
    char name[80];
    check(memgate_parse("m 2.5e9", name, sizeof name) == 'm' && strcmp(name, "2.5e9") == 0,
          "\"m CASE\" is a question for the case's memory");
    check(memgate_parse("d 2^20+7", name, sizeof name) == 'd' && strcmp(name, "2^20+7") == 0,
          "\"d CASE\" gives it back");
    check(!memgate_parse("m ", name, sizeof name) && !memgate_parse("x 1", name, sizeof name) &&
              !memgate_parse("m  1", name, sizeof name) && !memgate_parse("m 1 2", name, sizeof name) &&
              !memgate_parse("m1", name, sizeof name) && !memgate_parse("", name, sizeof name),
          "anything else is refused (no name, another letter, spaces)");
    check(!memgate_parse("m abcdefgh", name, 8), "a name longer than its room is refused");

    struct fake f = {.wait_ms = 200, .answer = 0};
    struct memgate_ops ops = {fake_grow, fake_back, &f};
    struct memgate_pair p;
    check(memgate_pair_open(&p, &ops) == 0 && p.theirs >= 0, "a gate pair opens");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char a = ask(p.theirs, "m 2.5e9\n");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    check(a == 'g' && f.grows == 1 && strcmp(f.last, "2.5e9") == 0 && took >= 0.19,
          "\"m 2.5e9\": the job's side asked for that case, and 'g' once it answered");
    double stopped = sandbox_pause_seconds(&p.pause);
    check(stopped >= 0.19 && stopped <= took + 0.01,
          "the run's clock was stopped while the job's side waited");
    check(write(p.theirs, "d 2.5e9\n", 8) == 8, "\"d 2.5e9\" sent");
    wait_for(&f.backs, 1);
    check(f.backs == 1, "the case's memory is given back");
    f.answer = -EBUSY, f.wait_ms = 0;
    check(ask(p.theirs, "m 1000\n") == 'n' && f.grows == 2, "a question the job could not grant: 'n'");
    f.answer = 0;
    check(ask(p.theirs, "m 1000\n") == 'g', "granted");
    check(ask(p.theirs, "garbage\n") == 0, "a line that is not the protocol ends the gate: no answer");
    wait_for(&f.backs, 2);
    check(f.backs == 2, "and the case still grown is given back");
    memgate_pair_close(&p);
    check(p.ours == -1 && p.theirs == -1, "the pair closes");

    /* A stop while the job's side waits: the wait gives up. */
    struct fake g = {.wait_ms = 5000, .answer = 0};
    struct memgate_ops gops = {fake_grow, fake_back, &g};
    check(memgate_pair_open(&p, &gops) == 0, "a second pair");
    check(write(p.theirs, "m 2.5e9\n", 8) == 8, "a question");
    wait_for(&g.grows, 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memgate_pair_close(&p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    took = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    check(g.gave_up == 1 && took < 2 && g.backs == 0,
          "closing the gate (the run is over) ends a wait under way; nothing was granted");

    /* The owner gone (EOF) while a case is grown: given back. */
    struct fake h = {.wait_ms = 0, .answer = 0};
    struct memgate_ops hops = {fake_grow, fake_back, &h};
    check(memgate_pair_open(&p, &hops) == 0 && ask(p.theirs, "m 1\n") == 'g', "a third, grown");
    close(p.theirs);
    p.theirs = -1;
    wait_for(&h.backs, 1);
    check(h.backs == 1, "the owner gone: what it held is given back");
    memgate_pair_close(&p);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
