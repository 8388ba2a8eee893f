/*
 * http_client.c - connections counted per client address (or IPv6 /64),
 * and the addresses of trusted proxies. See http.h.
 */
#include "server/http.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http_conn.h"

/* ---- clients: connections per address ---- */

void addr_from_sockaddr(const struct sockaddr_storage *sa, struct http_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (sa->ss_family == AF_INET) {
        a->family = AF_INET;
        memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->ss_family == AF_INET6) {
        const struct in6_addr *in6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(in6)) {
            a->family = AF_INET;
            memcpy(a->b, &in6->s6_addr[12], 4);
        } else {
            a->family = AF_INET6;
            memcpy(a->b, in6, 16);
        }
    }
}

/* Parse len bytes of text: "1.2.3.4", "2001:db8::1" or "[2001:db8::1]".
 * Returns 0 or -EINVAL. */
int addr_from_text(const char *text, size_t len, struct http_addr *a)
{
    char buf[INET6_ADDRSTRLEN + 2];
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        text++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, text, len);
    buf[len] = '\0';
    memset(a, 0, sizeof(*a));
    struct in6_addr in6;
    if (inet_pton(AF_INET, buf, a->b) == 1) {
        a->family = AF_INET;
    } else if (inet_pton(AF_INET6, buf, &in6) == 1) {
        struct sockaddr_storage ss = {.ss_family = AF_INET6};
        ((struct sockaddr_in6 *)&ss)->sin6_addr = in6;
        addr_from_sockaddr(&ss, a);
    } else {
        return -EINVAL;
    }
    return 0;
}

int addr_equal(const struct http_addr *x, const struct http_addr *y)
{
    return x->family && x->family == y->family &&
           memcmp(x->b, y->b, x->family == AF_INET ? 4 : 16) == 0;
}

/* The text per-client limits count a for: IPv4 as is, IPv6 as its /64, the
 * block one subscriber usually holds (counting single IPv6 addresses would
 * let one host take every connection). "" for no address. */
void addr_client_key(const struct http_addr *a, char *key, size_t klen)
{
    char text[INET6_ADDRSTRLEN];
    key[0] = '\0';
    if (a->family == AF_INET) {
        inet_ntop(AF_INET, a->b, key, (socklen_t)klen);
    } else if (a->family == AF_INET6) {
        unsigned char prefix[16] = {0};
        memcpy(prefix, a->b, 8);
        if (inet_ntop(AF_INET6, prefix, text, sizeof(text)))
            snprintf(key, klen, "%s/64", text);
    }
}

static size_t client_bucket(const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % HTTP_CLIENT_BUCKETS;
}

/* The entry of client key; NULL when it holds no connection. */
struct http_client *client_find(struct http_server *s, const char *key)
{
    struct http_client *e = s->clients[client_bucket(key)];
    while (e && strcmp(e->key, key) != 0)
        e = e->next;
    return e;
}

/* Count c against its client. Returns 0, -EMFILE when the client already
 * holds max connections (c is not counted then), or -ENOMEM. */
int client_add(struct http_server *s, struct http_conn *c, size_t max)
{
    assert(c->client == NULL);
    struct http_client **head = &s->clients[client_bucket(c->client_key)], *e;
    for (e = *head; e; e = e->next)
        if (strcmp(e->key, c->client_key) == 0)
            break;
    if (e && e->conns >= max)
        return -EMFILE;
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e)
            return -ENOMEM;
        snprintf(e->key, sizeof(e->key), "%s", c->client_key);
        e->next = *head;
        *head = e;
    }
    e->conns++;
    c->client = e;
    return 0;
}

/* Uncount c; the client's entry goes with its last connection. */
void client_remove(struct http_server *s, struct http_conn *c)
{
    struct http_client *e = c->client;
    if (!e)
        return;
    c->client = NULL;
    assert(e->conns > 0);
    if (--e->conns > 0)
        return;
    struct http_client **pp = &s->clients[client_bucket(e->key)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    free(e);
}
