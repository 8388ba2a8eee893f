/*
 * server_throttle.c - unit tests (TAP) for the failed-credential throttle
 * (auth_throttle_*): the limit, the window on an explicit clock, clients
 * kept apart, a limit of 0, and a flood of addresses: the table keeps the
 * newest windows and its size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/auth.h"

#include "tests/unit/tap.h"

static void test_window(void)
{
    struct auth_throttle *t;
    ok(auth_throttle_new(3, 60, &t) == 0, "a throttle of 3 failures in 60 s");
    for (int i = 0; i < 3; i++) {
        ok(auth_throttle_wait(t, "10.0.0.1", 100 + i) == 0, "failure %d: not throttled yet", i + 1);
        auth_throttle_fail(t, "10.0.0.1", 100 + i);
    }
    ok(auth_throttle_wait(t, "10.0.0.1", 102.5) == 58,
       "after the 3rd (window from t=100): wait 58 s at t=102.5 (%d)",
       auth_throttle_wait(t, "10.0.0.1", 102.5));
    ok(auth_throttle_wait(t, "10.0.0.1", 159.2) == 1, "at t=159.2: wait 1 s (rounded up)");
    ok(auth_throttle_wait(t, "10.0.0.2", 102.5) == 0, "another client is not throttled");
    ok(auth_throttle_wait(t, "10.0.0.1", 160) == 0, "at t=160 the window has ended");
    auth_throttle_fail(t, "10.0.0.1", 161);
    ok(auth_throttle_wait(t, "10.0.0.1", 161) == 0, "a failure after it starts a new count (1 of 3)");
    auth_throttle_fail(t, "10.0.0.1", 162);
    auth_throttle_fail(t, "10.0.0.1", 163);
    ok(auth_throttle_wait(t, "10.0.0.1", 163) == 58, "...and 3 in the new window throttle again");
    auth_throttle_free(t);

    ok(auth_throttle_new(0, 60, &t) == 0, "a throttle with limit 0");
    for (int i = 0; i < 100; i++)
        auth_throttle_fail(t, "10.0.0.1", 100);
    ok(auth_throttle_wait(t, "10.0.0.1", 100) == 0, "limit 0 never throttles");
    auth_throttle_free(t);
    ok(auth_throttle_wait(NULL, "10.0.0.1", 100) == 0, "no throttle: never throttled");
}

static void test_flood(void)
{
    struct auth_throttle *t;
    char addr[64];
    auth_throttle_new(2, 60, &t);
    auth_throttle_fail(t, "192.0.2.1", 100);
    auth_throttle_fail(t, "192.0.2.1", 100);
    /* 100,000 other addresses fail once each, later: the table keeps its
     * size; the oldest windows make room. */
    for (int i = 0; i < 100000; i++) {
        snprintf(addr, sizeof(addr), "2001:db8:%x:%x::/64", i >> 16, i & 0xffff);
        auth_throttle_fail(t, addr, 101 + i * 1e-6);
    }
    int held = 0;
    for (int i = 99000; i < 100000; i++) {
        snprintf(addr, sizeof(addr), "2001:db8:%x:%x::/64", i >> 16, i & 0xffff);
        auth_throttle_fail(t, addr, 102);
        held += auth_throttle_wait(t, addr, 102) > 0;
    }
    ok(held == 1000, "the 1000 newest of 100,000 addresses are remembered (%d)", held);
    /* The price of a bounded table, documented in auth.h: a flood of
     * 100,000 addresses (each bucket of 8 got some 200) forgets an older
     * throttled client. */
    ok(auth_throttle_wait(t, "192.0.2.1", 102) == 0,
       "192.0.2.1, throttled before the flood, was evicted by it");
    auth_throttle_free(t);
}

int main(void)
{
    test_window();
    test_flood();
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
