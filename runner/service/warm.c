/*
 * warm.c - see warm.h.
 */
#include "runner/service/warm.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define WANT_MAX 16 /* labs remembered */

static struct warm_kid warm[WARM_MAX];
static size_t nwarm;
#define ENDING_MAX 64
static pid_t ending[ENDING_MAX]; /* ended, not reaped yet */
static size_t nending;

static struct want {
    char lab[64];
    double last; /* the lab's last Python claim */
} wants[WANT_MAX];
static size_t nwants;

size_t warm_room(int jobs)
{
    size_t n = jobs > 0 ? (size_t)jobs / 4 : 0;
    return n < 1 ? 1 : n > WARM_MAX ? WARM_MAX : n;
}

void warm_want(const char *lab, double now)
{
    if (!lab || !*lab || strlen(lab) >= sizeof wants[0].lab)
        return;
    size_t i = 0;
    while (i < nwants && strcmp(wants[i].lab, lab) != 0)
        i++;
    if (i == nwants) {
        if (nwants == WANT_MAX) { /* forget the lab claimed longest ago */
            i = 0;
            for (size_t k = 1; k < nwants; k++)
                if (wants[k].last < wants[i].last)
                    i = k;
        } else {
            nwants++;
        }
        snprintf(wants[i].lab, sizeof wants[i].lab, "%s", lab);
    }
    wants[i].last = now;
}

static void warm_close(struct warm_kid *w)
{
    if (w->job >= 0)
        close(w->job); /* the child reads the end of its job pipe: it ends */
    if (w->lane >= 0)
        close(w->lane);
    if (w->grant >= 0)
        close(w->grant);
    w->job = w->lane = w->grant = -1;
}

static void warm_drop(size_t i)
{
    assert(i < nwarm);
    warm[i] = warm[--nwarm];
}

/* End warm child i: its job pipe closed, it is forgotten but for its pid,
 * which warm_reaped clears. */
static void warm_end(size_t i)
{
    warm_close(&warm[i]);
    if (nending < ENDING_MAX)
        ending[nending++] = warm[i].pid;
    warm_drop(i);
}

static size_t warm_of(const char *lab)
{
    size_t n = 0;
    for (size_t i = 0; i < nwarm; i++)
        n += strcmp(warm[i].lab, lab) == 0;
    return n;
}

/* How many warm children lab should have within room at time now: 1 for
 * each lab wanted (the most recent first), the rest for the most recent. */
static size_t warm_target(const char *lab, size_t room, double now)
{
    size_t rank = 0, wanted = 0;
    double mine = -1;
    for (size_t i = 0; i < nwants; i++)
        if (strcmp(wants[i].lab, lab) == 0)
            mine = wants[i].last;
    if (mine < 0 || now - mine > WARM_IDLE_S)
        return 0;
    for (size_t i = 0; i < nwants; i++) {
        if (now - wants[i].last > WARM_IDLE_S)
            continue;
        wanted++;
        rank += wants[i].last > mine;
    }
    if (rank >= room)
        return 0;
    return rank == 0 && room > wanted ? 1 + room - wanted : 1;
}

const char *warm_next(size_t room, double now)
{
    /* End the oldest child of a lab over its target (one a call). */
    for (size_t i = 0; i < nwarm; i++) {
        if (warm_of(warm[i].lab) <= warm_target(warm[i].lab, room, now))
            continue;
        size_t old = i;
        for (size_t k = 0; k < nwarm; k++)
            if (strcmp(warm[k].lab, warm[i].lab) == 0 && warm[k].born < warm[old].born)
                old = k;
        warm_end(old);
        return NULL;
    }
    if (nwarm >= room)
        return NULL;
    for (size_t i = 0; i < nwants; i++)
        if (warm_of(wants[i].lab) < warm_target(wants[i].lab, room, now))
            return wants[i].lab;
    return NULL;
}

void warm_add(const struct warm_kid *w)
{
    assert(nwarm < WARM_MAX);
    warm[nwarm++] = *w;
}

int warm_take(const char *lab, struct warm_kid *out)
{
    size_t best = nwarm;
    for (size_t i = 0; i < nwarm; i++)
        if (strcmp(warm[i].lab, lab) == 0 && (best == nwarm || warm[i].born < warm[best].born))
            best = i;
    if (best == nwarm)
        return 0;
    *out = warm[best];
    warm_drop(best);
    return 1;
}

int warm_reaped(pid_t pid)
{
    for (size_t i = 0; i < nending; i++)
        if (ending[i] == pid) {
            ending[i] = ending[--nending];
            return 1;
        }
    for (size_t i = 0; i < nwarm; i++)
        if (warm[i].pid == pid) {
            fprintf(stderr, "cugrade-runner: a warm child of %s ended before its job\n",
                    warm[i].lab);
            warm_close(&warm[i]);
            warm_drop(i);
            return 1;
        }
    return 0;
}

void warm_close_inherited(void)
{
    for (size_t i = 0; i < nwarm; i++)
        warm_close(&warm[i]);
    nwarm = nwants = nending = 0;
}

void warm_end_all(void)
{
    while (nwarm)
        warm_end(nwarm - 1);
}

size_t warm_ending(void)
{
    return nending;
}

size_t warm_count(void)
{
    return nwarm;
}
