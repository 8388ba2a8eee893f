/*
 * sanitizer.c - see sanitizer.h.
 */
#include "runner/grade/sanitizer.h"
#include "runner/run/channel.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SANITIZER_EXIT        86 /* --error-exitcode: "found errors" */
#define SANITIZE_LOAD_SECONDS 30 /* a pre-started sanitizer must load the program by then */
/* How long a run pre-started at its gate (the CUDA launcher's control
 * socket, the Python tenant's fd 4) may wait there for the job's turn on
 * the GPU: its sandbox's wall ceiling counts it. One that waited longer
 * ended, and is started again at the go. */
#define SANITIZE_GATE_WAIT_SECONDS 3600.0

/* ---------------------------------------------------------------------- */
/* Sanitizer output -> findings with file:line and a hint. Hints are Markdown
 * (the pages render them with server/markdown.c): code goes in backticks. */

static const char *sanitizer_hint(const char *msg)
{
    if (strstr(msg, "Race reported") || strstr(msg, "race"))
        return "A shared-memory race: put `__syncthreads()` between the threads' writes to "
               "shared memory and the reads of other threads' values (and before the "
               "buffer is overwritten in the next iteration).";
    if (strstr(msg, "Barrier") || strstr(msg, "divergent") || strstr(msg, "Divergent"))
        return "A `__syncthreads()` inside a branch that not every thread of the block takes: "
               "move the barrier out of the if/loop so all threads reach it.";
    /* before "Invalid ... read": memcheck reports a misaligned access as an
     * invalid read whose address "is misaligned" (sanitizer_parse) */
    if (strstr(msg, "misaligned") || strstr(msg, "Misaligned"))
        return "A misaligned access: vector loads (`float4`) need 16-byte aligned addresses.";
    if (strstr(msg, "Invalid") && (strstr(msg, "read") || strstr(msg, "write") ||
                                   strstr(msg, "Read") || strstr(msg, "Write")))
        return "An out-of-bounds access: add a bounds check (`if (i < n)`) before reading or "
               "writing, for threads of the last block that fall past the end.";
    /* CUDA 13 reports a block of more than 1024 threads as cudaErrorInvalidValue
     * on cudaLaunchKernel (seen on the H200 runner), older ones as
     * cudaErrorInvalidConfiguration. */
    if (strstr(msg, "invalid configuration") || strstr(msg, "InvalidConfiguration") ||
        strstr(msg, "call to cudaLaunchKernel"))
        return "An invalid launch configuration: a block may have at most 1024 threads "
               "(`x*y*z`), and the grid's y and z at most 65535 blocks.";
    if (strstr(msg, "Uninitialized") || strstr(msg, "uninitialized"))
        return "A read of memory that was never written: initialise it first.";
    return NULL;
}

/* Does the line start a finding? */
static int sanitizer_error_line(const char *s)
{
    return strstr(s, "Invalid ") || strstr(s, "Race reported") || strstr(s, "Barrier error") ||
           strstr(s, "Uninitialized") || strstr(s, "Misaligned") || strstr(s, "misaligned") ||
           strstr(s, "Program hit") || strstr(s, "Out-of-range") || strstr(s, "Error:") ||
           strstr(s, "ERROR:");
}

/* Find "<path>.cu:<line>" (or .cuh, or .py: a Numba kernel with lineinfo)
 * in s; the student's file only, with the sandbox's /work/ prefix cleaned. */
static void source_position(const char *s, const char *want, char **file, int *line)
{
    static const char *const exts[] = {".cuh", ".cu", ".py"};
    for (size_t e = 0; e < sizeof exts / sizeof *exts; e++) {
        size_t el = strlen(exts[e]);
        for (const char *p = s; (p = strstr(p, exts[e])) != NULL; p += el) {
            const char *end = p + el;
            if (end[0] != ':' || !isdigit((unsigned char)end[1]))
                continue;
            const char *start = p;
            while (start > s && start[-1] != ' ' && start[-1] != '\t' && start[-1] != '(')
                start--;
            if (strncmp(start, "/work/", 6) == 0)
                start += 6;
            if (start[0] == '/') /* the harness, a header, Numba's own: not the student's */
                continue;
            if (want && ((size_t)(end - start) != strlen(want) ||
                         strncmp(start, want, strlen(want)) != 0))
                continue; /* a Python run: the student's file only (not tenant.py's frames) */
            *file = strndup(start, (size_t)(end - start));
            *line = atoi(end + 1);
            return;
        }
    }
}

static char *strndup_trim(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    return strndup(s, n);
}

static void sanitizer_parse(const char *text, struct score_sanitizer *s, const char *want)
{
    const char *p = text;
    struct score_finding *cur = NULL;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        p = nl ? nl + 1 : NULL;
        if (strncmp(line, "=========", 9) != 0)
            continue;
        const char *body = line + 9;
        if (strstr(body, "ERROR SUMMARY") || strstr(body, "COMPUTE-SANITIZER") ||
            strstr(body, "RACECHECK SUMMARY"))
            continue;
        /* An error starts at one space of indent; its frames and "and ..."
         * continuations are indented further. */
        if (sanitizer_error_line(body) && body[0] == ' ' && body[1] != ' ') {
            if (s->nfindings >= 10)
                break; /* the tenth keeps its continuation lines (line, alignment) */
            struct score_finding *f = realloc(s->findings, (s->nfindings + 1) * sizeof *f);
            if (!f)
                return;
            s->findings = f;
            cur = &f[s->nfindings++];
            memset(cur, 0, sizeof *cur);
            cur->message = strndup_trim(body, strlen(body));
            cur->hint = cur->message ? (char *)sanitizer_hint(cur->message) : NULL;
            if (cur->hint)
                cur->hint = strdup(cur->hint);
        }
        /* "Access to 0x7f8d14008004 is misaligned" under an "Invalid
         * __global__ read": an alignment error, not an access past the end
         * (memcheck on a float4 load from d_in + 1, H100). */
        if (cur && cur->message && strstr(cur->message, "Invalid") &&
            strstr(body, "is misaligned") && !strstr(cur->message, "misaligned")) {
            size_t ml = strlen(cur->message);
            char *m = realloc(cur->message, ml + sizeof " (misaligned address)");
            if (m) {
                memcpy(m + ml, " (misaligned address)", sizeof " (misaligned address)");
                cur->message = m;
                free(cur->hint);
                cur->hint = strdup(sanitizer_hint(m));
            }
        }
        /* The device frame's source position (with -lineinfo), in either of
         * compute-sanitizer's formats: "at k(float*)+0x90 in /work/kernel.cu:12"
         * or "at 0x90 in /work/kernel.cu:12:k(float*)". */
        if (cur && !cur->file)
            source_position(body, want, &cur->file, &cur->line);
    }
}

void grade_sanitizer_parse(const char *text, struct score_sanitizer *s)
{
    sanitizer_parse(text, s, NULL);
}

/* The hints of sanitizer_hint, in Numba's words. */
static const char *sanitizer_python_hint(const char *msg)
{
    if (strstr(msg, "Race reported") || strstr(msg, "race"))
        return "A shared-memory race: put `cuda.syncthreads()` between the threads' writes to "
               "a `cuda.shared.array` and the reads of other threads' values (and before the "
               "array is overwritten in the next iteration of a loop).";
    if (strstr(msg, "Barrier") || strstr(msg, "divergent") || strstr(msg, "Divergent"))
        return "A `cuda.syncthreads()` inside a branch that not every thread of the block takes: "
               "move it out of the if/loop so that all threads reach it.";
    if (strstr(msg, "Invalid") && (strstr(msg, "read") || strstr(msg, "write") ||
                                   strstr(msg, "Read") || strstr(msg, "Write")))
        return "An out-of-bounds access: check the index against the array's size (`if i < "
               "x.shape[0]:`) before reading or writing, for threads of the last block that "
               "fall past the end (and size your own `cuda.device_array`s for every block).";
    return sanitizer_hint(msg);
}

/* Cut Numba's decoration from a kernel's name, in place: "cudapy::" and
 * the module's "submission::", "[abi:...]" and the argument list "(...)"
 * (long types of no use to the student), and a path's directories. */
static void sanitizer_python_message(char *m)
{
    char out[1024];
    size_t o = 0;
    for (const char *p = m; *p && o < sizeof out - 1;) {
        if (strncmp(p, "cudapy::", 8) == 0) {
            p += 8;
            continue;
        }
        if (strncmp(p, "submission::", 12) == 0) {
            p += 12;
            continue;
        }
        if (*p == '[' && strncmp(p, "[abi:", 5) == 0) {
            const char *q = strchr(p, ']');
            if (q) {
                p = q + 1;
                continue;
            }
        }
        if (*p == '(' && o > 0 && (isalnum((unsigned char)out[o - 1]) || out[o - 1] == '_')) {
            /* an argument list after a name: skip to its matching ')' */
            int depth = 0;
            const char *q = p;
            for (; *q; q++) {
                depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
                if (depth == 0)
                    break;
            }
            if (*q) {
                p = q + 1;
                continue;
            }
        }
        if (*p == '/' && (p == m || p[-1] == ' ' || p[-1] == '(')) {
            /* a path: its last component only */
            const char *q = p;
            while (*q && *q != ' ' && *q != ':' && *q != ')')
                q++;
            const char *b = q;
            while (b > p && b[-1] != '/')
                b--;
            p = b;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
    memcpy(m, out, o + 1);
}

void sanitizer_python_parse(const char *text, struct score_sanitizer *s, const char *student_file)
{
    size_t first = s->nfindings;
    sanitizer_parse(text, s, student_file);
    for (size_t i = first; i < s->nfindings; i++) {
        struct score_finding *f = &s->findings[i];
        if (f->message)
            sanitizer_python_message(f->message);
        const char *h = f->message ? sanitizer_python_hint(f->message) : NULL;
        free(f->hint);
        f->hint = h ? strdup(h) : NULL;
    }
}

void sanitizer_task_init(struct sanitizer_task *t)
{
    memset(t, 0, sizeof *t);
    t->ctl = t->ctl_child = -1;
    t->cancel[0] = t->cancel[1] = t->done[0] = t->done[1] = -1;
}

/* The most wall time t's run may take from its go: with its clock, the
 * stretch a check run's share clock allows (share_wall_ceiling, over the
 * lab's ceiling for sanitizers, three times a check's: limit.c); without
 * it, its limit. */
static double sanitize_wall(const struct sanitizer_task *t)
{
    double ceiling = t->rc->limits.ceiling > 0 ? 3 * t->rc->limits.ceiling : t->limit;
    return t->clock_on ? share_wall_ceiling(ceiling, t->limit) : t->limit;
}

/* The tool's run in the sandbox on the channel fd (closed here, and the
 * task's done pipe with it); chan gets what a Python harness wrote on the
 * channel. Returns run_sandboxed_opts's value with *v filled. */
static int sanitize_run(struct sanitizer_task *t, int fd, struct sandbox_verdict *v, char *chan,
                        size_t chanlen)
{
    const struct run_ctx *rc = t->rc;
    const char *argv[] = {t->cs, "--tool", t->tool, "--error-exitcode", "86",
                          "--print-limit", "20", "--launch-timeout", "60",
                          "/lab/launch", "/work/prog.so", "check", "--seed", t->seed, "--cases",
                          t->sanitize_case, "--no-guard", NULL};
    /* The sandbox's limit covers the wait for the compile and link too,
     * and for a run at its gate the job's wait for the GPU's shared lock
     * (a timing drain; a CUDA run killed there by its wall was charged to
     * the student as "the program failed under" the tool); the run's own
     * (t->limit from the go) is sanitizer_settle's. */
    double lim =
        sanitize_wall(t) + (rc->lab->compile_seconds > 0 ? rc->lab->compile_seconds : 60) * 2;
    if (t->gated)
        lim += SANITIZE_GATE_WAIT_SECONDS;
    struct run_opts o = {
        .launch_bind = t->launch, .control_fd = t->ctl_child, .cancel_fd = t->cancel[0]};
    const char *const *args = argv;
    assert(chanlen > 0);
    if (t->python) {
        o = t->py_opts;
        o.cancel_fd = t->cancel[0];
        args = t->py.argv;
    }
    if (t->clock_on) { /* its limit from the go (sanitizer_settle's backstop aside) */
        o.cancel_fd = t->sc.fds[0];
        o.stall = &t->sc.stall;
    }
    /* No lock of its own: the job takes one for all its sanitizers at the
     * go (job_admit). */
    int r = run_sandboxed_opts(rc, args, fd, lim, &o, v);
    /* Decided before done[1] closes: sanitizer_go, which sets went before
     * it looks at done[0], sees the same. */
    t->early = t->gated && !t->went;
    chan[0] = '\0';
    if (t->python) {
        ssize_t k = pread(fd, chan, chanlen - 1, 0);
        chan[k > 0 ? k : 0] = '\0';
    }
    close(fd);
    run_fd_close(&t->done[1]);
    return r;
}

/* The tool (or our launcher, or the Python harness under it) did not come
 * up in the sandbox: nothing of the student's ran. Ours: the rest of the
 * grade stands, the line is not charged (score.c) and the admins see why.
 * Returns 1 (the line's note set) or 0. */
static int sanitize_not_started(struct sanitizer_task *t, const struct sandbox_verdict *v,
                                const char *chan)
{
    struct score_sanitizer *s = t->s;
    const char *text = v->out ? v->out : "";
    /* (not for Python: the student writes its stderr, and could claim it) */
    int launch_failed = !t->python && v->err && strstr(v->err, "cugrade-launch:") != NULL;
    if (launch_failed ||
        (!strstr(text, "COMPUTE-SANITIZER") && !(v->err && strstr(v->err, "COMPUTE-SANITIZER")))) {
        fprintf(stderr, "cugrade-runner: job %lld: compute-sanitizer %s did not start "
                "(exit %d, signal %d): %.300s\n", t->job_id, t->tool, v->exit_code,
                v->signal, v->err ? v->err : "");
        s->infra_failed = 1;
        snprintf(s->note, sizeof s->note,
                 "compute-sanitizer could not run on this runner (our problem, not "
                 "yours): %.150s", v->err ? v->err : "");
        return 1;
    }
    if (t->python && !python_sanitize_started(chan) &&
        !(v->exited && (v->exit_code == 0 || v->exit_code == SANITIZER_EXIT))) {
        /* Numba, CuPy or the CUDA context did not come up under the tool. */
        const char *e = v->err ? strstr(v->err, "harness: ") : NULL;
        fprintf(stderr, "cugrade-runner: job %lld: the Python harness did not start under "
                "compute-sanitizer %s (exit %d, signal %d): %.300s\n", t->job_id, t->tool,
                v->exit_code, v->signal, v->err ? v->err : "");
        s->infra_failed = 1;
        snprintf(s->note, sizeof s->note,
                 "compute-sanitizer could not run on this runner (our problem, not yours): "
                 "%.150s", e ? e + 9 : "the Python harness did not start under it");
        return 1;
    }
    return 0;
}

/* Is a finding the tool's report of an allocation or launch that found
 * no device memory? */
static int oom_finding(const struct score_finding *f)
{
    const char *m = f->message ? f->message : "";
    return strstr(m, "Program hit") &&
           (strstr(m, "OUT_OF_MEMORY") || strstr(m, "MemoryAllocation") ||
            strstr(m, "\"out of memory\""));
}

size_t sanitizer_oom_ours(struct score_sanitizer *s, int errors_exit)
{
    size_t k = 0, dropped = 0, n = s->nfindings;
    for (size_t i = 0; i < n; i++) {
        struct score_finding *f = &s->findings[i];
        if (oom_finding(f)) {
            score_finding_clear(f);
            dropped++;
            continue;
        }
        s->findings[k++] = *f;
    }
    s->nfindings = k;
    if (dropped && k == 0 && errors_exit) {
        s->ran = 0;
        s->clean = 0;
        s->infra_failed = 1;
        snprintf(s->note, sizeof s->note,
                 "the GPU had no memory left for %s's run (other jobs' memory on a busy GPU: our "
                 "problem, not yours); not charged",
                 s->tool ? s->tool : "the sanitizer");
    }
    return dropped;
}

/* The tool ran: its findings, and clean (exit 0), errors found (exit 86)
 * or how the program failed under it. */
static void sanitize_findings(struct sanitizer_task *t, const struct sandbox_verdict *v)
{
    struct score_sanitizer *s = t->s;
    const char *text = v->out ? v->out : "";
    s->ran = 1;
    if (t->python) {
        const char *base = strrchr(t->py.path, '/');
        sanitizer_python_parse(text, s, base ? base + 1 : t->py.path);
        if (v->err)
            sanitizer_python_parse(v->err, s, base ? base + 1 : t->py.path);
    } else {
        grade_sanitizer_parse(text, s);
        if (v->err)
            grade_sanitizer_parse(v->err, s);
    }
    int errors = v->exited && v->exit_code == SANITIZER_EXIT;
    if (sanitizer_oom_ours(s, errors) && !s->ran) {
        fprintf(stderr,
                "cugrade-runner: job %lld: compute-sanitizer %s: out of device memory, "
                "not charged\n",
                t->job_id, t->tool);
        return;
    }
    if (v->exited && v->exit_code == 0) {
        s->clean = 1;
    } else if (errors) {
        snprintf(s->note, sizeof s->note, "%zu error(s) found", s->nfindings);
    } else {
        char fail[256];
        const char *why = run_failure(v, fail, sizeof fail);
        const char *raised = t->python && v->err ? strstr(v->err, "your code raised ") : NULL;
        if (raised) /* the tenant's words: the exception, cleaned of paths */
            snprintf(s->note, sizeof s->note, "the program failed under %s: %.*s", t->tool,
                     (int)strcspn(raised + 5, "\n"), raised + 5);
        else
            snprintf(s->note, sizeof s->note, "the program failed under %s: %s", t->tool,
                     why ? why : "unknown");
    }
}

/* What one sanitizer's run says, into the task (r, err, gone) and its
 * line (ran, clean, findings, note). */
static void sanitize_judge(struct sanitizer_task *t, int r, const struct sandbox_verdict *v,
                           const char *chan)
{
    struct score_sanitizer *s = t->s;
    int cancelled = r == -ECANCELED || (r == 0 && v->cancelled);
    double stalled = 0;
    int fired = t->clock_on && share_clock_peek(&t->sc, &stalled);
    if ((t->overtime || fired) && cancelled) {
        /* Ended by its clock (or sanitizer_settle's backstop): the program
         * (slow under the tool, or endless) ran past the limit counted
         * from the go. */
        char why[96] = "";
        if (stalled >= 1)
            snprintf(why, sizeof why,
                     ", not counting %.0f s in which the host's CPUs kept it "
                     "waiting",
                     stalled);
        s->ran = 1;
        snprintf(s->note, sizeof s->note,
                 "the program failed under %s: it ran past the "
                 "time limit (%.0f s) under the tool%s",
                 t->tool, t->limit, why);
    } else if (cancelled) {
        t->gone = 1;
    } else if (r < 0) {
        t->r = r;
        snprintf(t->err, sizeof t->err, "the sanitizer sandbox failed: %s", strerror(-r));
    } else if (!sanitize_not_started(t, v, chan)) {
        sanitize_findings(t, v);
    }
}

/* A sanitizer's thread: open its channel, run the tool, judge the run. */
static void *sanitize_main(void *p)
{
    struct sanitizer_task *t = p;
    struct sandbox_verdict v;
    char chan[512];
    memset(&v, 0, sizeof v);
    int fd = channel_open(t->rc->jobdir, t->tool);
    if (fd < 0) {
        t->r = fd;
        snprintf(t->err, sizeof t->err, "cannot open a channel: %s", strerror(-fd));
        run_fd_close(&t->done[1]);
        return NULL;
    }
    int r = sanitize_run(t, fd, &v, chan, sizeof chan);
    if (!t->early) /* (early: it ended at its gate, nothing of the student's ran) */
        sanitize_judge(t, r, &v, chan);
    sandbox_verdict_free(&v);
    return NULL;
}

/* Close t's descriptors (a start's, or what a start that failed left). */
static void sanitize_fds_close(struct sanitizer_task *t)
{
    run_fd_close(&t->ctl);
    run_fd_close(&t->ctl_child);
    for (int i = 0; i < 2; i++) {
        run_fd_close(&t->cancel[i]);
        run_fd_close(&t->done[i]);
    }
}

/* Stop t's clock (its run ended: its thread was joined). */
static void sanitize_clock_stop(struct sanitizer_task *t)
{
    if (t->clock_on)
        (void)share_clock_stop(&t->sc);
    t->clock_on = t->paused = 0;
}

/* Start t's clock for a run about to start (stopped until the go when the
 * run waits for one). Best effort: without it the run's limit is the wall
 * clock from the go (sanitizer_settle). */
static void sanitize_clock_start(struct sanitizer_task *t, int gated)
{
    int fd;
    sandbox_pause_init(&t->pz);
    t->paused = gated && !atomic_load(&t->went);
    if (t->paused)
        sandbox_pause_begin(&t->pz);
    if (share_clock_start_paused(&t->sc, "", t->limit, &t->pz, &fd) < 0) {
        t->paused = 0;
        return;
    }
    share_clock_alone(&t->sc); /* the wall less the stall, never over GPU users */
    t->clock_on = 1;
}

/* Start t's run (again, after one that ended at its gate): its cancel
 * and done pipes and, gated, its gate, a socket that is fd 4 in the
 * sandbox (the CUDA launcher's control socket; a Python run gets --gate,
 * and without a gate loses it). A gated run waits at its gate for our
 * 'g', so it needs a thread of its own: where none can be made nothing
 * is started (-EAGAIN), never the run in this thread. Returns 0, or
 * -errno with nothing started. */
static int sanitize_start(struct sanitizer_task *t, int gated)
{
    int sv[2];
    assert(!t->started && (gated || t->python));
    sanitize_fds_close(t);
    sanitize_clock_stop(t);
    t->gated = gated;
    t->early = 0;
    if (t->python) {
        size_t n = 0; /* --gate, python_run_gate's, is the last word when there */
        while (t->py.argv[n])
            n++;
        if (n > 0 && strcmp(t->py.argv[n - 1], "--gate") == 0)
            t->py.argv[n - 1] = NULL;
        t->py_opts.control_fd = -1;
    }
    if (pipe2(t->cancel, O_CLOEXEC) < 0 || pipe2(t->done, O_CLOEXEC) < 0 ||
        (gated && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)) {
        int e = -errno;
        sanitize_fds_close(t);
        return e;
    }
    sanitize_clock_start(t, gated);
    if (!gated) {
        run_task_start(&t->thread, &t->started, sanitize_main, t);
        return 0;
    }
    t->ctl = sv[0];
    t->ctl_child = sv[1];
    if (t->python) {
        python_run_gate(&t->py);
        t->py_opts.control_fd = t->ctl_child;
    }
    if (pthread_create(&t->thread, NULL, sanitize_main, t) != 0) {
        sanitize_fds_close(t);
        sanitize_clock_stop(t);
        return -EAGAIN;
    }
    t->started = 1;
    return 0;
}

/* Start t (tool, rc, cs, seed... filled in) waiting for its program.
 * Returns 0, or -errno with nothing started. */
int sanitizer_prestart(struct sanitizer_task *t)
{
    int r = sanitize_start(t, 1);
    if (r < 0 && t->python) {
        /* A run that could not start so starts at the go, without a gate. */
        fprintf(stderr, "cugrade-runner: job %lld: %s not pre-started (%s): it starts at the go\n",
                t->job_id, t->tool, strerror(-r));
        t->gated = 0;
        return 0;
    }
    return r;
}

/* At the go: went set (a run that ends from here on is judged), then 1
 * when t's run had already ended at its gate (its thread joined: it was
 * not judged; nothing of the student's ran), to be started again. A run
 * that ends between the two is judged: the student's program never came
 * to it, and its failure reads as ours (sanitize_not_started) or as the
 * tool's. */
static int sanitize_ended_at_gate(struct sanitizer_task *t)
{
    t->went = 1;
    struct pollfd pf = {t->done[0], POLLIN, 0};
    if (!t->gated || !t->started || poll(&pf, 1, 0) != 1)
        return 0;
    run_task_join(&t->thread, &t->started);
    if (!t->early)
        return 0;
    fprintf(stderr, "cugrade-runner: job %lld: %s ended at its gate before the go: started again\n",
            t->job_id, t->tool);
    return 1;
}

/* sanitizer_go for a Python run: 'g' on its gate; or, when it has none
 * (not pre-started) or its run already ended at the gate, the run started
 * now without one. */
static void sanitizer_go_python(struct sanitizer_task *t)
{
    char c = 'g';
    int again = sanitize_ended_at_gate(t);
    if (t->started) { /* at its gate */
        if (send(t->ctl, &c, 1, MSG_NOSIGNAL) != 1)
            run_task_join(&t->thread, &t->started); /* gone meanwhile: judged (went was set) */
        return; /* ctl stays open (sanitizer_finish): its 'r' may come after our 'g' */
    }
    if (t->gated && !again)
        return; /* ended after the go, and judged */
    int r = sanitize_start(t, 0);
    if (r < 0) {
        t->r = r;
        snprintf(t->err, sizeof t->err, "cannot start %s: %s", t->tool, strerror(-r));
    }
}

/* The program is linked: let t load it, and wait until it has (so that
 * nothing the student's check run does can change what it loads) or its
 * run has ended. A run that ended at its gate is started again first. */
void sanitizer_go(struct sanitizer_task *t)
{
    char c = 'g';
    t->go_at = run_now();
    if (t->paused) { /* its clock counts from now */
        sandbox_pause_end(&t->pz);
        t->paused = 0;
    }
    if (t->python) {
        sanitizer_go_python(t);
        return;
    }
    if (sanitize_ended_at_gate(t)) {
        int r = sanitize_start(t, 1);
        if (r < 0) {
            t->r = r;
            snprintf(t->err, sizeof t->err, "cannot start %s: %s", t->tool, strerror(-r));
            return;
        }
    }
    if (t->ctl < 0 || write(t->ctl, &c, 1) != 1)
        return;
    double end = run_now() + SANITIZE_LOAD_SECONDS;
    for (;;) {
        struct pollfd pf[2] = {{t->ctl, POLLIN, 0}, {t->done[0], POLLIN, 0}};
        double left = end - run_now();
        if (left <= 0) {
            /* Never answered: its verdict says what happened; the check
             * run does not wait for it any longer. */
            fprintf(stderr, "cugrade-runner: %s did not load the program in %d s\n", t->tool,
                    SANITIZE_LOAD_SECONDS);
            break;
        }
        int n = poll(pf, 2, (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || pf[1].revents)
            break; /* the run ended */
        if (pf[0].revents) {
            ssize_t k = read(t->ctl, &c, 1);
            if (k <= 0 || c == 'l' || c == 'e')
                break;
            /* 'r': CUDA is up; keep waiting for the load */
        }
    }
    run_fd_close(&t->ctl);
}

/* End t's run at once (no program will come, or it is past its deadline);
 * sanitizer_finish waits for its thread. */
void sanitizer_cancel(struct sanitizer_task *t)
{
    int fd = t->clock_on ? t->sc.fds[1] : t->cancel[1]; /* what its sandbox polls */
    if (fd >= 0) {
        char c = 'c';
        ssize_t w = write(fd, &c, 1);
        (void)w;
    }
    run_fd_close(&t->ctl);
}

/* Wait for the runs that got their program, each until its clock ends it
 * at its limit or, past sanitize_wall from the go (the wall backstop, or
 * without a clock the limit itself), this function does; one ended so is
 * a timeout of the program's. */
void sanitizer_settle(struct sanitizer_task *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double end = t[i].go_at + sanitize_wall(&t[i]);
        while (t[i].go_at > 0 && t[i].done[0] >= 0 && !t[i].overtime) {
            double left = end - run_now();
            struct pollfd pf = {t[i].done[0], POLLIN, 0};
            int k = left > 0 ? poll(&pf, 1, (int)(left * 1000) + 1) : 0;
            if (k < 0 && errno == EINTR)
                continue;
            if (k > 0)
                break; /* ended */
            if (k == 0 && run_now() >= end) {
                t[i].overtime = 1;
                sanitizer_cancel(&t[i]);
            }
        }
    }
}

/* Wait for t's run, then free what it held. */
void sanitizer_finish(struct sanitizer_task *t)
{
    run_task_join(&t->thread, &t->started);
    sanitize_clock_stop(t);
    run_fd_close(&t->ctl);
    run_fd_close(&t->ctl_child);
    run_fd_close(&t->cancel[0]);
    run_fd_close(&t->cancel[1]);
    run_fd_close(&t->done[0]);
    run_fd_close(&t->done[1]);
}
