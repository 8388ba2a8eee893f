/*
 * auth.c - tokens, sessions, users. See auth.h.
 */
#include "server/auth.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const role_names[] = {"none", "student", "ta", "admin", "runner"};
static const char *const role_prefix[] = {"", "cgs_", "cgt_", "cga_", "cgr_"};

const char *auth_role_name(enum auth_role role)
{
    return (unsigned)role < 5 ? role_names[role] : "none";
}

int auth_role_parse(const char *s, enum auth_role *out)
{
    for (int i = 1; i < 5; i++) {
        if (s && strcmp(s, role_names[i]) == 0) {
            *out = (enum auth_role)i;
            return 0;
        }
    }
    return -EINVAL;
}

int auth_role_human(enum auth_role role)
{
    return role == AUTH_STUDENT || role == AUTH_TA || role == AUTH_ADMIN;
}

int auth_role_staff(enum auth_role role)
{
    return role == AUTH_TA || role == AUTH_ADMIN;
}

void auth_sha256_hex(const void *data, size_t len, char out[65])
{
    static const char hx[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        out[2 * i] = hx[md[i] >> 4];
        out[2 * i + 1] = hx[md[i] & 15];
    }
    out[64] = '\0';
}

int auth_random_hex(size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    unsigned char b[64];
    if (n > sizeof(b) || RAND_bytes(b, (int)n) != 1)
        return -EIO;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = '\0';
    OPENSSL_cleanse(b, sizeof(b));
    return 0;
}

int auth_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return 0;
    return CRYPTO_memcmp(a, b, la) == 0;
}

int auth_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '_' && ch != '.' && ch != '@' && ch != '-')
            return 0;
    }
    return 1;
}

static int token_make(enum auth_role role, char out[AUTH_TOKEN_LEN + 1], char hash[65])
{
    strcpy(out, role_prefix[role]);
    if (auth_random_hex(32, out + 4))
        return -EIO;
    auth_sha256_hex(out, strlen(out), hash);
    return 0;
}

static int token_store(struct db *db, long long user_id, const char *hash)
{
    sqlite3_stmt *st =
        db_stmt(db, "INSERT INTO tokens(user_id, hash, created_at) VALUES(?1, ?2, ?3)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, user_id);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, db_now());
    return db_step_done(st);
}

/* Pseudonyms shown on the scoreboard to other students. */
static const char *const adjectives[] = {
    "amber",  "brisk", "calm",   "daring", "eager", "fuzzy", "gentle", "hasty", "icy",   "jolly",
    "keen",   "lucky", "mellow", "nimble", "odd",   "proud", "quiet",  "rapid", "sunny", "tidy",
    "upbeat", "vivid", "witty",  "young",  "zesty", "bold",  "clever", "dusty", "fancy", "grand"};
static const char *const animals[] = {
    "otter",  "falcon", "lynx",   "panda", "heron",  "koala", "marten", "newt",   "orca",  "puffin",
    "quokka", "raven",  "salmon", "tapir", "urchin", "viper", "walrus", "yak",    "zebra", "badger",
    "beaver", "crane",  "dingo",  "egret", "ferret", "gecko", "ibis",   "jackal", "lemur", "moose"};

static void pseudonym_make(char *out, size_t len)
{
    unsigned char r[4];
    if (RAND_bytes(r, sizeof(r)) != 1)
        memset(r, 0, sizeof(r));
    snprintf(out, len, "%s-%s-%u", adjectives[r[0] % 30], animals[r[1] % 30],
             (unsigned)((r[2] << 8 | r[3]) % 1000));
}

int auth_user_add(struct db *db, const char *name, enum auth_role role, const char *display_name,
                  char token_out[AUTH_TOKEN_LEN + 1])
{
    char token[AUTH_TOKEN_LEN + 1], hash[65], pseudo[64];
    int rc;
    if (!auth_name_valid(name) || role == AUTH_NONE)
        return -EINVAL;
    /* A display name that is not UTF-8 would break every JSON page that
     * shows it (the scoreboard for the whole class). */
    if (display_name &&
        (strlen(display_name) > 128 || !http_utf8_valid(display_name, strlen(display_name))))
        return -EINVAL;
    struct auth_user tmp;
    if (auth_user_get(db, name, &tmp) == 0)
        return -EEXIST;
    for (int attempt = 0; attempt < 8; attempt++) {
        sqlite3_stmt *st =
            db_stmt(db, "INSERT INTO users(name, role, display_name, pseudonym, created_at)"
                        " VALUES(?1, ?2, ?3, ?4, ?5)");
        if (!st)
            return -EIO;
        pseudonym_make(pseudo, sizeof(pseudo));
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, auth_role_name(role), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, display_name && *display_name ? display_name : name, -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, pseudo, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 5, db_now());
        rc = db_step_done(st);
        if (rc != -EEXIST)
            break; /* -EEXIST here: a pseudonym collision; retry */
    }
    if (rc)
        return rc;
    long long uid = db_last_id(db);
    rc = token_make(role, token, hash);
    if (!rc)
        rc = token_store(db, uid, hash);
    if (rc)
        return rc;
    if (token_out)
        memcpy(token_out, token, sizeof(token));
    OPENSSL_cleanse(token, sizeof(token));
    return 0;
}

int auth_pseudonym(struct db *db, long long user_id, const char *lab, int create, char out[65])
{
    sqlite3_stmt *st =
        db_stmt(db, "SELECT pseudonym FROM pseudonyms WHERE user_id = ?1 AND lab = ?2");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, user_id);
    sqlite3_bind_text(st, 2, lab, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        snprintf(out, 65, "%s", db_col_text(st, 0));
        sqlite3_reset(st);
        return 0;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_errno(rc);
    if (!create)
        return -ENOENT;
    /* Random, not derived from the user: nothing about the student (nor
     * their name in another lab) can be computed back from it. */
    rc = -EEXIST;
    for (int attempt = 0; attempt < 16 && rc == -EEXIST; attempt++) {
        st = db_stmt(db, "INSERT INTO pseudonyms(user_id, lab, pseudonym, created_at)"
                         " VALUES(?1, ?2, ?3, ?4)");
        if (!st)
            return -EIO;
        pseudonym_make(out, 65);
        sqlite3_bind_int64(st, 1, user_id);
        sqlite3_bind_text(st, 2, lab, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, out, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 4, db_now());
        rc = db_step_done(st); /* -EEXIST: the name is taken in this lab; draw again */
    }
    if (rc == -EEXIST && auth_pseudonym(db, user_id, lab, 0, out) == 0)
        return 0; /* another process gave this student one meanwhile */
    return rc;
}

static void user_from_row(sqlite3_stmt *st, struct auth_user *out)
{
    memset(out, 0, sizeof(*out));
    out->id = sqlite3_column_int64(st, 0);
    snprintf(out->name, sizeof(out->name), "%s", db_col_text(st, 1));
    auth_role_parse(db_col_text(st, 2), &out->role);
    snprintf(out->display_name, sizeof(out->display_name), "%s", db_col_text(st, 3));
    snprintf(out->pseudonym, sizeof(out->pseudonym), "%s", db_col_text(st, 4));
    out->show_name = sqlite3_column_int(st, 5);
}

int auth_user_get(struct db *db, const char *name, struct auth_user *out)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT id, name, role, display_name, pseudonym, show_name"
                                   " FROM users WHERE name = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        user_from_row(st, out);
        sqlite3_reset(st);
        return 0;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
}

int auth_user_get_id(struct db *db, long long id, struct auth_user *out)
{
    sqlite3_stmt *st = db_stmt(db, "SELECT id, name, role, display_name, pseudonym, show_name"
                                   " FROM users WHERE id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        user_from_row(st, out);
        sqlite3_reset(st);
        return 0;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
}

int auth_token_new(struct db *db, const char *name, char token_out[AUTH_TOKEN_LEN + 1])
{
    struct auth_user u;
    char hash[65];
    int rc = auth_user_get(db, name, &u);
    if (rc)
        return rc;
    rc = token_make(u.role, token_out, hash);
    if (!rc)
        rc = token_store(db, u.id, hash);
    return rc;
}

int auth_token_revoke_all(struct db *db, const char *name, int *tokens, int *sessions)
{
    auth_cache_clear();
    int rc = auth_token_revoke_rows(db, name, tokens, sessions);
    /* A lookup made between the clear above and the UPDATE could have
     * been cached: clear again now that the row says revoked. */
    auth_cache_clear();
    return rc;
}

int auth_token_revoke_rows(struct db *db, const char *name, int *tokens, int *sessions)
{
    struct auth_user u;
    int rc = auth_user_get(db, name, &u);
    if (rc)
        return rc;
    /* Tokens first: from this statement on, the session check's join
     * refuses every session they started, whatever happens next. */
    sqlite3_stmt *st =
        db_stmt(db, "UPDATE tokens SET revoked = 1 WHERE user_id = ?1 AND revoked = 0");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, u.id);
    rc = db_step_done(st);
    if (rc)
        return rc;
    if (tokens)
        *tokens = db_changes(db);
    st = db_stmt(db, "DELETE FROM sessions WHERE user_id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, u.id);
    rc = db_step_done(st);
    if (!rc && sessions)
        *sessions = db_changes(db);
    return rc;
}

/* Recently resolved tokens, so that a busy client does not cost a database
 * lookup per request. Entries live AUTH_CACHE_TTL_S: a token revoked from
 * the CLI (another process) stops working within that time. */
#define AUTH_CACHE_N 1024
#define AUTH_CACHE_TTL_S 2.0

struct auth_cached {
    char hash[65];
    double expires;
    struct auth_user user;
};

static struct auth_cached *auth_cache;
static unsigned auth_cache_gen; /* counts clears: see auth_credential_remember */

void auth_cache_clear(void)
{
    free(auth_cache);
    auth_cache = NULL;
    auth_cache_gen++;
}

unsigned auth_cache_generation(void)
{
    return auth_cache_gen;
}

static struct auth_cached *auth_cache_slot(const char *hash)
{
    if (!auth_cache) {
        auth_cache = calloc(AUTH_CACHE_N, sizeof(*auth_cache));
        if (!auth_cache)
            return NULL;
    }
    unsigned idx = 0;
    for (int i = 0; i < 4; i++)
        idx = idx << 4 | (unsigned)(hash[i] <= '9' ? hash[i] - '0' : hash[i] - 'a' + 10);
    return &auth_cache[idx % AUTH_CACHE_N];
}

/* The token's shape (nothing else reaches the database) and its hash:
 * 0, or -ENOENT when it cannot be a token. */
static int token_hash(const char *token, char hash[65])
{
    size_t len = strlen(token);
    if (len != AUTH_TOKEN_LEN || token[3] != '_')
        return -ENOENT;
    auth_sha256_hex(token, len, hash);
    return 0;
}

/* The cached lookup of the token whose hash is hash: 0, or -ENOENT. */
static int token_cached(const char *hash, struct auth_user *out)
{
    struct auth_cached *slot = auth_cache_slot(hash);
    if (slot && slot->expires > db_now() && auth_equal(slot->hash, hash)) {
        *out = slot->user;
        return 0;
    }
    return -ENOENT;
}

static void token_remember(const char *hash, const struct auth_user *u)
{
    struct auth_cached *slot = auth_cache_slot(hash);
    if (slot) {
        memcpy(slot->hash, hash, sizeof(slot->hash));
        slot->user = *u;
        slot->expires = db_now() + AUTH_CACHE_TTL_S;
    }
}

/* The token's row, no cache (any thread owning db): 0, -ENOENT, -errno. */
static int token_lookup(struct db *db, const char *token, const char *hash, struct auth_user *out)
{
    sqlite3_stmt *st =
        db_stmt(db, "SELECT u.id, u.name, u.role, u.display_name, u.pseudonym,"
                    " u.show_name, t.hash, t.id FROM tokens t JOIN users u ON u.id = t.user_id"
                    " WHERE t.hash = ?1 AND t.revoked = 0");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, hash, 64, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        /* The index lookup compared hashes, not tokens; compare again in
         * constant time so no code path branches on secret bytes early. */
        int same = auth_equal(db_col_text(st, 6), hash);
        user_from_row(st, out);
        out->token_id = sqlite3_column_int64(st, 7);
        sqlite3_reset(st);
        /* A token's prefix must match its user's role (a cgs_ token of an
         * admin is a bug elsewhere, not a reason to grant admin). */
        if (!same || strncmp(token, role_prefix[out->role], 4) != 0)
            return -ENOENT;
        return 0;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
}

int auth_token_check(struct db *db, const char *token, struct auth_user *out)
{
    char hash[65];
    if (token_hash(token, hash))
        return -ENOENT;
    if (token_cached(hash, out) == 0)
        return 0;
    int rc = token_lookup(db, token, hash, out);
    if (!rc)
        token_remember(hash, out);
    return rc;
}

int auth_session_create(struct db *db, long long user_id, long long token_id, char cookie_out[65],
                        char csrf_out[65])
{
    char hash[65];
    if (auth_random_hex(32, cookie_out) || auth_random_hex(32, csrf_out))
        return -EIO;
    auth_sha256_hex(cookie_out, 64, hash);
    /* INSERT ... SELECT: the row exists only if the token is live right
     * now, in the database, not in the 2 s cache the caller's lookup may
     * have come from (a sign-in racing a revocation starts no session). */
    sqlite3_stmt *st =
        db_stmt(db, "INSERT INTO sessions(user_id, hash, csrf, created_at, expires_at, token_id)"
                    " SELECT ?1, ?2, ?3, ?4, ?5, t.id FROM tokens t"
                    " WHERE t.id = ?6 AND t.user_id = ?1 AND t.revoked = 0");
    if (!st)
        return -EIO;
    double now = db_now();
    sqlite3_bind_int64(st, 1, user_id);
    sqlite3_bind_text(st, 2, hash, 64, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, csrf_out, 64, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 4, now);
    sqlite3_bind_double(st, 5, now + AUTH_SESSION_TTL_S);
    sqlite3_bind_int64(st, 6, token_id);
    int rc = db_step_done(st);
    if (!rc && db_changes(db) != 1)
        rc = -EINVAL;
    /* Expired sessions are swept whenever a new one starts. */
    st = db_stmt(db, "DELETE FROM sessions WHERE expires_at < ?1");
    if (st) {
        sqlite3_bind_double(st, 1, now);
        db_step_done(st);
    }
    return rc;
}

int auth_session_check(struct db *db, const char *cookie, struct auth_user *out)
{
    char hash[65];
    if (strlen(cookie) != 64)
        return -ENOENT;
    auth_sha256_hex(cookie, 64, hash);
    /* The join on a live token is what ends a session at revocation. */
    sqlite3_stmt *st = db_stmt(db, "SELECT u.id, u.name, u.role, u.display_name, u.pseudonym,"
                                   " u.show_name, s.csrf, s.token_id FROM sessions s"
                                   " JOIN users u ON u.id = s.user_id"
                                   " JOIN tokens t ON t.id = s.token_id AND t.user_id = s.user_id"
                                   " WHERE s.hash = ?1 AND s.expires_at > ?2 AND t.revoked = 0");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, hash, 64, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 2, db_now());
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        user_from_row(st, out);
        out->via_session = 1;
        snprintf(out->csrf, sizeof(out->csrf), "%s", db_col_text(st, 6));
        out->token_id = sqlite3_column_int64(st, 7);
        sqlite3_reset(st);
        return 0;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? -ENOENT : db_errno(rc);
}

int auth_session_destroy(struct db *db, const char *cookie)
{
    char hash[65];
    if (strlen(cookie) != 64)
        return 0;
    auth_sha256_hex(cookie, 64, hash);
    sqlite3_stmt *st = db_stmt(db, "DELETE FROM sessions WHERE hash = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, hash, 64, SQLITE_TRANSIENT);
    return db_step_done(st);
}

int auth_credential_get(const struct http_request *req, struct auth_credential *c)
{
    memset(c, 0, sizeof(*c));
    const char *h = http_request_header(req, "Authorization");
    if (h) {
        if (strncasecmp(h, "Bearer ", 7) != 0)
            return -EACCES;
        for (h += 7; *h == ' ';)
            h++;
        if (strlen(h) != AUTH_TOKEN_LEN)
            return -EACCES;
        c->kind = AUTH_CRED_TOKEN;
        memcpy(c->value, h, AUTH_TOKEN_LEN + 1);
        return 0;
    }
    int rc = auth_session_cookie(req, c->value, sizeof(c->value));
    if (rc == -ENOENT)
        return -ENOENT;
    if (rc || strlen(c->value) != 64)
        return -EACCES;
    c->kind = AUTH_CRED_SESSION;
    return 0;
}

int auth_credential_cached(const struct auth_credential *c, struct auth_user *out)
{
    char hash[65];
    assert(c->kind == AUTH_CRED_TOKEN || c->kind == AUTH_CRED_SESSION);
    if (c->kind == AUTH_CRED_SESSION) /* never cached: revocation is at once */
        return -EAGAIN;
    if (token_hash(c->value, hash))
        return -EACCES;
    return token_cached(hash, out) == 0 ? 0 : -EAGAIN;
}

int auth_credential_check(struct db *db, const struct auth_credential *c, struct auth_user *out)
{
    char hash[65];
    int rc;
    if (c->kind == AUTH_CRED_SESSION) {
        rc = auth_session_check(db, c->value, out);
    } else {
        rc = token_hash(c->value, hash);
        if (!rc)
            rc = token_lookup(db, c->value, hash, out);
    }
    return rc == -ENOENT ? -EACCES : rc;
}

void auth_credential_remember(const struct auth_credential *c, const struct auth_user *u,
                              unsigned gen)
{
    char hash[65];
    /* A revocation (auth_cache_clear) since the lookup began: its answer
     * may be the revoked token's, which must not live on in the cache. */
    if (c->kind != AUTH_CRED_TOKEN || gen != auth_cache_gen || token_hash(c->value, hash))
        return;
    token_remember(hash, u);
}

int auth_request_user(struct db *db, const struct http_request *req, struct auth_user *out)
{
    struct auth_credential c;
    int rc = auth_credential_get(req, &c);
    if (rc)
        return rc;
    rc = auth_credential_cached(&c, out);
    if (rc != -EAGAIN)
        return rc;
    rc = auth_credential_check(db, &c, out);
    if (!rc)
        auth_credential_remember(&c, out, auth_cache_gen);
    return rc;
}

int auth_request_has_credentials(const struct http_request *req)
{
    char cookie[8];
    if (http_request_header(req, "Authorization"))
        return 1;
    int rc = auth_session_cookie(req, cookie, sizeof(cookie));
    return rc != -ENOENT; /* present, even when too long to be one */
}

int auth_request_https(const struct http_request *req)
{
    const char *xf = http_request_header(req, "X-Forwarded-Proto");
    return xf && strncasecmp(xf, "https", 5) == 0;
}

const char *auth_session_cookie_name(const struct http_request *req)
{
    return auth_request_https(req) ? AUTH_SESSION_COOKIE_HOST : AUTH_SESSION_COOKIE;
}

int auth_session_cookie(const struct http_request *req, char *buf, size_t len)
{
    return http_request_cookie(req, auth_session_cookie_name(req), buf, len);
}

/* ---- failed-check throttle ---- */

#define AUTH_THROTTLE_WAYS 8 /* slots per bucket: a client lives in one bucket */

struct auth_throttle_slot {
    char client[HTTP_CLIENT_KEY_MAX]; /* "" when free */
    unsigned fails;
    double start; /* first failure of the window */
};

struct auth_throttle {
    unsigned limit;
    double window_s;
    struct auth_throttle_slot slots[AUTH_THROTTLE_SLOTS];
};

int auth_throttle_new(unsigned limit, double window_s, struct auth_throttle **out)
{
    struct auth_throttle *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->limit = limit;
    t->window_s = window_s > 0 ? window_s : 60;
    *out = t;
    return 0;
}

void auth_throttle_free(struct auth_throttle *t)
{
    free(t);
}

static struct auth_throttle_slot *throttle_bucket(struct auth_throttle *t, const char *client)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)client; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &t->slots[(h % (AUTH_THROTTLE_SLOTS / AUTH_THROTTLE_WAYS)) * AUTH_THROTTLE_WAYS];
}

static struct auth_throttle_slot *throttle_find(struct auth_throttle *t, const char *client)
{
    struct auth_throttle_slot *b = throttle_bucket(t, client);
    for (int i = 0; i < AUTH_THROTTLE_WAYS; i++)
        if (b[i].client[0] && strcmp(b[i].client, client) == 0)
            return &b[i];
    return NULL;
}

int auth_throttle_wait(struct auth_throttle *t, const char *client, double now)
{
    if (!t || t->limit == 0)
        return 0;
    struct auth_throttle_slot *s = throttle_find(t, client);
    if (!s || s->fails < t->limit || now >= s->start + t->window_s)
        return 0;
    double left = s->start + t->window_s - now;
    int secs = (int)left;
    return secs < left ? secs + 1 : (secs > 0 ? secs : 1);
}

void auth_throttle_fail(struct auth_throttle *t, const char *client, double now)
{
    if (!t || t->limit == 0)
        return;
    struct auth_throttle_slot *s = throttle_find(t, client);
    if (!s) {
        /* A free slot, else the one whose window started first (an ended
         * window is the oldest of all). */
        struct auth_throttle_slot *b = throttle_bucket(t, client);
        s = &b[0];
        for (int i = 0; i < AUTH_THROTTLE_WAYS; i++) {
            if (!b[i].client[0]) {
                s = &b[i];
                break;
            }
            if (b[i].start < s->start)
                s = &b[i];
        }
        snprintf(s->client, sizeof(s->client), "%s", client);
        s->fails = 0;
        s->start = now;
    }
    if (now >= s->start + t->window_s) { /* a new window */
        s->fails = 0;
        s->start = now;
    }
    if (s->fails < UINT32_MAX)
        s->fails++;
}
