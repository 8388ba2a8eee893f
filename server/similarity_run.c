/*
 * similarity_run.c - a similarity check's run: the files for sim, sim's
 * child process step by step, its output parsed into pairs, and the run's
 * end stored by the writer. See similarity.h and similarity_run.h.
 *
 * The child never sees the database or the network: it gets a temporary
 * folder of files named s<submission>.<ext> (the sources) and
 * m<submission>.<ext> (the same with the starter's lines blanked), and
 * writes text on stdout that we parse here. A student's source is data to
 * sim; nothing in it is run.
 */
#include "server/similarity_run.h"

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
#include "server/db.h"
#include "server/writer.h"

struct sim_job *sim_active; /* one run at a time */

/* ---- files ---- */

int sim_write_file(const char *dir, const char *name, const char *data, size_t len)
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

void sim_job_free(struct sim_job *j)
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
    if (sim_active == j)
        sim_active = NULL;
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

void sim_run_finish(struct sim_job *j, const char *status, const char *detail)
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
        sim_run_finish(j, "failed", j->stopping ? "the server stopped during the run" : detail);
        sim_job_free(j);
        return;
    }
    if (!j->buf) { /* no output at all: nothing similar */
        j->buf = calloc(1, 1);
        j->bufcap = 1;
    }
    if (!j->buf) {
        sim_run_finish(j, "failed", "out of memory");
        sim_job_free(j);
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
        sim_run_finish(j, "done", detail);
        sim_job_free(j);
        return;
    }
    int rc = sim_step_spawn(j);
    if (rc) {
        snprintf(detail, sizeof(detail), "could not start the next step: %s", strerror(-rc));
        sim_run_finish(j, "failed", detail);
        sim_job_free(j);
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
        int rc = sim_write_file(j->dir, name, j->files[i].src, j->files[i].len);
        if (rc)
            return rc;
    }
    return 0;
}

/* Start the child of j->step. 0: the step runs and on_closed ends it
 * (a failed spawn too, with j->spawn_rc set); -errno: nothing was started
 * and no handle is open. */
int sim_step_spawn(struct sim_job *j)
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

