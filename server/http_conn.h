/*
 * http_conn.h - private to the HTTP files (http.c, http_message.c,
 * http_client.c, http_parse.c, http_frame.c, http_budget.c): the server and connection structs and the
 * helpers one of them calls in another. Nothing else includes this.
 */
#ifndef CUGRADE_HTTP_CONN_H
#define CUGRADE_HTTP_CONN_H

#include <http_parser.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>

#include "server/http.h"

#define HTTP_READ_CHUNK (64 * 1024)
/* A client that pipelines requests and never reads its answers makes us
 * work until these fill: its receive window, the kernel's unsent bytes
 * (TCP_NOTSENT_LOWAT keeps them near HTTP_NOTSENT_LOWAT, else the send
 * buffer autotunes to megabytes), and our own unsent bytes. Above
 * HTTP_WRITE_HIGH we stop parsing its requests until it reads. */
#define HTTP_WRITE_HIGH (256 * 1024)
#define HTTP_NOTSENT_LOWAT (64 * 1024)
/* Pipelined requests one connection may have handled per turn of the loop
 * before others get theirs (10 clients each pipelining 64 KiB of requests
 * would otherwise hold the loop for thousands of handler runs). */
#define HTTP_PIPELINE_BURST 16
/* Requests all connections together have handled in one turn of the loop
 * (one value of uv_now) before each further connection gets only its
 * first: 640 connections pipelining 16 static answers each made one turn
 * copy 140 MB and held /healthz for 150-250 ms. */
#define HTTP_TURN_REQUESTS 256
#define HTTP_CLIENT_BUCKETS 1024 /* hash buckets of the per-client connection counts */
#define HTTP_LINGER_MAX (1024 * 1024) /* bytes discarded after an error answer */
#define HTTP_LINGER_S 2.0
#define HTTP_KEEP_BUF (64 * 1024)  /* buffers above this are freed between requests */
#define HTTP_WRITEV_MIN (8 * 1024) /* bodies this big are written, not copied */

/* Open connections of one client address (or IPv6 /64). Exists while it
 * has any; chained in its hash bucket. */
struct http_client {
    struct http_client *next;
    size_t conns;
    char key[HTTP_CLIENT_KEY_MAX];
};

/* An address in canonical form: IPv4 (4 bytes) also when it came v4-mapped
 * on an IPv6 socket, else IPv6 (16 bytes). */
struct http_addr {
    int family; /* AF_INET, AF_INET6; 0: none */
    unsigned char b[16];
};

struct http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_timer_t grace;
    struct http_callbacks cb;
    struct http_limits lim;
    void *app;
    struct http_conn *conns;
    size_t nconns;
    struct http_client *clients[HTTP_CLIENT_BUCKETS];
    uint64_t refused_global, refused_client;
    uint64_t shed_client, shed_global, shed_budget; /* idle or stalled ones closed (http_budget.c) */
    size_t buffered; /* bytes of answers (and unparsed input) held, over all connections */
    size_t bodies;   /* bytes of request bodies being read, over all connections */
    size_t nclosing; /* of nconns, closed but not yet freed */
    uint64_t tick;   /* orders events for the http_budget.c choices (uv_now ties in a turn) */
    uint64_t turn_ms;       /* uv_now of the turn turn_requests counts in */
    unsigned turn_requests; /* requests handled in that turn (HTTP_TURN_REQUESTS) */
    uint64_t turn_waits;    /* http_server_turn_waits */
    struct http_addr proxies[HTTP_TRUSTED_PROXIES_MAX]; /* lim.trusted_proxies, parsed */
    size_t nproxies;
    int port;
    int stopping;
    int listener_closed, grace_closed, yield_closed;
    uv_idle_t yield;              /* resumes the connections that yielded their turn */
    struct http_conn *yield_head; /* ...linked by ynext */
    struct http_conn *yield_now;  /* those yield_cb is going through */
    void (*done)(void *arg);
    void *done_arg;
};

struct http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct http_server *srv;
    struct http_conn *prev, *next;
    http_parser parser;
    struct http_request req;
    /* request line and headers, NUL-separated: url, name, value, ... */
    struct http_buf hbuf;
    size_t url_end; /* 0 until the url is terminated */
    size_t hname[HTTP_HEADERS_COUNT_MAX], hvalue[HTTP_HEADERS_COUNT_MAX];
    size_t nh;
    int hstate; /* 0 url, 1 in a field, 2 in a value */
    struct http_kv kv[HTTP_HEADERS_COUNT_MAX];
    struct http_buf pbuf; /* decoded path and query parameters */
    struct http_buf body;
    size_t body_max;
    int in_message, complete;
    unsigned long requests; /* requests answered on this connection */
    int reject_status;      /* answer this and close (413, 431, 400) */
    int reject_ready;       /* ...with the response admission filled in, not reject_msg */
    int admit_refused;      /* admission answered this bodiless request: no handler */
    int admitting;          /* admission answers later (deferred is set too) */
    const char *reject_code;
    char reject_msg[160];
    /* input received but not parsed yet (while a request is handled) */
    char *pending;
    size_t pending_len, pending_off;
    /* output */
    struct http_buf out;
    size_t write_pending;
    int reading;  /* uv_read_start is active */
    int deferred; /* a handler holds req */
    int lingering, closing, close_after_write, resume;
    int yielded; /* 1: on srv->yield_head, reading again (resume: handling
                  * c->pending) next loop iteration; 2: on srv->yield_now */
    struct http_conn *ynext, *yprev;
    int handles; /* open handles; free at 0 */
    struct http_client *client; /* counted there while not NULL */
    int via_proxy;              /* the peer is a trusted proxy */
    char remote[INET6_ADDRSTRLEN];
    char client_key[HTTP_CLIENT_KEY_MAX];    /* the peer's */
    char forwarded_key[HTTP_CLIENT_KEY_MAX]; /* X-Forwarded-For's, via a proxy */
    size_t accounted;      /* of srv->buffered, this connection's */
    size_t accounted_body; /* of srv->bodies, this connection's */
    uint64_t progress_tick; /* srv->tick at the last read from it, or answer bytes it took */
    uint64_t idle_tick;     /* srv->tick when it last became idle (between requests) */
    /* line framing of the input (http_frame.c) */
    int fr_state;
    unsigned fr_line;
    uint64_t fr_remain;
    size_t fr_ahead;    /* bytes at the parser's position already scanned */
    const char *fr_bad; /* the framing error met at fr_ahead, to answer with */
    char fr_tail[9];    /* the request line's last bytes (its version) */
    unsigned char fr_tail_n;
};

struct http_write {
    uv_write_t w;
    struct http_conn *conn;
    struct http_buf buf;
};


/* http.c */
void conn_close(struct http_conn *c);
void conn_linger(struct http_conn *c);
void conn_write_queue(struct http_conn *c, struct http_write *hw, int failed);
void conn_flush(struct http_conn *c);
void conn_timer_arm(struct http_conn *c, double seconds);
void conn_read_start(struct http_conn *c);
void conn_read_stop(struct http_conn *c);

/* http_budget.c */
/* 1 when c is between requests with nothing to write or parse. */
int conn_idle(const struct http_conn *c);
/* Count the new connection c (address known) against the caps, closing an
 * idle one to make room where fair. 0, -EMFILE (its client's cap), -EUSERS
 * (the server's), -ENOMEM; refused, c is to be closed. */
int conn_admit(struct http_server *s, struct http_conn *c);
/* Count c's buffered bytes now against the budget; over it, close others. */
void conn_account(struct http_conn *c);
/* Uncount c (it is closing). */
void conn_unaccount(struct http_conn *c);
/* Whether a body of len bytes on c fits in what bodies may hold. 0 or -ENOBUFS. */
int conn_body_room(struct http_conn *c, uint64_t len);

/* http_client.c */
void addr_from_sockaddr(const struct sockaddr_storage *sa, struct http_addr *a);
int addr_from_text(const char *text, size_t len, struct http_addr *a);
int addr_equal(const struct http_addr *x, const struct http_addr *y);
void addr_client_key(const struct http_addr *a, char *key, size_t klen);
int client_add(struct http_server *s, struct http_conn *c, size_t max);
struct http_client *client_find(struct http_server *s, const char *key);
void client_remove(struct http_server *s, struct http_conn *c);

/* http_frame.c */
/* Check the framing of data (len bytes, at the parser's position, whose
 * first c->fr_ahead bytes were checked before): returns how many bytes
 * from data may go to the parser. Stops at the end of a head until
 * frame_body says how its body is framed, and at a framing error
 * (c->fr_bad says which; answer it once the parser has the bytes before). */
size_t frame_scan(struct http_conn *c, const char *data, size_t len);
/* The parser has read a head (on_headers_complete): its body's framing. */
void frame_body(struct http_conn *c, const http_parser *p);
/* A new connection's framing state. */
void frame_reset(struct http_conn *c);

/* http_message.c */
void http_buf_reset(struct http_buf *b);
int http_buf_reserve(struct http_buf *b, size_t extra);
const char *http_date(void);
void request_parse_query(struct http_request *req);

/* http_parse.c */
int conn_reject(struct http_conn *c, int status, const char *code, const char *fmt, ...);
void conn_respond(struct http_conn *c);
void conn_refuse(struct http_conn *c);
void conn_feed(struct http_conn *c, const char *data, size_t len);
void conn_after_writes(struct http_conn *c);
/* Handle c's pipelined bytes waiting in c->pending (the loop's yield
 * list, next iteration: conn_resume_later), then flush and account. */
void conn_resume(struct http_conn *c);
void conn_resume_later(struct http_conn *c);
int conn_admit_resume(struct http_conn *c);

#endif
