/*
 * http_budget.c - what all connections together may hold, and who makes
 * room when it is full. See http.h (struct http_limits).
 *
 * Bytes: answers waiting to be written (and pipelined requests waiting to
 * be parsed) are counted against one budget (max_buffered). Per connection
 * they were already capped (HTTP_WRITE_HIGH), but 10,000 clients that
 * pipeline GET /static/style.css and never read each held ~135 KiB:
 * 1.3 GiB, OOM-killed in a 1 GiB cgroup. Over the budget, the connection
 * holding answers that went longest without progress (nothing read from
 * it, nothing of its answers taken) is closed first. Request bodies being
 * read (credentials checked: an anonymous one is 4 KiB at most) are
 * counted apart, against four times the budget: a body that does not fit
 * is refused (503, a runner retries) before it is read, and never closes
 * another upload (thirty 8 MiB runner results at once are normal).
 *
 * Connections: the caps per client address (an IPv6 /64) and in all stay,
 * but a full cap no longer locks out the next comer while idle connections
 * hold it. At its address's cap, a new connection takes the place of that
 * address's connection idle longest (a classmate behind the same NAT as one
 * student's 64 idle sockets got 0 of 5 answers); at the server's cap, that
 * of the address holding the most connections, when it holds more than the
 * newcomer's (158 addresses x 64 idle keep-alive connections filled the
 * 10,000 and another address got nothing for 10 s). An idle connection is
 * one between requests with nothing to write: closing it loses nothing (a
 * client opens a new one; RFC 9112 9.3.1).
 */
#include "server/http.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "server/http_conn.h"

int conn_idle(const struct http_conn *c)
{
    return !c->in_message && !c->deferred && c->write_pending == 0 && c->out.len == 0 &&
           !c->pending && !c->lingering && !c->closing && !c->close_after_write;
}

/* The idle connection of client (NULL: of anyone) idle longest, but not
 * except; NULL when none. */
static struct http_conn *oldest_idle(struct http_server *s, const struct http_client *client,
                                     const struct http_conn *except)
{
    struct http_conn *best = NULL;
    for (struct http_conn *c = s->conns; c; c = c->next)
        if (c != except && conn_idle(c) && (!client || c->client == client) &&
            (!best || c->idle_tick < best->idle_tick))
            best = c;
    return best;
}

/* The client holding the most connections; NULL when none is counted. */
static struct http_client *largest_client(struct http_server *s)
{
    struct http_client *best = NULL;
    for (size_t i = 0; i < HTTP_CLIENT_BUCKETS; i++)
        for (struct http_client *e = s->clients[i]; e; e = e->next)
            if (!best || e->conns > best->conns)
                best = e;
    return best;
}

int conn_admit(struct http_server *s, struct http_conn *c)
{
    if (!c->via_proxy) {
        int rc = client_add(s, c, s->lim.max_conns_per_client);
        if (rc == -EMFILE) {
            struct http_conn *v = oldest_idle(s, client_find(s, c->client_key), c);
            if (!v) {
                s->refused_client++;
                return -EMFILE;
            }
            conn_close(v); /* uncounts it at once */
            s->shed_client++;
            rc = client_add(s, c, s->lim.max_conns_per_client);
        }
        if (rc)
            return rc;
    }
    if (s->nconns - s->nclosing <= s->lim.max_conns)
        return 0;
    struct http_client *big = largest_client(s);
    size_t mine = c->client ? c->client->conns : 1;
    struct http_conn *v = big && big->conns > mine ? oldest_idle(s, big, c) : NULL;
    if (!v) {
        s->refused_global++;
        return -EUSERS;
    }
    conn_close(v);
    s->shed_global++;
    return 0;
}

/* Close connections holding answers, the one longest without progress
 * first (never except, one whose request a handler holds, nor one reading
 * a body), until the answers fit in the budget. */
static void budget_make_room(struct http_server *s, struct http_conn *except)
{
    while (s->buffered > s->lim.max_buffered) {
        struct http_conn *v = NULL;
        for (struct http_conn *c = s->conns; c; c = c->next)
            if (c != except && c->accounted > 0 && c->accounted_body == 0 && !c->closing &&
                !c->deferred && (!v || c->progress_tick < v->progress_tick))
                v = c;
        if (!v)
            return;
        conn_close(v);
        s->shed_budget++;
    }
}

void conn_account(struct http_conn *c)
{
    struct http_server *s = c->srv;
    if (c->closing)
        return;
    size_t now = c->out.cap + c->write_pending + (c->pending ? c->pending_len : 0);
    assert(s->buffered >= c->accounted && s->bodies >= c->accounted_body);
    s->buffered = s->buffered - c->accounted + now;
    c->accounted = now;
    /* A body while it is being read (a finished request's small buffer is
     * kept for the next one and counts nowhere). */
    size_t body = c->in_message && !c->complete ? c->body.cap : 0;
    s->bodies = s->bodies - c->accounted_body + body;
    c->accounted_body = body;
    if (s->buffered > s->lim.max_buffered)
        budget_make_room(s, c);
}

void conn_unaccount(struct http_conn *c)
{
    struct http_server *s = c->srv;
    assert(s->buffered >= c->accounted && s->bodies >= c->accounted_body);
    s->buffered -= c->accounted;
    s->bodies -= c->accounted_body;
    c->accounted = c->accounted_body = 0;
}

int conn_body_room(struct http_conn *c, uint64_t len)
{
    struct http_server *s = c->srv;
    uint64_t cap = (uint64_t)s->lim.max_buffered * 4;
    return s->bodies + len > cap ? -ENOBUFS : 0;
}

void http_server_shed(struct http_server *srv, uint64_t *idle_client, uint64_t *idle_global,
                      uint64_t *budget, size_t *buffered)
{
    *idle_client = srv->shed_client;
    *idle_global = srv->shed_global;
    *budget = srv->shed_budget;
    *buffered = srv->buffered + srv->bodies;
}

uint64_t http_server_turn_waits(const struct http_server *srv)
{
    return srv->turn_waits;
}
