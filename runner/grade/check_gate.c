/*
 * check_gate.c - the memory gate of a CUDA check run (check_gate.h).
 */
#include "runner/grade/check_gate.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runner/gpu/admit.h"
#include "runner/gpu/lock.h"
#include "runner/grade/run.h"

/* The gate's thread: wait for 'b', grow, answer 'g'; then answer every
 * later 'b' at once (the growth is done) until the run ends. */
static void *check_gate_main(void *p)
{
    struct check_gate *g = p;
    char c = 0;
    for (;;) {
        ssize_t n;
        do
            n = read(g->fd, &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1 || c != 'b')
            return NULL; /* the run ended, or wrote what no harness says */
        if (!g->asked) {
            g->asked = 1;
            sandbox_pause_begin(&g->pause);
            g->r = admit_grow(g->ledger, g->token, g->capacity, ADMIT_MAX_WAIT, &g->stop,
                              &g->waited);
            sandbox_pause_end(&g->pause);
        }
        if (g->r < 0) {
            shutdown(g->fd, SHUT_RDWR); /* no 'g': the harness stops there */
            return NULL;
        }
        c = 'g';
        do /* the harness may be gone (killed): no SIGPIPE for us */
            n = send(g->fd, &c, 1, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n != 1)
            return NULL;
    }
}

int check_gate_open(struct check_gate *g, const char *ledger, long long token,
                    unsigned long long capacity, struct run_opts *o, int *child_fd)
{
    int sv[2];
    memset(g, 0, sizeof *g);
    g->fd = -1;
    g->ledger = ledger, g->token = token, g->capacity = capacity;
    sandbox_pause_init(&g->pause);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    g->fd = sv[0];
    /* Not run_task_start: this thread waits on the run, never inline. */
    g->started = pthread_create(&g->thread, NULL, check_gate_main, g) == 0;
    if (!g->started) {
        run_fd_close(&g->fd);
        close(sv[1]);
        return -EAGAIN;
    }
    *child_fd = sv[1];
    o->control_fd = sv[1];
    o->pause = &g->pause;
    return 0;
}

void check_gate_close(struct check_gate *g)
{
    if (g->fd < 0)
        return;
    g->stop = 1;
    shutdown(g->fd, SHUT_RDWR);
    run_task_join(&g->thread, &g->started);
    run_fd_close(&g->fd);
}

int check_gate_failed(const struct check_gate *g)
{
    assert(!g->started); /* read after check_gate_close */
    return g->asked && g->r < 0;
}
