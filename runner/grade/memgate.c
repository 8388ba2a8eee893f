/*
 * memgate.c - see memgate.h.
 */
#include "runner/grade/memgate.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int memgate_parse(const char *line, char *name, size_t len)
{
    assert(line && name && len > 0);
    if ((line[0] != 'm' && line[0] != 'd') || line[1] != ' ')
        return 0;
    const char *n = line + 2;
    size_t k = strlen(n);
    if (k == 0 || k >= len)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (n[i] <= ' ' || n[i] > '~')
            return 0;
    memcpy(name, n, k + 1);
    return line[0];
}

static int stopping(void *p)
{
    struct memgate *g = p;
    return g->stop;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line from fd into buf (size len, no newline kept). Returns 1, or 0
 * at EOF, an error or a line too long. */
static int read_line(int fd, char *buf, size_t len)
{
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 1)
            return 0;
        if (c == '\n')
            break;
        if (n + 1 >= len)
            return 0;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return 1;
}

/* The case holding more gives it back. */
static void give_back(struct memgate *g)
{
    if (g->grown[0]) {
        g->ops.back(g->ops.arg, g->grown);
        g->grown[0] = '\0';
    }
}

/* "m NAME": the reservation up (the run's clocks stopped meanwhile), then
 * 'g' or 'n'. Returns 0, or -1 when the answer could not be written. */
static int serve_more(struct memgate *g, const char *name)
{
    give_back(g); /* one case at a time: an earlier one is over */
    double t0 = mono();
    if (g->pause)
        sandbox_pause_begin(g->pause);
    int r = g->ops.grow(g->ops.arg, name, stopping, g);
    if (g->pause)
        sandbox_pause_end(g->pause);
    g->waited += mono() - t0;
    g->asked++;
    if (r == 0)
        snprintf(g->grown, sizeof g->grown, "%s", name);
    char a = r == 0 ? 'g' : 'n';
    ssize_t w;
    do
        w = send(g->fd, &a, 1, MSG_NOSIGNAL); /* a gate shut: EPIPE, never SIGPIPE */
    while (w < 0 && errno == EINTR);
    return w == 1 ? 0 : -1;
}

static void *memgate_main(void *p)
{
    struct memgate *g = p;
    char line[96], name[80];
    while (!g->stop && read_line(g->fd, line, sizeof line)) {
        int kind = memgate_parse(line, name, sizeof name);
        if (kind == 'm' && serve_more(g, name) == 0)
            continue;
        if (kind == 'd' && strcmp(name, g->grown) == 0) {
            give_back(g);
            continue;
        }
        break; /* not the owner's protocol: answer nothing more */
    }
    give_back(g);
    shutdown(g->fd, SHUT_RDWR);
    return NULL;
}

int memgate_start(struct memgate *g, int fd, struct sandbox_pause *pause,
                  const struct memgate_ops *ops)
{
    assert(g && ops && ops->grow && ops->back && fd >= 0);
    memset(g, 0, sizeof *g);
    g->pause = pause;
    g->ops = *ops;
    if ((g->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        g->fd = -1;
        return -errno;
    }
    int r = pthread_create(&g->thread, NULL, memgate_main, g);
    if (r != 0) {
        close(g->fd);
        g->fd = -1;
        return -r;
    }
    g->started = 1;
    return 0;
}

void memgate_stop(struct memgate *g)
{
    if (!g || !g->started)
        return;
    g->stop = 1;
    shutdown(g->fd, SHUT_RDWR); /* a read under way ends */
    pthread_join(g->thread, NULL);
    close(g->fd);
    g->fd = -1;
    g->started = 0;
}

int memgate_pair_open(struct memgate_pair *p, const struct memgate_ops *ops)
{
    int sv[2];
    memset(p, 0, sizeof *p);
    p->ours = p->theirs = -1;
    sandbox_pause_init(&p->pause);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    int r = memgate_start(&p->g, sv[0], &p->pause, ops);
    if (r < 0) {
        close(sv[0]);
        close(sv[1]);
        return r;
    }
    p->ours = sv[0];
    p->theirs = sv[1];
    return 0;
}

void memgate_pair_close(struct memgate_pair *p)
{
    memgate_stop(&p->g);
    if (p->ours >= 0)
        close(p->ours);
    if (p->theirs >= 0)
        close(p->theirs);
    p->ours = p->theirs = -1;
}
