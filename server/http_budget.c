/*
 * http_budget.c - what all connections together may hold, and who makes
 * room when it is full. See http.h (struct http_limits).
 *
 * Bytes: answers waiting to be written and request bodies being read are
 * counted against one budget (max_buffered). Per connection they were
 * already capped (HTTP_WRITE_HIGH, the body limits), but 10,000 clients
 * that pipeline GET /static/style.css and never read each held ~135 KiB:
 * 1.3 GiB, OOM-killed in a 1 GiB cgroup. Over the budget, the connection
 * holding bytes that went longest without progress (nothing read from it,
 * nothing of its answers taken) is closed first; a body that does not fit
 * after that is refused (503) before it is read.
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

/* Close connections holding bytes, the one longest without progress
 * first (never except, nor one whose request a handler holds), until need
 * more bytes fit in the budget. 0, or -ENOBUFS when they do not. */
static int budget_make_room(struct http_server *s, size_t need, struct http_conn *except)
{
    while (s->buffered + need > s->lim.max_buffered) {
        struct http_conn *v = NULL;
        for (struct http_conn *c = s->conns; c; c = c->next)
            if (c != except && c->accounted > 0 && !c->closing && !c->deferred &&
                (!v || c->progress_tick < v->progress_tick))
                v = c;
        if (!v)
            return -ENOBUFS;
        conn_close(v);
        s->shed_budget++;
    }
    return 0;
}

void conn_account(struct http_conn *c)
{
    struct http_server *s = c->srv;
    if (c->closing)
        return;
    size_t now = c->out.cap + c->write_pending + c->body.cap + (c->pending ? c->pending_len : 0);
    assert(s->buffered >= c->accounted);
    s->buffered = s->buffered - c->accounted + now;
    c->accounted = now;
    if (s->buffered > s->lim.max_buffered)
        budget_make_room(s, 0, c);
}

void conn_unaccount(struct http_conn *c)
{
    struct http_server *s = c->srv;
    assert(s->buffered >= c->accounted);
    s->buffered -= c->accounted;
    c->accounted = 0;
}

int conn_body_room(struct http_conn *c, uint64_t len)
{
    struct http_server *s = c->srv;
    if (len > s->lim.max_buffered)
        return -ENOBUFS;
    return budget_make_room(s, (size_t)len, c);
}

void http_server_shed(struct http_server *srv, uint64_t *idle_client, uint64_t *idle_global,
                      uint64_t *budget, size_t *buffered)
{
    *idle_client = srv->shed_client;
    *idle_global = srv->shed_global;
    *budget = srv->shed_budget;
    *buffered = srv->buffered;
}
