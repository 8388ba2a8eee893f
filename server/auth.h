/*
 * auth.h - users, tokens, sessions and roles (docs/api.md "Authentication").
 *
 * Tokens are 32 random bytes in hex behind a role prefix ("cgs_", "cgt_",
 * "cga_", "cgr_"); the database keeps only their SHA-256. Web sessions use
 * the cookie cugrade_session (also random, also stored hashed) with a CSRF
 * token per session for the forms of the web UI.
 */
#ifndef CUGRADE_AUTH_H
#define CUGRADE_AUTH_H

#include "server/db.h"
#include "server/http.h"
#include <stddef.h>

#define AUTH_TOKEN_LEN 68 /* "cgs_" + 64 hex */
#define AUTH_SESSION_COOKIE "cugrade_session"
/* Its name behind HTTPS: a __Host- cookie is Secure, Path=/ and has no
 * Domain, so no sibling host and no plain-HTTP page can plant one. */
#define AUTH_SESSION_COOKIE_HOST "__Host-cugrade_session"
#define AUTH_SESSION_TTL_S (12 * 3600.0)

enum auth_role { AUTH_NONE = 0, AUTH_STUDENT, AUTH_TA, AUTH_ADMIN, AUTH_RUNNER };

struct auth_user {
    long long id;
    enum auth_role role;
    char name[65];
    char display_name[129];
    char pseudonym[65];
    int show_name;
    int via_session;    /* 1: authenticated by the session cookie */
    char csrf[65];      /* the session's CSRF token when via_session */
    long long token_id; /* the token that authenticated the request, or that
                           started the session; 0 when not authenticated */
};

/* "student", "ta", "admin", "runner" ("none" for AUTH_NONE). */
const char *auth_role_name(enum auth_role role);

/* Parse a role name. Returns 0 or -EINVAL. */
int auth_role_parse(const char *s, enum auth_role *out);

/* 1 if role is a person's role (student, ta, admin). */
int auth_role_human(enum auth_role role);

/* 1 if role may read everyone's data (ta, admin). */
int auth_role_staff(enum auth_role role);

/* SHA-256 of len bytes as 64 lowercase hex chars + NUL in out. */
void auth_sha256_hex(const void *data, size_t len, char out[65]);

/* n random bytes as 2n hex chars + NUL in out. Returns 0 or -EIO. */
int auth_random_hex(size_t n, char *out);

/* Constant-time string equality (the time depends only on the lengths). */
int auth_equal(const char *a, const char *b);

/* Valid user name: ^[A-Za-z0-9_.@-]{1,64}$. Returns 1 or 0. */
int auth_name_valid(const char *name);

/* Create a user and a first token. display_name may be NULL (the name is
 * used). Writes the token (shown once, never stored) to token_out when not
 * NULL. Returns 0, -EEXIST when the name is taken, -EINVAL for a bad name,
 * or -errno. Runs in the caller's transaction when one is open. */
int auth_user_add(struct db *db, const char *name, enum auth_role role, const char *display_name,
                  char token_out[AUTH_TOKEN_LEN + 1]);

/* Issue an additional token for an existing user. 0, -ENOENT, -errno. */
int auth_token_new(struct db *db, const char *name, char token_out[AUTH_TOKEN_LEN + 1]);

/* Revoke every token of a user and end every web session of theirs (a
 * session also dies with the token that started it: auth_session_check
 * joins the token). Takes effect at once for sessions everywhere and for
 * bearer tokens in this process; other processes (a running server, when
 * the CLI revokes) keep a token lookup cached for at most 2 s. When not
 * NULL, *tokens and *sessions receive how many were revoked and ended.
 * Returns 0, -ENOENT (no such user), -errno. */
int auth_token_revoke_all(struct db *db, const char *name, int *tokens, int *sessions);

/* The rows of auth_token_revoke_all alone, on db (the writer's connection:
 * it leaves the token cache, which is the loop's, alone); the loop clears
 * the cache (auth_cache_clear) before it queues this and again after the
 * commit, before anyone is told. Same returns. */
int auth_token_revoke_rows(struct db *db, const char *name, int *tokens, int *sessions);

/* Forget cached token lookups (after changing tokens or users). */
void auth_cache_clear(void);

/* The scoreboard pseudonym of user_id in lab (e.g. "brisk-otter-417"),
 * into out. Each student has one per lab, drawn at random and unique within
 * the lab, so rows of two labs cannot be linked by name. When there is none
 * yet: create=1 draws and stores one (a write; the caller may hold a
 * transaction), create=0 returns -ENOENT. Returns 0, -ENOENT or -errno. */
int auth_pseudonym(struct db *db, long long user_id, const char *lab, int create, char out[65]);

/* Look a user up by name or id. 0, -ENOENT, -errno. */
int auth_user_get(struct db *db, const char *name, struct auth_user *out);
int auth_user_get_id(struct db *db, long long id, struct auth_user *out);

/* Resolve a bearer token. 0, -ENOENT (unknown or revoked), -errno. Results
 * are cached in this process for 2 seconds (a revocation made by another
 * process takes effect within that time). */
int auth_token_check(struct db *db, const char *token, struct auth_user *out);

/* Create a web session for user_id, started by the token token_id (the
 * session ends when that token is revoked). Writes the cookie value (64
 * hex) and the CSRF token (64 hex). Returns 0, -EINVAL when token_id is
 * not a live token of user_id, or -errno. The caller sets the cookie:
 * page_set_cookie(AUTH_SESSION_COOKIE, ...), which names it for the request. */
int auth_session_create(struct db *db, long long user_id, long long token_id, char cookie_out[65],
                        char csrf_out[65]);

/* Resolve a session cookie value; fills out (via_session=1, csrf set).
 * Never cached: a revoked token's sessions are refused at once.
 * 0, -ENOENT (unknown, expired, or its token revoked), -errno. */
int auth_session_check(struct db *db, const char *cookie, struct auth_user *out);

/* End a session (logout). 0 or -errno; an unknown cookie is not an error. */
int auth_session_destroy(struct db *db, const char *cookie);

/* Failed credential checks per key (the server keys a credential: a
 * token's or session's first characters, never an address, so a valid
 * credential is never refused for another's failures): after limit
 * failures within window_s of the first, the key gets 429 without any
 * lookup until the window ends. A bounded table (AUTH_THROTTLE_SLOTS
 * keys): a flood evicts the oldest windows, it cannot grow our memory. */
#define AUTH_THROTTLE_SLOTS 4096

struct auth_throttle;

/* A new throttle (limit 0: never throttles). Returns 0 and *out, caller
 * frees with auth_throttle_free; or -ENOMEM. */
int auth_throttle_new(unsigned limit, double window_s, struct auth_throttle **out);
void auth_throttle_free(struct auth_throttle *t);

/* Whole seconds until client may be checked again (at least 1), or 0 when
 * it may now. now: seconds on any monotonic clock. */
int auth_throttle_wait(struct auth_throttle *t, const char *client, double now);

/* Count one failed credential check of client at now. */
void auth_throttle_fail(struct auth_throttle *t, const char *client, double now);

/* 1 when req came over TLS (through a proxy that says so with
 * X-Forwarded-Proto: https), else 0. */
int auth_request_https(const struct http_request *req);

/* The session cookie's name for req: AUTH_SESSION_COOKIE_HOST over HTTPS,
 * else AUTH_SESSION_COOKIE (a browser refuses __Host- without Secure). */
const char *auth_session_cookie_name(const struct http_request *req);

/* The session cookie of req (by auth_session_cookie_name only) into buf:
 * http_request_cookie's 0, -ENOENT, -EEXIST (two: neither is honoured),
 * -ENAMETOOLONG. */
int auth_session_cookie(const struct http_request *req, char *buf, size_t len);

/* Whether req carries credentials (an Authorization header or the session
 * cookie), i.e. whether authenticating it costs a lookup. */
int auth_request_has_credentials(const struct http_request *req);

/* A request's credential, copied out of it (for a lookup off the loop). */
enum { AUTH_CRED_TOKEN = 1, AUTH_CRED_SESSION = 2 };
struct auth_credential {
    int kind;       /* AUTH_CRED_TOKEN (the Bearer token) or AUTH_CRED_SESSION */
    char value[96]; /* the token or the session cookie's value */
};

/* The credential req presents (the Bearer token first, else the session
 * cookie): 0 and *c; -ENOENT when it has none; -EACCES when what it has
 * can never be valid (not Bearer, the wrong length, two cookies). */
int auth_credential_get(const struct http_request *req, struct auth_credential *c);

/* From memory only (loop thread): 0 and *out for a token looked up less
 * than 2 s ago; -EACCES for a token of the wrong shape; -EAGAIN when it
 * takes auth_credential_check (always for a session). */
int auth_credential_cached(const struct auth_credential *c, struct auth_user *out);

/* Look c up in the database, no cache (any thread, on a connection it
 * owns): 0 and *out; -EACCES (unknown, revoked or expired); -errno. */
int auth_credential_check(struct db *db, const struct auth_credential *c, struct auth_user *out);

/* Cache a token's lookup made off the loop (loop thread), unless the cache
 * was cleared (a revocation) since gen = auth_cache_generation() was read
 * before the lookup began. */
unsigned auth_cache_generation(void);
void auth_credential_remember(const struct auth_credential *c, const struct auth_user *u,
                              unsigned gen);

/* Authenticate a request: the Bearer token first, else the session cookie.
 * Returns 0 and fills out; -ENOENT when the request carries no credentials;
 * -EACCES when it carries a wrong, revoked or expired one; -errno. */
int auth_request_user(struct db *db, const struct http_request *req, struct auth_user *out);

#endif
