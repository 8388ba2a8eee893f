/*
 * main.c - cugrade-runner: one runner per GPU. Claims one job at a time
 * from the server, grades it (grade.h) and posts the result; or grades one
 * file locally with `cugrade-runner grade`. See docs/runner.md.
 *
 * This file is the command line; the host (tree, GPU, the GPU holder, the
 * labs built at start) is host.c, the service loop (claims, the two lanes,
 * heartbeats, results) serve.c.
 */
#include "runner/service/client.h"
#include "runner/config.h"
#include "runner/grade/grade.h"
#include "runner/gpu/health.h"
#include "runner/service/host.h"
#include "runner/service/peers.h"
#include "runner/gpu/lock.h"
#include "runner/service/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(
        f, "usage: cugrade-runner --server URL --token-file F [--gpu N] [--cache DIR]\n"
           "                      [--work DIR] [--root DIR] [--name NAME] [--once] [--keep-jobs]\n"
           "       cugrade-runner grade --lab L --file kernel.cu [--seed HEX] [--rubric F]\n"
           "                      [--gpu N] [--cache DIR] [--work DIR] [--root DIR]\n"
           "                      [--arch sm_XX] [--stop-after front|compile|inspect|link]\n"
           "                      [--keep-jobs]\n"
           "       cugrade-runner prepare [--gpu N] [--cache DIR] [--root DIR] [--arch sm_XX]\n"
           "       cugrade-runner --help | --help-env [markdown]\n"
           "\n"
           "Claims jobs from a cugrade-server and grades them on one GPU (see docs/runner.md).\n"
           "`grade` runs the whole pipeline on one file without a server and prints\n"
           "{\"status\":...,\"result\":{...}}. `prepare` builds every lab and caches the\n"
           "GPU's device record and the baselines, then exits.\n"
           "\n"
           "  --server URL      the cugrade-server, e.g. http://127.0.0.1:8080\n"
           "  --token-file F    file holding the runner token (cgr_...)\n"
           "  --gpu N           GPU index (nvidia-smi order); default $CUDA_VISIBLE_DEVICES or 0\n"
           "  --cache DIR       built labs and cached baselines (default ROOT/var/runner-cache)\n"
           "  --work DIR        per-job directories (default /tmp/cugrade-runner-gpuN)\n"
           "  --root DIR        source tree with labs/ and rubrics/ (default: found from cwd/exe)\n"
           "  --arch sm_XX      GPU architecture when no GPU can be queried (default sm_90)\n"
           "  --once            exit after one job\n"
           "  --jobs N          jobs compiling at once (the CPU lane; default: cores /\n"
           "                    $CUGRADE_RUNNERS_PER_HOST)\n"
           "  --queue M         jobs in flight, compiling or waiting for the GPU (default and\n"
           "                    most 256: claim ahead, so compile errors never wait for the GPU)\n"
           "  --lazy-build      build a lab on its first job instead of at start\n"
           "  --name NAME       runner name reported to the server (default HOST-gpuN)\n"
           "  --keep-jobs       keep each job's directory for debugging (its work folder is\n"
           "                    then mounted in the host's namespace)\n"
           "Environment: CUDA_HOME (default /usr/local/cuda) and the CUGRADE_* switches that\n"
           "`cugrade-runner --help-env` lists (docs/runner.md, \"Environment switches\").\n");
}

static char *read_small_file(const char *path, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = malloc(cap + 1);
    size_t n = b ? fread(b, 1, cap, f) : 0;
    int more = fgetc(f) != EOF;
    fclose(f);
    if (!b || more) {
        free(b);
        return NULL;
    }
    b[n] = '\0';
    return b;
}

static void random_seed(char *out, size_t len)
{
    unsigned char b[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, b, sizeof b) != (ssize_t)sizeof b)
            memset(b, 0x5a, sizeof b);
        close(fd);
    }
    for (size_t i = 0; i < sizeof b && 2 * i + 2 < len; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* ---------------------------------------------------------------------- */
/* `cugrade-runner grade`: the pipeline on one file, no server. */

static int progress_print(void *arg, const char *phase, const char *detail)
{
    (void)arg;
    fprintf(stderr, "cugrade-runner: %s %s\n", phase, detail ? detail : "");
    return 0;
}

/* 1 when the command line has --keep-jobs (grade and serving: each job's
 * directory stays, for debugging). */
static int keep_jobs_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--keep-jobs") == 0)
            return 1;
    return 0;
}

static int cmd_grade(int argc, char **argv)
{
    static const struct option opts[] = {
        {"lab", required_argument, 0, 'l'},  {"file", required_argument, 0, 'f'},
        {"seed", required_argument, 0, 's'}, {"rubric", required_argument, 0, 'r'},
        {"gpu", required_argument, 0, 'g'},  {"cache", required_argument, 0, 'c'},
        {"work", required_argument, 0, 'w'}, {"root", required_argument, 0, 'R'},
        {"arch", required_argument, 0, 'a'}, {"stop-after", required_argument, 0, 'S'},
        {"keep-jobs", no_argument, 0, 'K'}, /* keep_jobs_asked */
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    const char *lab = NULL, *file = NULL, *seed = NULL, *rubric = NULL, *gpu = NULL;
    const char *cache = NULL, *work = NULL, *root = NULL, *arch = NULL, *stop = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'l': lab = optarg; break;
        case 'f': file = optarg; break;
        case 's': seed = optarg; break;
        case 'r': rubric = optarg; break;
        case 'g': gpu = optarg; break;
        case 'c': cache = optarg; break;
        case 'w': work = optarg; break;
        case 'R': root = optarg; break;
        case 'a': arch = optarg; break;
        case 'S': stop = optarg; break;
        case 'K':
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!lab || !file) {
        usage(stderr);
        return 2;
    }
    if (stop && strcmp(stop, "front") && strcmp(stop, "compile") && strcmp(stop, "inspect") &&
        strcmp(stop, "link")) {
        fprintf(stderr, "cugrade-runner: --stop-after takes front, compile, inspect or link\n");
        return 2;
    }
    struct host h;
    struct grade_env env;
    if (host_setup(&h, gpu, cache, work, root, arch) < 0)
        return 2;
    host_grade_env(&h, &env);
    env.keep_jobs = keep_jobs_asked(argc, argv);
    host_gpu_hold_start(&h); /* initialises the GPU while nvcc compiles */
    char *src = read_small_file(file, 256u << 10);
    if (!src) {
        fprintf(stderr, "cugrade-runner: cannot read %s (or it is over 256 KiB)\n", file);
        return 2;
    }
    char rpath[PATH_MAX + 64];
    if (!rubric)
        snprintf(rpath, sizeof rpath, "%.3000s/rubrics/%s.json", h.root, lab);
    json_error_t je;
    json_t *rdoc = json_load_file(rubric ? rubric : rpath, 0, &je);
    if (!rdoc) {
        fprintf(stderr, "cugrade-runner: cannot load rubric %s: %s\n", rubric ? rubric : rpath,
                je.text);
        free(src);
        return 2;
    }
    char seedbuf[40] = "";
    if (!seed) {
        random_seed(seedbuf, sizeof seedbuf);
        seed = seedbuf;
    }
    const char *base = strrchr(file, '/');
    struct grade_job job = {
        .id = 0, .lab = lab, .filename = base ? base + 1 : file, .source = src,
        .source_len = strlen(src), .seed = seed, .rubric = rdoc, .rubric_version = 1,
        .stop_after = stop,
    };
    const char *status = NULL;
    json_t *result = NULL;
    char berr[512];
    if (h.have_gpu && access("/dev/nvidia-uvm", F_OK) != 0 &&
        grade_lab_ensure(&env, lab, berr, sizeof berr) == 0)
        host_ensure_uvm(&h, lab);
    int r = grade_job_run(&env, &job, progress_print, NULL, NULL, &status, &result);
    free(src);
    json_decref(rdoc);
    if (r < 0) {
        fprintf(stderr, "cugrade-runner: grading failed: %s\n", strerror(-r));
        return 1;
    }
    json_t *out = json_pack("{s:s, s:o}", "status", status, "result", result);
    char *txt = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
    if (txt)
        printf("%s\n", txt);
    free(txt);
    json_decref(out);
    return 0;
}

static int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {{"server", required_argument, 0, 's'},
                                         {"token-file", required_argument, 0, 't'},
                                         {"gpu", required_argument, 0, 'g'},
                                         {"cache", required_argument, 0, 'c'},
                                         {"work", required_argument, 0, 'w'},
                                         {"root", required_argument, 0, 'R'},
                                         {"arch", required_argument, 0, 'a'},
                                         {"once", no_argument, 0, 'o'},
                                         {"lazy-build", no_argument, 0, 'L'},
                                         {"name", required_argument, 0, 'n'},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"queue", required_argument, 0, 'q'},
                                         {"keep-jobs", no_argument, 0, 'K'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *server = NULL, *token_file = NULL, *gpu = NULL, *cache = NULL, *work = NULL;
    const char *root = NULL, *arch = NULL, *rname = NULL;
    int once = 0, lazy = 0, c, jobs = serve_default_jobs(), queue = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': server = optarg; break;
        case 't': token_file = optarg; break;
        case 'g': gpu = optarg; break;
        case 'c': cache = optarg; break;
        case 'w': work = optarg; break;
        case 'R': root = optarg; break;
        case 'a': arch = optarg; break;
        case 'o': once = 1; break;
        case 'L': lazy = 1; break;
        case 'j': jobs = atoi(optarg); break;
        case 'q': queue = atoi(optarg); break;
        case 'n': rname = optarg; break;
        case 'K':
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    /* Claim far ahead: a compile error or a rejection is answered as soon
     * as the CPU lane reaches it, whatever the GPU lane holds. On a cluster
     * of many GPU hosts a smaller --queue shares a burst between them. */
    if (queue <= 0)
        queue = 256;
    if (queue > 256)
        queue = 256;
    if (!server || !token_file || jobs < 1 || jobs > queue) {
        usage(stderr);
        return 2;
    }
    char *token = read_small_file(token_file, 4096);
    if (!token) {
        fprintf(stderr, "cugrade-runner: cannot read the token file %s\n", token_file);
        return 2;
    }
    char *t = token;
    while (*t == ' ' || *t == '\n')
        t++;
    t[strcspn(t, " \r\n\t")] = '\0';

    struct host h;
    struct grade_env env;
    struct client cl;
    char name[256];
    if (host_setup(&h, gpu, cache, work, root, arch) < 0)
        return 2;
    host_grade_env(&h, &env);
    env.keep_jobs = keep_jobs_asked(argc, argv);
    host_gpu_hold_start(&h);
    if (rname)
        snprintf(name, sizeof name, "%s", rname);
    else
        snprintf(name, sizeof name, "%s-gpu%s", h.hostname, h.gpu_index);
    if (client_global_init() < 0 || client_init(&cl, server, t, name, h.gpu_name) < 0) {
        free(token);
        return 1;
    }
    free(token);
    fprintf(stderr, "cugrade-runner: %s: GPU %s (%s), root %s, cache %s\n", name, h.gpu_name,
            h.arch, h.root, h.cache);
    if (!h.have_gpu)
        fprintf(stderr, "cugrade-runner: warning: no GPU found with nvidia-smi; jobs will "
                        "fail as system_error after compiling\n");
    /* Before the labs are built: the host's other runners hold back for
     * this one from now on (peers.h). */
    char ledger[PATH_MAX]; /* which GPU this runner serves, as its peers tell */
    lock_admit_path(&env, ledger, sizeof ledger);
    int pr = peers_join(server, ledger);
    if (pr < 0)
        fprintf(stderr, "cugrade-runner: no peers directory (%s): this runner does not share "
                        "a burst with the host's others\n", strerror(-pr));
    if (!lazy)
        host_build_labs(&h, &env, 1);

    serve_run(&cl, &h, &env, once, jobs, queue);
    peers_leave();
    client_free(&cl);
    return 0;
}

/* `cugrade-runner prepare`: build every lab and measure the device record
 * and the baselines, then exit (a deploy step, or before several runners
 * share a GPU so that they do not all measure the same baselines). */
static int cmd_prepare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"gpu", required_argument, 0, 'g'},  {"cache", required_argument, 0, 'c'},
        {"work", required_argument, 0, 'w'}, {"root", required_argument, 0, 'R'},
        {"arch", required_argument, 0, 'a'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *gpu = NULL, *cache = NULL, *work = NULL, *root = NULL, *arch = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'g': gpu = optarg; break;
        case 'c': cache = optarg; break;
        case 'w': work = optarg; break;
        case 'R': root = optarg; break;
        case 'a': arch = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    struct host h;
    struct grade_env env;
    if (host_setup(&h, gpu, cache, work, root, arch) < 0)
        return 2;
    host_grade_env(&h, &env);
    host_gpu_hold_start(&h);
    fprintf(stderr, "cugrade-runner: preparing labs for GPU %s (%s) in %s\n", h.gpu_name, h.arch,
            h.cache);
    host_build_labs(&h, &env, 0);
    return 0;
}

/* The runner's own mount namespace, entered before any thread exists: the
 * work directories' tmpfs mounts (workdir.c) then belong to the runner's
 * processes and go with the last of them, so a runner killed mid-job (no
 * cleanup of its own) leaves none on the host (tests/runner/killed.t).
 * Slave propagation: the host's later mounts still reach us, ours never
 * reach the host. Without the privilege (not root), or with --keep-jobs
 * anywhere on the command line, the mounts stay the host's, as before. */
static void mount_namespace_own(int argc, char **argv)
{
    /* --keep-jobs keeps each job's directory for someone to look into
     * after the runner: its work tmpfs must then be the host's. */
    if (geteuid() != 0 || keep_jobs_asked(argc, argv))
        return;
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
        fprintf(stderr,
                "cugrade-runner: no mount namespace of its own (%s): a killed runner may leave "
                "work mounts behind\n",
                strerror(errno));
}

int main(int argc, char **argv)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "--help-env") == 0) {
        runner_config_print(stdout, argc >= 3 && strcmp(argv[2], "markdown") == 0);
        return 0;
    }
    /* Every switch parsed before anything runs: a bad value refuses the
     * start with the switch, its range and the value (config.h). */
    char err[512];
    if (runner_config_reload(err, sizeof err) < 0) {
        fprintf(stderr, "cugrade-runner: %s\n(cugrade-runner --help-env lists the switches)\n", err);
        return 2;
    }
    /* A child gone (a judge killed for memory, an owner killed at its
     * limit) must not take the runner with it: every write to a child's
     * pipe or socket handles EPIPE (tests/runner/judge_gone.t). For every
     * subcommand, as the service always had it. */
    signal(SIGPIPE, SIG_IGN);
    /* the holder and the probe mount nothing */
    if (!(argc == 2 && (strcmp(argv[1], "gpu-hold") == 0 || strcmp(argv[1], "gpu-probe") == 0)))
        mount_namespace_own(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "grade") == 0)
        return cmd_grade(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "prepare") == 0)
        return cmd_prepare(argc - 1, argv + 1);
    if (argc == 2 && strcmp(argv[1], "gpu-hold") == 0)
        return host_gpu_hold_main();
    if (argc == 2 && strcmp(argv[1], "gpu-probe") == 0)
        return health_probe_main();
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    return cmd_serve(argc, argv);
}
