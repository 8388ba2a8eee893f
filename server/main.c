/*
 * main.c - the cugrade-server command line: init, serve, and the admin
 * commands (user add/list, token new/revoke). See docs/server.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/server.h"
#include "server/backup.h"

struct opts {
    const char *db;
    const char *listen;
    const char *labs;
    const char *rubrics;
    const char *display_name;
    double lease_s, sweep_s, request_timeout_s, idle_timeout_s, min_free_mb;
    long max_conns, max_conns_per_address, auth_fail_limit, max_buffered_mb; /* -1: the default */
    double auth_fail_window_s;
    const char *trusted_proxies[HTTP_TRUSTED_PROXIES_MAX];
    size_t ntrusted_proxies;
    int help;
};

static const char usage_main[] =
    "usage: cugrade-server COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  init                       create the database; print an admin and a demo student token\n"
    "  serve                      run the HTTP server (creates the database on first start)\n"
    "  user add NAME ROLE         create a user (student, ta, admin, runner); print its token\n"
    "  user list                  list users\n"
    "  token new NAME             print an additional token for a user\n"
    "  token revoke NAME          revoke every token of a user\n"
    "  backup FILE                copy the live database to FILE (online, consistent)\n"
    "\n"
    "common options:\n"
    "  --db PATH                  database file (default var/cugrade.db)\n"
    "  -h, --help                 help for a command, e.g. cugrade-server serve --help\n";

static const char usage_init[] =
    "usage: cugrade-server init [--db PATH]\n"
    "\n"
    "Create the database (SQLite, WAL) and two users: 'admin' (role admin) and\n"
    "'demo' (role student). Their tokens are printed once and never stored in\n"
    "clear; keep them. Fails if the database is already initialized.\n";

static const char usage_serve[] =
    "usage: cugrade-server serve [options]\n"
    "\n"
    "Serve the JSON API, the web pages and the runner protocol on one event loop.\n"
    "If the database file does not exist it is created first and the admin and\n"
    "demo student tokens are printed (as `init` does).\n"
    "\n"
    "  --db PATH              database file (default var/cugrade.db)\n"
    "  --listen HOST:PORT     address to listen on (default 127.0.0.1:8080; port 0 picks one)\n"
    "  --labs DIR             lab definitions (default labs)\n"
    "  --rubrics DIR          rubric files, <lab>.json (default rubrics)\n"
    "  --lease-seconds N      a runner's lease on a job (default 60)\n"
    "  --sweep-seconds N      how often expired leases are requeued (default 1)\n"
    "  --request-timeout N    seconds for a request's line and headers to arrive; the\n"
    "                         body gets 3x (default 10; slow clients get 408)\n"
    "  --idle-timeout N       close keep-alive connections idle this long (default 60)\n"
    "  --min-free-mb N        /healthz fails (503, \"disk\":\"low\") when the database's\n"
    "                         filesystem has less than N MiB free (default 512)\n"
    "  --max-conns N          open connections in all (default 10000); at the cap a new one\n"
    "                         replaces an idle one of the address holding the most, or is closed\n"
    "  --max-conns-per-address N\n"
    "                         the same per client address (an IPv6 /64; default 64; 0: no cap,\n"
    "                         for a server behind a proxy that all clients come through); at\n"
    "                         it a new one replaces that address's idle one, or is closed\n"
    "  --max-buffered-mb N    unsent answers held in all (default 64); beyond, the connection\n"
    "                         stalled longest is closed; bodies being read: 4 times this\n"
    "  --auth-fail-limit N    failed checks of one token or session in a window; then 429\n"
    "                         for it until the window ends (default 30; 0: no limit)\n"
    "  --auth-fail-window N   the window, in seconds from the first failure (default 60)\n"
    "  --trusted-proxy ADDR   a reverse proxy (e.g. 127.0.0.1) all clients come through: its\n"
    "                         connections are not capped per address, and the client of its\n"
    "                         requests is the last address of X-Forwarded-For (up to 4 times)\n"
    "\n"
    "SIGTERM or SIGINT stops it gracefully: no new connections, requests in\n"
    "flight finish, parked runner claims get 204, the database closes cleanly.\n";

static const char usage_user[] =
    "usage: cugrade-server user add NAME ROLE [--display-name TEXT] [--db PATH]\n"
    "       cugrade-server user list [--db PATH]\n"
    "\n"
    "ROLE is student, ta, admin or runner. `user add` prints the new token on\n"
    "stdout (once; only its SHA-256 is stored).\n";

static const char usage_token[] =
    "usage: cugrade-server token new NAME [--db PATH]\n"
    "       cugrade-server token revoke NAME [--db PATH]\n"
    "\n"
    "`token new` prints an additional token for NAME on stdout; `token revoke`\n"
    "revokes every token of NAME and ends their web sessions: a running server\n"
    "refuses the sessions at once and the tokens within 2 seconds (its token cache).\n";

/* The options of serve and the other commands (usage() describes them). */
static const struct option long_opts[] = {{"db", required_argument, NULL, 'd'},
                                      {"listen", required_argument, NULL, 'l'},
                                      {"labs", required_argument, NULL, 'L'},
                                      {"rubrics", required_argument, NULL, 'r'},
                                      {"display-name", required_argument, NULL, 'n'},
                                      {"lease-seconds", required_argument, NULL, 's'},
                                      {"sweep-seconds", required_argument, NULL, 'w'},
                                      {"request-timeout", required_argument, NULL, 't'},
                                      {"idle-timeout", required_argument, NULL, 'i'},
                                      {"min-free-mb", required_argument, NULL, 'm'},
                                      {"max-conns", required_argument, NULL, 'C'},
                                      {"max-conns-per-address", required_argument, NULL, 'A'},
                                      {"auth-fail-limit", required_argument, NULL, 'F'},
                                      {"max-buffered-mb", required_argument, NULL, 'B'},
                                      {"auth-fail-window", required_argument, NULL, 'W'},
                                      {"trusted-proxy", required_argument, NULL, 'P'},
                                      {"help", no_argument, NULL, 'h'},
                                      {NULL, 0, NULL, 0}};

static int parse_opts(int argc, char **argv, struct opts *o)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            o->db = optarg;
            break;
        case 'l':
            o->listen = optarg;
            break;
        case 'L':
            o->labs = optarg;
            break;
        case 'r':
            o->rubrics = optarg;
            break;
        case 'n':
            o->display_name = optarg;
            break;
        case 's':
            o->lease_s = atof(optarg);
            if (o->lease_s <= 0)
                return -1;
            break;
        case 'w':
            o->sweep_s = atof(optarg);
            if (o->sweep_s <= 0)
                return -1;
            break;
        case 't':
            o->request_timeout_s = atof(optarg);
            if (o->request_timeout_s <= 0)
                return -1;
            break;
        case 'i':
            o->idle_timeout_s = atof(optarg);
            if (o->idle_timeout_s <= 0)
                return -1;
            break;
        case 'm': {
            char *end;
            o->min_free_mb = strtod(optarg, &end);
            if (*end || !(o->min_free_mb >= 0))
                return -1;
            break;
        }
        case 'C':
        case 'A':
        case 'F':
        case 'B': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 0 || v > 1000000000 ||
                ((c == 'C' || c == 'B') && v == 0))
                return -1;
            *(c == 'C'   ? &o->max_conns
              : c == 'A' ? &o->max_conns_per_address
              : c == 'B' ? &o->max_buffered_mb
                         : &o->auth_fail_limit) = v;
            break;
        }
        case 'W':
            o->auth_fail_window_s = atof(optarg);
            if (o->auth_fail_window_s <= 0)
                return -1;
            break;
        case 'P': {
            unsigned char a[16];
            if (o->ntrusted_proxies == HTTP_TRUSTED_PROXIES_MAX ||
                (inet_pton(AF_INET, optarg, a) != 1 && inet_pton(AF_INET6, optarg, a) != 1)) {
                fprintf(stderr, "cugrade-server: --trusted-proxy wants an IPv4 or IPv6 address "
                                "(at most %d of them)\n",
                        HTTP_TRUSTED_PROXIES_MAX);
                return -1;
            }
            o->trusted_proxies[o->ntrusted_proxies++] = optarg;
            break;
        }
        case 'h':
            o->help = 1;
            break;
        default:
            return -1;
        }
    }
    return optind;
}

/* Make the folder that holds path (var/ for var/cugrade.db). */
static void make_parent(const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0750);
            *p = '/';
        }
    }
    mkdir(dir, 0750);
}

static int do_init(const char *path)
{
    struct db *db;
    struct stat sb;
    char admin[AUTH_TOKEN_LEN + 1], demo[AUTH_TOKEN_LEN + 1];
    if (stat(path, &sb) == 0) {
        if (db_open(path, 0, &db) == 0) {
            db_close(db);
            fprintf(stderr,
                    "cugrade-server: %s is already initialized; use `cugrade-server user add` or "
                    "`token new` for more tokens\n",
                    path);
            return 1;
        }
    }
    make_parent(path);
    int rc = db_open(path, 1, &db);
    if (rc) {
        fprintf(stderr, "cugrade-server: cannot create %s: %s\n", path, strerror(-rc));
        return 1;
    }
    chmod(path, 0600);
    rc = db_begin(db, 1);
    if (!rc)
        rc = auth_user_add(db, "admin", AUTH_ADMIN, "Course admin", admin);
    if (!rc)
        rc = auth_user_add(db, "demo", AUTH_STUDENT, "Demo Student", demo);
    if (!rc)
        rc = db_audit(db, 0, "init", path, "admin, demo");
    if (!rc)
        rc = db_commit(db);
    else
        db_rollback(db);
    db_close(db);
    if (rc) {
        fprintf(stderr, "cugrade-server: init failed: %s\n", strerror(-rc));
        return 1;
    }
    printf("cugrade: created %s\n"
           "cugrade: admin token   (user admin): %s\n"
           "cugrade: student token (user demo):  %s\n"
           "cugrade: these tokens are shown only now; keep them (new ones: cugrade-server token "
           "new NAME)\n",
           path, admin, demo);
    fflush(stdout);
    return 0;
}

static int open_db(const char *path, struct db **db)
{
    int rc = db_open(path, 0, db);
    if (rc == -ENOENT || rc == -ENODATA)
        fprintf(stderr,
                "cugrade-server: %s: no initialized database; run `cugrade-server init --db %s` "
                "first\n",
                path, path);
    else if (rc)
        fprintf(stderr, "cugrade-server: %s: %s\n", path, strerror(-rc));
    return rc;
}

static int do_user(int argc, char **argv, struct opts *o)
{
    struct db *db;
    if (argc < 1) {
        fputs(usage_user, stderr);
        return 2;
    }
    if (strcmp(argv[0], "add") == 0) {
        enum auth_role role;
        char token[AUTH_TOKEN_LEN + 1];
        if (argc != 3 || auth_role_parse(argv[2], &role)) {
            fputs(usage_user, stderr);
            return 2;
        }
        if (!auth_name_valid(argv[1])) {
            fprintf(stderr,
                    "cugrade-server: name must be 1-64 letters, digits, '_', '.', '@' or '-'\n");
            return 2;
        }
        if (open_db(o->db, &db))
            return 1;
        int rc = auth_user_add(db, argv[1], role, o->display_name, token);
        if (!rc)
            db_audit(db, 0, "user_add", argv[1], argv[2]);
        db_close(db);
        if (rc == -EEXIST) {
            fprintf(stderr,
                    "cugrade-server: user %s already exists (for another token: cugrade-server "
                    "token new %s)\n",
                    argv[1], argv[1]);
            return 1;
        }
        if (rc) {
            fprintf(stderr, "cugrade-server: user add: %s\n", strerror(-rc));
            return 1;
        }
        printf("%s\n", token);
        return 0;
    }
    if (strcmp(argv[0], "list") == 0) {
        if (open_db(o->db, &db))
            return 1;
        sqlite3_stmt *st =
            db_stmt(db, "SELECT u.name, u.role, u.display_name, u.pseudonym,"
                        " (SELECT COUNT(*) FROM tokens t WHERE t.user_id = u.id AND t.revoked = 0)"
                        " FROM users u ORDER BY u.id");
        printf("%-24s %-8s %-28s %-24s %s\n", "NAME", "ROLE", "DISPLAY NAME", "PSEUDONYM",
               "TOKENS");
        while (st && sqlite3_step(st) == SQLITE_ROW)
            printf("%-24s %-8s %-28s %-24s %d\n", db_col_text(st, 0), db_col_text(st, 1),
                   db_col_text(st, 2), db_col_text(st, 3), sqlite3_column_int(st, 4));
        if (st)
            sqlite3_reset(st);
        db_close(db);
        return 0;
    }
    fputs(usage_user, stderr);
    return 2;
}

static int do_token(int argc, char **argv, struct opts *o)
{
    struct db *db;
    if (argc != 2 || (strcmp(argv[0], "new") != 0 && strcmp(argv[0], "revoke") != 0)) {
        fputs(usage_token, stderr);
        return 2;
    }
    if (open_db(o->db, &db))
        return 1;
    int rc;
    if (strcmp(argv[0], "new") == 0) {
        char token[AUTH_TOKEN_LEN + 1];
        rc = auth_token_new(db, argv[1], token);
        if (!rc) {
            db_audit(db, 0, "token_new", argv[1], NULL);
            printf("%s\n", token);
        }
    } else {
        int ntok = 0, nses = 0;
        rc = auth_token_revoke_all(db, argv[1], &ntok, &nses);
        if (!rc) {
            char detail[64];
            snprintf(detail, sizeof(detail), "%d tokens, %d sessions", ntok, nses);
            db_audit(db, 0, "token_revoke", argv[1], detail);
            fprintf(stderr,
                    "cugrade-server: revoked every token of %s (%d live) and ended their %d web "
                    "session%s\n",
                    argv[1], ntok, nses, nses == 1 ? "" : "s");
        }
    }
    db_close(db);
    if (rc == -ENOENT) {
        fprintf(stderr, "cugrade-server: no user called %s\n", argv[1]);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "cugrade-server: token %s: %s\n", argv[0], strerror(-rc));
        return 1;
    }
    return 0;
}

/* ---- serve ---- */

static struct app the_app;
static uv_signal_t sig_term, sig_int;
static int stopping;

static void closed_noop(uv_handle_t *h)
{
    (void)h;
}

static void serve_stopped(void *arg)
{
    (void)arg;
    app_close(&the_app);
    fprintf(stderr, "cugrade-server: stopped; database closed\n");
    uv_close((uv_handle_t *)&sig_term, closed_noop);
    uv_close((uv_handle_t *)&sig_int, closed_noop);
}

static void on_signal(uv_signal_t *s, int signum)
{
    (void)s;
    if (stopping) {
        fprintf(stderr, "cugrade-server: second signal: exiting now\n");
        _exit(1);
    }
    stopping = 1;
    fprintf(stderr, "cugrade-server: %s: finishing requests in flight\n", strsignal(signum));
    app_shutdown(&the_app, serve_stopped, NULL);
}

static int parse_listen(const char *s, char *host, size_t hlen, int *port)
{
    const char *colon;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':')
            return -1;
        snprintf(host, hlen, "%.*s", (int)(end - s - 1), s + 1);
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        snprintf(host, hlen, "%.*s", (int)(colon - s), s);
    }
    char *e;
    long p = strtol(colon + 1, &e, 10);
    if (*e || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    if (!host[0])
        snprintf(host, hlen, "0.0.0.0");
    return 0;
}

/* 0 when the folder holding path exists and this process may create files
 * in it; otherwise a sentence on stderr and -errno. */
static int db_dir_check(const char *path)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
    if (access(dir, F_OK) != 0) {
        int err = errno;
        if (err == ENOENT) {
            make_parent(path);
            if (access(dir, F_OK) == 0)
                return 0;
        }
        fprintf(stderr, "cugrade-server: the database's folder %s cannot be used: %s\n", dir,
                strerror(err));
        return -err;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        int err = errno;
        fprintf(stderr,
                "cugrade-server: the database's folder %s is %s: the server creates %s-wal, "
                "%s-shm and %s.serve-lock there. Make the folder writable by this user (uid "
                "%d), or use --db in a writable folder.\n",
                dir, err == EROFS ? "on a read-only filesystem" : "not writable (read-only)", path,
                path, path, (int)getuid());
        return -err;
    }
    return 0;
}

/* Take the serve lock of database db for the life of the process. 0, or
 * 1 after saying why not. */
static int serve_lock(const char *db)
{
    /* One server per database: the caches (scoreboards, rendered
     * submissions) assume no other writer of results. The lock goes away
     * with the process, kill -9 included. */
    char lockpath[1100];
    snprintf(lockpath, sizeof(lockpath), "%s.serve-lock", db);
    int lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lockfd < 0) {
        fprintf(stderr, "cugrade-server: cannot open the lock file %s: %s\n", lockpath,
                strerror(errno));
        return 1;
    }
    if (flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            fprintf(stderr,
                    "cugrade-server: %s is already being served by another cugrade-server "
                    "(%s is locked)\n",
                    db, lockpath);
        else
            fprintf(stderr, "cugrade-server: cannot lock %s: %s\n", lockpath, strerror(errno));
        return 1;
    }
    return 0;
}

/* The application's configuration from the options, its connection cap
 * held under the descriptor limit. */
static void serve_config(const struct opts *o, struct app_config *out)
{
    struct rlimit rl;
    struct app_config cfg = {.db_path = o->db,
                             .labs_dir = o->labs,
                             .rubrics_dir = o->rubrics,
                             .lease_s = o->lease_s,
                             .sweep_s = o->sweep_s,
                             .max_wait_s = 30,
                             .header_timeout_s = o->request_timeout_s,
                             .idle_timeout_s = o->idle_timeout_s,
                             .min_free_mb = o->min_free_mb,
                             .auth_fail_limit = o->auth_fail_limit < 0 ? 30 : (unsigned)o->auth_fail_limit,
                             .auth_fail_window_s = o->auth_fail_window_s};
    memcpy(cfg.trusted_proxies, o->trusted_proxies, sizeof(cfg.trusted_proxies));
    if (o->max_conns > 0)
        cfg.max_conns = (size_t)o->max_conns;
    if (o->max_buffered_mb > 0)
        cfg.max_buffered = (size_t)o->max_buffered_mb << 20;
    if (o->max_conns_per_address == 0)
        cfg.max_conns_per_client = SIZE_MAX;
    else if (o->max_conns_per_address > 0)
        cfg.max_conns_per_client = (size_t)o->max_conns_per_address;
    /* Connections past the descriptor limit would fail in accept (EMFILE)
     * for everyone; the cap keeps some for the database and the log. */
    size_t conns = cfg.max_conns ? cfg.max_conns : 10000;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < conns + 64) {
        cfg.max_conns = rl.rlim_cur > 128 ? (size_t)rl.rlim_cur - 64 : 64;
        fprintf(stderr,
                "cugrade-server: %zu descriptors allowed (ulimit -n): serving at most %zu "
                "connections\n",
                (size_t)rl.rlim_cur, cfg.max_conns);
    }
    *out = cfg;
}

static int do_serve(struct opts *o)
{
    char host[128], err[512] = "";
    int port;
    struct stat sb;
    if (parse_listen(o->listen, host, sizeof(host), &port)) {
        fprintf(stderr, "cugrade-server: --listen wants HOST:PORT, e.g. 127.0.0.1:8080\n");
        return 2;
    }
    /* The database's folder must be writable: SQLite creates <db>-wal and
     * <db>-shm beside it, and we the serve lock. Say so plainly instead of
     * letting one of those fail with a message about something else. */
    if (db_dir_check(o->db))
        return 1;
    if (stat(o->db, &sb) != 0 && errno == ENOENT) {
        fprintf(stderr, "cugrade-server: %s does not exist: initializing it\n", o->db);
        if (do_init(o->db))
            return 1;
    }
    if (serve_lock(o->db))
        return 1;
    /* Many keep-alive clients (and wrk -c 1000) need descriptors. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t *loop = uv_default_loop();
    struct app_config cfg;
    serve_config(o, &cfg);
    int rc = app_open(&the_app, loop, &cfg, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cugrade-server: %s\n", err[0] ? err : strerror(-rc));
        return 1;
    }
    rc = app_listen(&the_app, host, port);
    if (rc) {
        fprintf(stderr, "cugrade-server: cannot listen on %s: %s\n", o->listen, uv_strerror(rc));
        app_close(&the_app);
        uv_run(loop, UV_RUN_DEFAULT);
        return 1;
    }
    uv_signal_init(loop, &sig_term);
    uv_signal_init(loop, &sig_int);
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);
    size_t with_rubric = 0;
    for (size_t i = 0; i < the_app.nlabs; i++)
        with_rubric += the_app.labs[i].has_rubric;
    fprintf(
        stderr,
        "cugrade-server: listening on http://%s:%d (%zu labs, %zu with a rubric; database %s)\n",
        strchr(host, ':') ? "[::]" : host, http_server_port(the_app.http), the_app.nlabs,
        with_rubric, o->db);
    double free_mb;
    if (api_disk_free(&the_app, &free_mb) == 0 && free_mb < the_app.cfg.min_free_mb)
        fprintf(stderr,
                "cugrade-server: warning: only %.0f MiB free beside %s (--min-free-mb %.0f): "
                "/healthz reports the disk as low\n",
                free_mb, o->db, the_app.cfg.min_free_mb);
    long long depth = queue_depth(the_app.queue);
    if (depth > 0)
        fprintf(stderr, "cugrade-server: %lld submission%s queued, waiting for a runner\n", depth,
                depth == 1 ? "" : "s");
    fflush(stderr);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {.db = "var/cugrade.db",
                     .listen = "127.0.0.1:8080",
                     .labs = "labs",
                     .rubrics = "rubrics",
                     .min_free_mb = 512,
                     .max_conns = -1,
                     .max_conns_per_address = -1,
                     .auth_fail_limit = -1,
                     .max_buffered_mb = -1};
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    const char *usage = strcmp(cmd, "init") == 0    ? usage_init
                        : strcmp(cmd, "serve") == 0 ? usage_serve
                        : strcmp(cmd, "user") == 0  ? usage_user
                        : strcmp(cmd, "token") == 0 ? usage_token
                        : strcmp(cmd, "backup") == 0 ? backup_usage
                                                    : NULL;
    if (!usage) {
        fprintf(stderr, "cugrade-server: unknown command '%s'\n\n%s", cmd, usage_main);
        return 2;
    }
    /* Options may come anywhere after the command: collect positionals. */
    char *pos[8];
    int npos = 0;
    char **args = calloc((size_t)argc + 1, sizeof(char *));
    int nargs = 0;
    if (!args)
        return 1;
    args[nargs++] = argv[0];
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            args[nargs++] = argv[i];
            int takes =
                strcmp(argv[i], "--db") == 0 || strcmp(argv[i], "--listen") == 0 ||
                strcmp(argv[i], "--labs") == 0 || strcmp(argv[i], "--rubrics") == 0 ||
                strcmp(argv[i], "--display-name") == 0 || strcmp(argv[i], "--lease-seconds") == 0 ||
                strcmp(argv[i], "--sweep-seconds") == 0 ||
                strcmp(argv[i], "--request-timeout") == 0 || strcmp(argv[i], "--idle-timeout") == 0 ||
                strcmp(argv[i], "--min-free-mb") == 0 || strcmp(argv[i], "--max-conns") == 0 ||
                strcmp(argv[i], "--max-conns-per-address") == 0 ||
                strcmp(argv[i], "--max-buffered-mb") == 0 ||
                strcmp(argv[i], "--auth-fail-limit") == 0 ||
                strcmp(argv[i], "--auth-fail-window") == 0 ||
                strcmp(argv[i], "--trusted-proxy") == 0;
            if (takes && i + 1 < argc)
                args[nargs++] = argv[++i];
        } else if (npos < 8) {
            pos[npos++] = argv[i];
        }
    }
    int r = parse_opts(nargs, args, &o);
    free(args);
    if (r < 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (o.help) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "init") == 0)
        return npos ? (fputs(usage, stderr), 2) : do_init(o.db);
    if (strcmp(cmd, "serve") == 0)
        return npos ? (fputs(usage, stderr), 2) : do_serve(&o);
    if (strcmp(cmd, "user") == 0)
        return do_user(npos, pos, &o);
    if (strcmp(cmd, "backup") == 0)
        return npos != 1 ? (fputs(usage, stderr), 2) : backup_database(o.db, pos[0]) ? 1 : 0;
    return do_token(npos, pos, &o);
}
