/*
 * similarity.c - similarity checks with similarity-tester. See similarity.h.
 *
 * The child never sees the database or the network: it gets a temporary
 * folder of files named s<submission>.<ext> (the sources) and
 * m<submission>.<ext> (the same with the starter's lines blanked), and
 * writes text on stdout that we parse here. A student's source is data to
 * sim; nothing in it is run.
 */
#include "server/similarity.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/db.h"
#include "server/scoreboard.h"
#include "server/submission.h"
#include "server/writer.h"

const char similarity_schema[] =
    "CREATE TABLE IF NOT EXISTS similarity_runs("
    " id INTEGER PRIMARY KEY,"
    " lab TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK(status IN ('running','done','failed')),"
    " tool TEXT NOT NULL,"
    " files INTEGER NOT NULL DEFAULT 0,"
    " starter_excluded INTEGER NOT NULL DEFAULT 0,"
    " detail TEXT NOT NULL DEFAULT '',"
    " by_user INTEGER REFERENCES users(id),"
    " started_at REAL NOT NULL,"
    " finished_at REAL);"
    "CREATE INDEX IF NOT EXISTS similarity_runs_lab ON similarity_runs(lab, id);"
    "CREATE TABLE IF NOT EXISTS similarity_pairs("
    " id INTEGER PRIMARY KEY,"
    " run_id INTEGER NOT NULL REFERENCES similarity_runs(id),"
    " sub_a INTEGER NOT NULL REFERENCES submissions(id),"
    " sub_b INTEGER NOT NULL REFERENCES submissions(id),"
    " percent REAL NOT NULL,"
    " percent_a REAL NOT NULL DEFAULT 0," /* how much of a is found in b */
    " percent_b REAL NOT NULL DEFAULT 0,"
    " regions TEXT NOT NULL DEFAULT '[]');"
    "CREATE INDEX IF NOT EXISTS similarity_pairs_run ON similarity_pairs(run_id, percent);";

enum step { STEP_MASK, STEP_PERCENT, STEP_REGIONS, STEP_DONE };

struct sim_file {
    long long sub;
    char *src;
    size_t len;
};

struct sim_pair {
    long long a, b; /* a < b */
    double pa, pb;  /* % of a found in b, of b found in a */
    json_t *regions;
};

struct sim_job {
    struct app *app;
    long long run_id;
    char lab[65];
    char dir[256];
    const char *tool; /* "sim_c" or "sim_text" */
    const char *ext;  /* "cu" or "py" */
    int has_starter;
    struct sim_file *files;
    size_t nfiles;
    struct sim_pair *pairs;
    size_t npairs, cappairs;
    enum step step;
    uv_process_t proc;
    uv_pipe_t out;
    uv_timer_t timer;
    int open_handles; /* closes still to come */
    int exited, eof, closing, killed_time, killed_size, spawn_rc;
    long exit_status;
    char *buf;
    size_t buflen, bufcap;
    int stopping;
};

static struct sim_job *active; /* one run at a time */

/* ---- files ---- */

static int write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int rc = n < 0 ? -errno : -EIO;
            close(fd);
            return rc;
        }
        off += (size_t)n;
    }
    return close(fd) ? -errno : 0;
}

static void dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    rmdir(dir);
}

/* ---- parsing sim's output ---- */

/* "s12.cu: line 8-24" -> sub 12, lines; the prefix letter must be want.
 * Returns 1 on a match. */
static int side_parse(const char *s, char want, long long *sub, int *from, int *to)
{
    while (*s == ' ')
        s++;
    if (*s != want)
        return 0;
    char *end;
    *sub = strtoll(s + 1, &end, 10);
    if (*end != '.')
        return 0;
    const char *l = strstr(end, ": line ");
    if (!l)
        return 0;
    int n = sscanf(l, ": line %d-%d", from, to);
    if (n == 1)
        *to = *from;
    return n >= 1 && *from > 0 && *to >= *from;
}

static struct sim_file *file_of(struct sim_job *j, long long sub)
{
    for (size_t i = 0; i < j->nfiles; i++)
        if (j->files[i].sub == sub)
            return &j->files[i];
    return NULL;
}

static struct sim_pair *pair_of(struct sim_job *j, long long a, long long b)
{
    if (a > b) {
        long long t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < j->npairs; i++)
        if (j->pairs[i].a == a && j->pairs[i].b == b)
            return &j->pairs[i];
    if (j->npairs == j->cappairs) {
        size_t cap = j->cappairs ? j->cappairs * 2 : 64;
        void *p = realloc(j->pairs, cap * sizeof(*j->pairs));
        if (!p)
            return NULL;
        j->pairs = p;
        j->cappairs = cap;
    }
    struct sim_pair *p = &j->pairs[j->npairs++];
    memset(p, 0, sizeof(*p));
    p->a = a;
    p->b = b;
    return p;
}

/* Blank line numbers from..to (1-based) of f's source, keeping the line
 * breaks so that every other line keeps its number. */
static void lines_blank(struct sim_file *f, int from, int to)
{
    int line = 1;
    for (size_t i = 0; i < f->len; i++) {
        if (f->src[i] == '\n') {
            line++;
            continue;
        }
        if (line >= from && line <= to)
            f->src[i] = ' ';
        if (line > to)
            break;
    }
}

/* Step 1's output: "sN.ext: line a-b |starter.ext: line c-d [n]". */
static void mask_parse(struct sim_job *j)
{
    char *save = NULL;
    for (char *l = strtok_r(j->buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        long long sub;
        int from, to;
        char *bar = strchr(l, '|');
        if (!bar || !strstr(bar, "starter."))
            continue;
        *bar = '\0';
        struct sim_file *f;
        if (side_parse(l, 's', &sub, &from, &to) && (f = file_of(j, sub)) != NULL)
            lines_blank(f, from, to);
    }
}

/* Step 2's output: "mA.ext consists for x % of mB.ext material". */
static void percent_parse(struct sim_job *j)
{
    char *save = NULL;
    for (char *l = strtok_r(j->buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        long long a, b;
        double pct;
        if (sscanf(l, "m%lld.%*[a-z] consists for %lf %% of m%lld.%*[a-z] material", &a, &pct,
                   &b) != 3 ||
            a == b || !file_of(j, a) || !file_of(j, b))
            continue;
        struct sim_pair *p = pair_of(j, a, b);
        if (!p)
            continue;
        if (a < b)
            p->pa = pct;
        else
            p->pb = pct;
    }
}

/* Step 3's output: "mA.ext: line a-b |mB.ext: line c-d [n]". */
static void regions_parse(struct sim_job *j)
{
    char *save = NULL;
    for (char *l = strtok_r(j->buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        long long a, b;
        int af, at, bf, bt, tokens = 0;
        char *bar = strchr(l, '|');
        if (!bar)
            continue;
        *bar = '\0';
        char *tk = strrchr(bar + 1, '[');
        if (tk)
            tokens = atoi(tk + 1);
        if (!side_parse(l, 'm', &a, &af, &at) || !side_parse(bar + 1, 'm', &b, &bf, &bt) || a == b)
            continue;
        /* Regions only for pairs the percent step reported. */
        struct sim_pair *p = NULL;
        for (size_t i = 0; i < j->npairs; i++)
            if ((j->pairs[i].a == a && j->pairs[i].b == b) ||
                (j->pairs[i].a == b && j->pairs[i].b == a))
                p = &j->pairs[i];
        if (!p)
            continue;
        if (!p->regions)
            p->regions = json_array();
        if (a > b) { /* orient as the pair: a's lines first */
            int f = af, t = at;
            af = bf;
            at = bt;
            bf = f;
            bt = t;
        }
        if (json_array_size(p->regions) < 200)
            json_array_append_new(p->regions, json_pack("{s:[i,i],s:[i,i],s:i}", "a", af, at, "b",
                                                        bf, bt, "tokens", tokens));
    }
}

/* ---- the run's end ---- */

static void job_free(struct sim_job *j)
{
    for (size_t i = 0; i < j->nfiles; i++)
        free(j->files[i].src);
    free(j->files);
    for (size_t i = 0; i < j->npairs; i++)
        json_decref(j->pairs[i].regions);
    free(j->pairs);
    free(j->buf);
    if (j->dir[0])
        dir_remove(j->dir);
    if (active == j)
        active = NULL;
    free(j);
}

/* A run's end, stored by the writer thread: its pairs (tens of MB for a
 * big class) and its row. On the loop it waited for the write lock too. */
struct sim_store {
    long long run_id;
    char lab[65];
    char status[16];
    char detail[300];
    struct sim_pair *pairs; /* taken from the job */
    size_t npairs;
    struct writer *writer;  /* a failed store is submitted again (store_done) */
    int tries;
};
#define SIM_STORE_TRIES 5 /* else the run says "running" until the next start */

static void store_free(struct sim_store *st)
{
    for (size_t i = 0; i < st->npairs; i++)
        json_decref(st->pairs[i].regions);
    free(st->pairs);
    free(st);
}

/* Writer thread (or the loop, when the writer refused the job): inside a
 * transaction, the pairs of a done run and the run's row. */
static int store_run(struct db *db, void *arg)
{
    struct sim_store *s = arg;
    sqlite3_stmt *st;
    int rc = 0;
    if (strcmp(s->status, "done") == 0) {
        st = db_stmt(db, "INSERT INTO similarity_pairs(run_id, sub_a, sub_b, percent, percent_a,"
                         " percent_b, regions) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        for (size_t i = 0; st && !rc && i < s->npairs && i < SIMILARITY_PAIRS_MAX; i++) {
            struct sim_pair *p = &s->pairs[i];
            char *regions = p->regions ? json_dumps(p->regions, JSON_COMPACT) : NULL;
            sqlite3_bind_int64(st, 1, s->run_id);
            sqlite3_bind_int64(st, 2, p->a);
            sqlite3_bind_int64(st, 3, p->b);
            sqlite3_bind_double(st, 4, p->pa > p->pb ? p->pa : p->pb);
            sqlite3_bind_double(st, 5, p->pa);
            sqlite3_bind_double(st, 6, p->pb);
            sqlite3_bind_text(st, 7, regions ? regions : "[]", -1, SQLITE_TRANSIENT);
            rc = db_step_done(st);
            free(regions);
        }
    }
    st = db_stmt(db, "UPDATE similarity_runs SET status = ?2, detail = ?3, finished_at = ?4"
                     " WHERE id = ?1");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, s->run_id);
    sqlite3_bind_text(st, 2, rc ? "failed" : s->status, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, rc ? "the pairs could not be stored" : s->detail, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, db_now());
    return db_step_done(st); /* a run whose pairs failed is stored as failed */
}

/* Loop thread: the run is stored (or not). */
static void store_done(void *arg, int rc)
{
    struct sim_store *s = arg;
    if (rc && s->writer && ++s->tries < SIM_STORE_TRIES &&
        writer_submit(s->writer, store_run, store_done, s, s->npairs * 256) == 0)
        return;
    app_log("similarity run %lld (%s): %s%s%s%s", s->run_id, s->lab, s->status,
            *s->detail ? ": " : "", s->detail, rc ? " (not stored: the database failed)" : "");
    store_free(s);
}

static void run_finish(struct sim_job *j, const char *status, const char *detail)
{
    if (j->stopping)
        return; /* the database may be closing: the next start marks it failed */
    struct sim_store *s = calloc(1, sizeof(*s));
    if (!s)
        return; /* the next start marks it failed */
    s->run_id = j->run_id;
    snprintf(s->lab, sizeof(s->lab), "%s", j->lab);
    snprintf(s->status, sizeof(s->status), "%s", status);
    snprintf(s->detail, sizeof(s->detail), "%s", detail);
    s->pairs = j->pairs; /* the job is freed next: the store owns them */
    s->npairs = j->npairs;
    j->pairs = NULL;
    j->npairs = j->cappairs = 0;
    size_t bytes = s->npairs * 256;
    s->writer = j->app->writer;
    if (j->app->writer &&
        writer_submit(j->app->writer, store_run, store_done, s, bytes) == 0)
        return;
    /* No writer (stopping): on the loop, as one transaction. */
    int rc = db_begin(j->app->db, 1);
    if (!rc) {
        rc = store_run(j->app->db, s);
        rc = rc ? rc : db_commit(j->app->db);
        if (rc)
            db_rollback(j->app->db);
    }
    store_done(s, rc);
}

/* Sort pairs by their larger percent, highest first. */
static int pair_cmp(const void *x, const void *y)
{
    const struct sim_pair *a = x, *b = y;
    double pa = a->pa > a->pb ? a->pa : a->pb, pb = b->pa > b->pb ? b->pa : b->pb;
    return pa < pb ? 1 : pa > pb ? -1 : 0;
}

/* The time limit of one step: SIMILARITY_STEP_S, or the environment's
 * CUGRADE_SIMILARITY_STEP_S (0.1 to 3600 s; tests use a short one). */
static double step_limit_s(void)
{
    const char *s = getenv("CUGRADE_SIMILARITY_STEP_S");
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !(v >= 0.1 && v <= 3600))
        return SIMILARITY_STEP_S;
    return v;
}

static int step_spawn(struct sim_job *j);

static void on_closed(uv_handle_t *h)
{
    struct sim_job *j = h->data;
    if (--j->open_handles > 0)
        return;
    /* All three handles are closed: the step is over. */
    char detail[300] = "";
    if (j->spawn_rc)
        snprintf(detail, sizeof(detail),
                 "%s could not be started (%s): install Debian's similarity-tester package "
                 "(sh deploy/install-deps.sh run).",
                 j->tool, uv_strerror(j->spawn_rc));
    else if (j->killed_time)
        snprintf(detail, sizeof(detail),
                 "%s took longer than %g s and was stopped; try again when the server is less "
                 "busy, or ask an admin to run it on fewer files.",
                 j->tool, step_limit_s());
    else if (j->killed_size)
        snprintf(detail, sizeof(detail), "%s wrote more than %u MiB and was stopped.", j->tool,
                 SIMILARITY_OUTPUT_MAX >> 20);
    else if (j->exit_status != 0)
        snprintf(detail, sizeof(detail), "%s exited with status %ld.", j->tool, j->exit_status);
    if (detail[0] || j->stopping) {
        run_finish(j, "failed", j->stopping ? "the server stopped during the run" : detail);
        job_free(j);
        return;
    }
    if (!j->buf) { /* no output at all: nothing similar */
        j->buf = calloc(1, 1);
        j->bufcap = 1;
    }
    if (!j->buf) {
        run_finish(j, "failed", "out of memory");
        job_free(j);
        return;
    }
    if (j->step == STEP_MASK)
        mask_parse(j);
    else if (j->step == STEP_PERCENT)
        percent_parse(j);
    else
        regions_parse(j);
    j->step++;
    if (j->step == STEP_DONE) {
        if (j->npairs)
            qsort(j->pairs, j->npairs, sizeof(*j->pairs), pair_cmp);
        snprintf(detail, sizeof(detail), "%zu files, %zu similar pairs", j->nfiles, j->npairs);
        run_finish(j, "done", detail);
        job_free(j);
        return;
    }
    int rc = step_spawn(j);
    if (rc) {
        snprintf(detail, sizeof(detail), "could not start the next step: %s", strerror(-rc));
        run_finish(j, "failed", detail);
        job_free(j);
    }
}

static void step_close(struct sim_job *j)
{
    if (j->closing)
        return;
    j->closing = 1;
    uv_close((uv_handle_t *)&j->proc, on_closed);
    uv_close((uv_handle_t *)&j->out, on_closed);
    uv_close((uv_handle_t *)&j->timer, on_closed);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct sim_job *j = p->data;
    j->exited = 1;
    j->exit_status = sig ? 128 + sig : (long)status;
    /* After a kill, what is left in the pipe does not matter (and a
     * grandchild could hold it open); otherwise read to the end, the timer
     * still bounding the wait. */
    if (j->eof || j->killed_time || j->killed_size)
        step_close(j);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static char chunk[65536];
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(chunk, sizeof(chunk));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct sim_job *j = s->data;
    if (n > 0 && !j->killed_size) {
        if (j->buflen + (size_t)n > SIMILARITY_OUTPUT_MAX) {
            j->killed_size = 1;
            uv_read_stop(s);
            if (j->exited)
                step_close(j);
            else
                uv_process_kill(&j->proc, SIGKILL);
            return;
        } else {
            size_t need = j->buflen + (size_t)n + 1, cap = j->bufcap ? j->bufcap : 65536;
            while (cap < need)
                cap *= 2; /* doubling: a big output is not copied once per read */
            char *p = cap == j->bufcap ? j->buf : realloc(j->buf, cap);
            if (!p) {
                j->killed_size = 1;
                uv_process_kill(&j->proc, SIGKILL);
                return;
            }
            j->buf = p;
            j->bufcap = cap;
            memcpy(j->buf + j->buflen, buf->base, (size_t)n);
            j->buflen += (size_t)n;
            j->buf[j->buflen] = '\0';
        }
    }
    if (n < 0) {
        uv_read_stop(s);
        j->eof = 1;
        if (j->exited)
            step_close(j);
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct sim_job *j = t->data;
    j->killed_time = 1;
    if (j->exited)
        step_close(j); /* exited, but its output never ended */
    else
        uv_process_kill(&j->proc, SIGKILL);
}

/* Write the masked copies m<sub>.<ext> (step 2 and 3 read them). */
static int masked_write(struct sim_job *j)
{
    char name[64];
    for (size_t i = 0; i < j->nfiles; i++) {
        snprintf(name, sizeof(name), "m%lld.%s", j->files[i].sub, j->ext);
        int rc = write_file(j->dir, name, j->files[i].src, j->files[i].len);
        if (rc)
            return rc;
    }
    return 0;
}

/* Start the child of j->step. 0: the step runs and on_closed ends it
 * (a failed spawn too, with j->spawn_rc set); -errno: nothing was started
 * and no handle is open. */
static int step_spawn(struct sim_job *j)
{
    size_t n = j->nfiles + 12;
    char **argv = calloc(n, sizeof(char *));
    char *names = malloc(j->nfiles * 32 + 64);
    int a = 0, rc = 0;
    if (!argv || !names) {
        free(argv);
        free(names);
        return -ENOMEM;
    }
    if (j->step == STEP_PERCENT && (rc = masked_write(j)) != 0) {
        free(argv);
        free(names);
        return rc;
    }
    argv[a++] = (char *)j->tool;
    if (j->step == STEP_MASK) {
        argv[a++] = "-n";
        argv[a++] = "-S";
    } else {
        argv[a++] = j->step == STEP_PERCENT ? "-p" : "-n";
        argv[a++] = "-s";
        argv[a++] = "-e";
    }
    argv[a++] = "-T";
    argv[a++] = "-w";
    argv[a++] = "200";
    for (size_t i = 0; i < j->nfiles; i++) {
        argv[a] = names + i * 32;
        snprintf(argv[a++], 32, "%c%lld.%s", j->step == STEP_MASK ? 's' : 'm', j->files[i].sub,
                 j->ext);
    }
    if (j->step == STEP_MASK) {
        char *starter = names + j->nfiles * 32;
        snprintf(starter, 32, "starter.%s", j->ext);
        argv[a++] = "/";
        argv[a++] = starter;
    }
    argv[a] = NULL;
    assert((size_t)a < n);

    uv_loop_t *loop = j->app->loop;
    uv_stdio_container_t stdio[3];
    uv_process_options_t o;
    memset(&o, 0, sizeof(o));
    j->exited = j->eof = j->closing = 0;
    j->buflen = 0;
    if (j->buf)
        j->buf[0] = '\0';
    uv_pipe_init(loop, &j->out, 0);
    uv_timer_init(loop, &j->timer);
    j->out.data = j->timer.data = j->proc.data = j;
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&j->out;
    stdio[2].flags = UV_IGNORE;
    o.file = j->tool;
    o.args = argv;
    o.cwd = j->dir;
    o.exit_cb = on_exit_cb;
    o.stdio = stdio;
    o.stdio_count = 3;
    rc = uv_spawn(loop, &j->proc, &o);
    free(argv);
    free(names);
    j->open_handles = 3;
    if (rc) {
        /* The process handle is initialized even when the spawn failed:
         * close all three; on_closed reports the failure. */
        j->spawn_rc = rc;
        step_close(j);
        return 0;
    }
    uv_read_start((uv_stream_t *)&j->out, on_alloc, on_read);
    uv_timer_start(&j->timer, on_timeout, (uint64_t)(step_limit_s() * 1000), 0);
    return 0;
}

/* ---- starting a run ---- */

/* The lab's starter (labs/<lab>/starter.<want>, else the other of .cu and
 * .py): its text, malloc'd, and the extension; NULL when the lab has none. */
static char *starter_read(const struct app_lab *l, const char *want, const char **ext, size_t *len)
{
    static const char *const by_want[2][2] = {{"cu", "py"}, {"py", "cu"}};
    const char *const *exts = by_want[strcmp(want, "py") == 0];
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/starter.%s", l->lab.dir, exts[i]);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        char *buf = malloc(256 * 1024 + 1);
        size_t n = buf ? fread(buf, 1, 256 * 1024, f) : 0;
        fclose(f);
        if (!buf)
            return NULL;
        buf[n] = '\0';
        *ext = exts[i];
        *len = n;
        return buf;
    }
    return NULL;
}

/* Load each best submission's source into j->files. */
static int files_load(struct sim_job *j, const struct auth_user *viewer, struct api_error *e)
{
    json_t *board = NULL, *row;
    size_t i;
    if (api_scoreboard(j->app, viewer, j->lab, &board, e))
        return -EIO;
    json_t *rows = json_object_get(board, "rows");
    j->files = calloc(json_array_size(rows) + 1, sizeof(*j->files));
    if (!j->files) {
        json_decref(board);
        return api_internal(e, -ENOMEM);
    }
    json_array_foreach(rows, i, row)
    {
        long long sub = json_integer_value(json_object_get(row, "submission"));
        char fname[72];
        struct sim_file *f = &j->files[j->nfiles];
        if (sub <= 0 || api_submission_source(j->app, viewer, sub, &f->src, &f->len, fname, e) != 0)
            continue;
        /* sim_text when any file is Python: sim_c would lex it as C. */
        if (strlen(fname) > 3 && strcmp(fname + strlen(fname) - 3, ".py") == 0)
            j->ext = "py";
        f->sub = sub;
        j->nfiles++;
    }
    json_decref(board);
    return 0;
}

/* Write s<sub>.<ext> for every file and the starter. */
static int files_write(struct sim_job *j, const char *starter, size_t slen)
{
    char name[64];
    for (size_t i = 0; i < j->nfiles; i++) {
        snprintf(name, sizeof(name), "s%lld.%s", j->files[i].sub, j->ext);
        int rc = write_file(j->dir, name, j->files[i].src, j->files[i].len);
        if (rc)
            return rc;
    }
    if (starter) {
        snprintf(name, sizeof(name), "starter.%s", j->ext);
        return write_file(j->dir, name, starter, slen);
    }
    return 0;
}

/* The run's row, 'running'. 0 or -errno. */
static int run_insert(struct sim_job *j, const struct auth_user *viewer)
{
    sqlite3_stmt *st = db_stmt(j->app->db, "INSERT INTO similarity_runs(lab, status, tool, files,"
                                           " starter_excluded, by_user, started_at)"
                                           " VALUES(?1, 'running', ?2, ?3, ?4, ?5, ?6)");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, j->lab, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, j->tool, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, (int)j->nfiles);
    sqlite3_bind_int(st, 4, j->has_starter);
    if (viewer->id > 0) /* 0: the scheduler */
        sqlite3_bind_int64(st, 5, viewer->id);
    sqlite3_bind_double(st, 6, db_now());
    return db_step_done(st);
}

int similarity_start(struct app *app, const struct auth_user *viewer, const char *lab,
                     long long *run_id, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff run similarity checks.");
    struct app_lab *l = app_lab_find(app, lab);
    if (!l)
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    if (active)
        return api_fail(e, 409, "conflict", "A similarity check (lab %s) is running; wait until "
                        "it ends, then start this one.", active->lab);
    /* A run left 'running' by a server that stopped will never end. */
    db_exec(app->db, "UPDATE similarity_runs SET status = 'failed', detail = 'the server stopped "
                     "during the run' WHERE status = 'running'");
    struct sim_job *j = calloc(1, sizeof(*j));
    if (!j)
        return api_internal(e, -ENOMEM);
    j->app = app;
    snprintf(j->lab, sizeof(j->lab), "%s", l->lab.name);
    j->ext = "cu";
    int rc = files_load(j, viewer, e);
    if (rc) {
        job_free(j);
        return rc;
    }
    if (j->nfiles < 2) {
        size_t n = j->nfiles;
        job_free(j);
        return api_fail(e, 409, "conflict",
                        "Lab %s has %zu student%s with a graded submission; a similarity check "
                        "needs at least two. Run it after the deadline.",
                        lab, n, n == 1 ? "" : "s");
    }
    const char *sext = NULL;
    size_t slen = 0;
    char *starter = starter_read(l, j->ext, &sext, &slen);
    if (!starter || !sext || strcmp(sext, j->ext) != 0) {
        free(starter);
        starter = NULL;
        if (sext && j->nfiles == 0)
            j->ext = sext;
    }
    j->has_starter = starter != NULL;
    j->tool = strcmp(j->ext, "py") == 0 ? "sim_text" : "sim_c";
    const char *tmp = getenv("TMPDIR");
    snprintf(j->dir, sizeof(j->dir), "%s/cugrade-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(j->dir)) {
        j->dir[0] = '\0';
        free(starter);
        job_free(j);
        return api_internal(e, -errno);
    }
    rc = files_write(j, starter, slen);
    free(starter);
    if (rc) {
        job_free(j);
        return api_internal(e, rc);
    }
    rc = run_insert(j, viewer);
    if (rc) {
        job_free(j);
        return api_internal(e, rc);
    }
    j->run_id = db_last_id(app->db);
    *run_id = j->run_id;
    char target[40], detail[120];
    snprintf(target, sizeof(target), "similarity_run:%lld", j->run_id);
    snprintf(detail, sizeof(detail), "lab=%s files=%zu tool=%s", j->lab, j->nfiles, j->tool);
    db_audit(app->db, viewer->id, "similarity_run", target, detail);
    j->step = j->has_starter ? STEP_MASK : STEP_PERCENT;
    active = j;
    rc = step_spawn(j);
    if (rc) {
        run_finish(j, "failed", "the files for sim could not be written");
        job_free(j);
        return api_internal(e, rc);
    }
    return 0;
}

/* ---- the scheduler: one check per lab after its last deadline ---- */

static uv_timer_t sched;
static int sched_on;

/* 1 when lab l's deadlines are all past and no check started after them. */
static int sched_due(struct app *app, const struct app_lab *l, double now)
{
    if (!l->has_rubric)
        return 0;
    double end = l->rubric.hard_deadline > l->rubric.due ? l->rubric.hard_deadline : l->rubric.due;
    if (end <= 0 || now < end)
        return 0;
    sqlite3_stmt *st = db_stmt(app->db, "SELECT COUNT(*) FROM similarity_runs"
                                        " WHERE lab = ?1 AND started_at >= ?2");
    int n = 1;
    if (!st)
        return 0;
    sqlite3_bind_text(st, 1, l->lab.name, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, end);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    return n == 0;
}

static void on_sched(uv_timer_t *t)
{
    struct app *app = t->data;
    struct auth_user sys;
    struct api_error e;
    long long id;
    if (active)
        return;
    memset(&sys, 0, sizeof(sys));
    sys.role = AUTH_ADMIN;
    snprintf(sys.name, sizeof(sys.name), "cugrade (scheduled)");
    double now = db_now();
    for (size_t i = 0; i < app->nlabs; i++) {
        struct app_lab *l = &app->labs[i];
        if (!sched_due(app, l, now))
            continue;
        /* Fewer than two students (409) is retried at the next tick. */
        if (similarity_start(app, &sys, l->lab.name, &id, &e) == 0) {
            app_log("similarity run %lld (%s) started by the scheduler: the lab's deadlines "
                    "are past",
                    id, l->lab.name);
            return; /* one run at a time */
        }
    }
}

void similarity_schedule(struct app *app)
{
    const char *s = getenv("CUGRADE_SIMILARITY_AUTO_S");
    char *end;
    double every = SIMILARITY_AUTO_S;
    if (s && *s) {
        every = strtod(s, &end);
        if (*end || !(every >= 0))
            every = SIMILARITY_AUTO_S;
    }
    if (every <= 0 || sched_on)
        return;
    uv_timer_init(app->loop, &sched);
    sched.data = app;
    uv_timer_start(&sched, on_sched, (uint64_t)(every * 1000), (uint64_t)(every * 1000));
    sched_on = 1;
}

void similarity_shutdown(struct app *app)
{
    (void)app;
    if (sched_on) {
        uv_timer_stop(&sched);
        uv_close((uv_handle_t *)&sched, NULL);
        sched_on = 0;
    }
    if (active && !active->stopping) {
        active->stopping = 1;
        if (!active->exited)
            uv_process_kill(&active->proc, SIGKILL);
    }
}

/* ---- reports ---- */

static json_t *run_json(sqlite3_stmt *st)
{
    char started[40], finished[40] = "";
    api_time_iso(sqlite3_column_double(st, 6), started, sizeof(started));
    if (sqlite3_column_type(st, 7) != SQLITE_NULL)
        api_time_iso(sqlite3_column_double(st, 7), finished, sizeof(finished));
    return json_pack("{s:I,s:s,s:s,s:i,s:b,s:s,s:s,s:s?,s:s}", "id",
                     (json_int_t)sqlite3_column_int64(st, 0), "status", db_col_text(st, 1), "tool",
                     db_col_text(st, 2), "files", sqlite3_column_int(st, 3), "starter_excluded",
                     sqlite3_column_int(st, 4), "detail", db_col_text(st, 5), "started_at", started,
                     "finished_at", finished[0] ? finished : NULL, "by", db_col_text(st, 8));
}

#define PAIR_COLS                                                                                  \
    "p.id, p.percent, p.sub_a, ua.name, p.percent_a, p.sub_b, ub.name, p.percent_b, p.regions,"    \
    " p.run_id, r.lab"
#define PAIR_FROM                                                                                  \
    " FROM similarity_pairs p JOIN similarity_runs r ON r.id = p.run_id"                           \
    " JOIN submissions sa ON sa.id = p.sub_a JOIN users ua ON ua.id = sa.user_id"                  \
    " JOIN submissions sb ON sb.id = p.sub_b JOIN users ub ON ub.id = sb.user_id"

static json_t *pair_json(sqlite3_stmt *st, int with_regions)
{
    json_t *o = json_pack(
        "{s:I,s:f,s:{s:s,s:I,s:f},s:{s:s,s:I,s:f},s:I,s:s}", "id",
        (json_int_t)sqlite3_column_int64(st, 0), "percent", sqlite3_column_double(st, 1), "a",
        "user", db_col_text(st, 3), "submission", (json_int_t)sqlite3_column_int64(st, 2),
        "percent", sqlite3_column_double(st, 4), "b", "user", db_col_text(st, 6), "submission",
        (json_int_t)sqlite3_column_int64(st, 5), "percent", sqlite3_column_double(st, 7), "run",
        (json_int_t)sqlite3_column_int64(st, 9), "lab", db_col_text(st, 10));
    if (o && with_regions) {
        json_t *r = json_loads(db_col_text(st, 8), 0, NULL);
        json_object_set_new(o, "regions", r ? r : json_array());
    }
    return o;
}

int similarity_report(struct app *app, const struct auth_user *viewer, const char *lab,
                      json_t **out, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see similarity checks.");
    if (!app_lab_find(app, lab))
        return api_fail(e, 404, "not_found", "There is no lab called '%.64s'.", lab);
    sqlite3_stmt *st = db_stmt(
        app->db, "SELECT r.id, r.status, r.tool, r.files, r.starter_excluded, r.detail,"
                 " r.started_at, r.finished_at, COALESCE(u.name, '') FROM similarity_runs r"
                 " LEFT JOIN users u ON u.id = r.by_user WHERE r.lab = ?1 ORDER BY r.id DESC"
                 " LIMIT 1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_text(st, 1, lab, -1, SQLITE_STATIC);
    json_t *run = json_null();
    long long run_id = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        run_id = sqlite3_column_int64(st, 0);
        run = run_json(st);
    }
    sqlite3_reset(st);
    json_t *pairs = json_array();
    st = db_stmt(app->db, "SELECT " PAIR_COLS PAIR_FROM " WHERE p.run_id = ?1"
                          " ORDER BY p.percent DESC, p.id LIMIT 500");
    if (st && pairs) {
        sqlite3_bind_int64(st, 1, run_id);
        while (sqlite3_step(st) == SQLITE_ROW)
            json_array_append_new(pairs, pair_json(st, 0));
        sqlite3_reset(st);
    }
    *out = json_pack("{s:s,s:o,s:o}", "lab", lab, "run", run ? run : json_null(), "pairs",
                     pairs ? pairs : json_array());
    return *out ? 0 : api_internal(e, -ENOMEM);
}

int similarity_pair(struct app *app, const struct auth_user *viewer, long long pair_id,
                    json_t **out, struct api_error *e)
{
    if (!auth_role_staff(viewer->role))
        return api_fail(e, 403, "forbidden", "Only the course staff see similarity checks.");
    sqlite3_stmt *st = db_stmt(app->db, "SELECT " PAIR_COLS PAIR_FROM " WHERE p.id = ?1");
    if (!st)
        return api_internal(e, -EIO);
    sqlite3_bind_int64(st, 1, pair_id);
    *out = sqlite3_step(st) == SQLITE_ROW ? pair_json(st, 1) : NULL;
    sqlite3_reset(st);
    if (!*out)
        return api_fail(e, 404, "not_found", "There is no similar pair %lld.", pair_id);
    return 0;
}

