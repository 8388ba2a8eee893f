/*
 * runner_warm.c - unit tests for runner/service/warm.c, which labs a
 * serving runner keeps warm job children for: none before a Python claim;
 * after one, the lab gets the runner's whole room; a second lab claimed
 * takes one child from the first (the oldest ends); a lab with no claim
 * for WARM_IDLE_S keeps none; a child taken is gone from the set (a warm
 * child serves one job), the oldest first; one that ended before its job
 * is forgotten, and the next fill starts another. Prints TAP.
 */
#include <stdio.h>
#include <string.h>

#include "runner/service/warm.h"

#include "tests/unit/tap.h"

static pid_t next_pid = 100;

/* Start what warm_next asks for at time now until it asks for nothing
 * (at most 10): returns how many, and the labs in order in got. */
static int fill(size_t room, double now, char *got, size_t len)
{
    int n = 0;
    got[0] = '\0';
    for (const char *lab; n < 10 && (lab = warm_next(room, now)); n++) {
        struct warm_kid w = {.pid = next_pid++, .job = -1, .lane = -1, .grant = -1, .born = now};
        snprintf(w.lab, sizeof w.lab, "%s", lab);
        warm_add(&w);
        snprintf(got + strlen(got), len - strlen(got), "%s%s", *got ? "," : "", lab);
    }
    return n;
}

/* Call warm_next until it ends nothing more (it ends one a call, asking
 * for nothing then). */
static void settle(size_t room, double now)
{
    for (int i = 0; i < 10 && warm_count() > 0; i++) {
        size_t before = warm_count();
        if (warm_next(room, now) || warm_count() == before)
            return;
    }
}

int main(void)
{
    char got[256];
    struct warm_kid w;

    check(warm_room(1) == 1 && warm_room(2) == 1 && warm_room(8) == 2 && warm_room(16) == 4 &&
              warm_room(64) == WARM_MAX,
          "room: a child for every four CPU lane slots, at least 1, at most WARM_MAX");
    check(fill(4, 0, got, sizeof got) == 0, "no Python claim yet: no warm child");

    warm_want("reduction", 10);
    ok(fill(4, 10, got, sizeof got) == 4 &&
           strcmp(got, "reduction,reduction,reduction,reduction") == 0,
       "one lab claimed: it gets the whole room (%s)", got);
    check(fill(4, 11, got, sizeof got) == 0, "full: nothing more");

    warm_want("matmul", 20);
    settle(4, 20);
    int n = fill(4, 20, got, sizeof got);
    ok(n == 3 && strcmp(got, "matmul,matmul,matmul") == 0 && warm_count() == 4,
       "a second lab claimed: the first keeps one child (its oldest ones end), the lab claimed "
       "last gets the rest (%s)",
       got);
    check(warm_take("reduction", &w) && w.pid >= 100 && w.pid <= 103 && warm_count() == 3,
          "a claim of the first lab takes its child, which leaves the set");
    pid_t first = w.pid;
    check(!warm_take("embedding", &w), "a lab with no warm child: none to take (a cold child)");
    warm_want("reduction", 21);
    settle(4, 21);
    n = fill(4, 21, got, sizeof got);
    ok(n == 3 && strcmp(got, "reduction,reduction,reduction") == 0 && warm_count() == 4,
       "claimed last now, the first lab gets the room back with new children (%s); the one taken "
       "is never among them",
       got);
    check(warm_take("reduction", &w) && w.pid != first, "the next claim gets the new child");
    fill(4, 21, got, sizeof got);

    check(warm_reaped(w.pid) == 0, "a pid already taken is not a warm child");
    check(warm_take("matmul", &w) && warm_reaped(w.pid) == 0, "taken, then reaped: not ours");
    fill(4, 22, got, sizeof got);
    size_t before = warm_count();
    pid_t dead = 0;
    if (warm_take("reduction", &w)) { /* put it back: it dies waiting */
        dead = w.pid;
        warm_add(&w);
    }
    check(dead && warm_reaped(dead) == 1 && warm_count() == before - 1,
          "a warm child that ended before its job is forgotten");
    check(fill(4, 22, got, sizeof got) == 1, "and the next fill starts another");

    settle(4, 22 + WARM_IDLE_S + 1);
    check(warm_count() == 0 && fill(4, 22 + WARM_IDLE_S + 1, got, sizeof got) == 0,
          "no claim for WARM_IDLE_S: every warm child ends, none starts");

    warm_want("reduction", 1000);
    fill(4, 1000, got, sizeof got);
    size_t was = warm_ending(), n_end = warm_count();
    pid_t last = next_pid - 1;
    warm_end_all();
    check(warm_count() == 0 && warm_ending() == was + n_end,
          "the runner stops: every warm child ends, and is waited for until reaped");
    check(warm_reaped(last) == 1 && warm_ending() == was + n_end - 1,
          "an ended child reaped is no longer waited for");
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
