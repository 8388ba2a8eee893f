// A CPU-only stand-in for a lab's trusted harness (labs/common/harness_common.cu),
// speaking the same channel protocol (docs/formats.md) so that the runner's
// check -> judge -> time -> baselines -> score path is tested in CI without
// a GPU. Interface: extern "C" void fill(float* out, int n); out[i] = 2*i.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

extern "C" void fill(float* out, int n);

static void put(const char* s, size_t n)
{
    while (n) {
        ssize_t w = write(3, s, n);
        if (w <= 0)
            exit(4);
        s += w;
        n -= (size_t)w;
    }
}

static void rec(const char* json) { put(json, strlen(json)); put("\n", 1); }

static int case_n(const char* name) { return strcmp(name, "big") == 0 ? 100000 : strcmp(name, "small") == 0 ? 1000 : -1; }

static void run_case(const char* name, const char* label)
{
    int n = case_n(name);
    if (n < 0) { fprintf(stderr, "harness: unknown case %s\n", name); exit(2); }
    float* out = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) out[i] = NAN;
    fill(out, n);
    char h[256];
    snprintf(h, sizeof h, "{\"type\":\"case\",\"name\":\"%s\",\"status\":\"ok\",\"dtype\":\"f32\",\"count\":%d,\"bytes\":%zu,\"inputs_modified\":false}", label, n, n * sizeof(float));
    rec(h);
    put((const char*)out, n * sizeof(float));
    free(out);
}

static double now_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Test hooks ride on the seed: a prefix, then decimal digits (seconds).
static int seed_hook(const char* seed, const char* prefix, size_t min_len)
{
    return seed && strncmp(seed, prefix, strlen(prefix)) == 0 && strlen(seed) >= min_len;
}

// The two decimal digits of seed at position at, as seconds.
static unsigned seed_digits(const char* seed, size_t at)
{
    return (unsigned)((seed[at] - '0') * 10 + (seed[at + 1] - '0'));
}

// Burn seconds of this process's CPU time (not wall time: on a busy host
// it takes longer on the wall clock, as a correct program's work does).
static void burn_cpu(unsigned seconds)
{
    struct timespec t;
    do
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while ((unsigned)t.tv_sec < seconds);
}

int main(int argc, char** argv)
{
    const char *mode = argc > 1 ? argv[1] : "", *seed = NULL, *cases = NULL, *one = NULL;
    int gate = -1;
    for (int i = 2; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--seed")) seed = argv[++i];
        else if (!strcmp(argv[i], "--seed-fd")) {  // the runner's way: a pipe, read and closed
            static char buf[80];
            int fd = atoi(argv[++i]);
            ssize_t n = 0, r;
            while (n < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
                n += r;
            buf[n] = 0;
            close(fd);
            seed = buf;
        }
        else if (!strcmp(argv[i], "--cases")) cases = argv[++i];
        else if (!strcmp(argv[i], "--case")) one = argv[++i];
        else if (!strcmp(argv[i], "--max-ms")) ++i;
        else if (!strcmp(argv[i], "--gate")) gate = atoi(argv[++i]);
    }
    // Like the real harness: a failure of its own (before any student code
    // ran) is claimed with a harness_error record, then exit 2.
    if (strcmp(mode, "device") && (!seed || strlen(seed) > 32)) {
        rec("{\"type\":\"harness_error\",\"message\":\"--seed: 1 to 32 hex digits\"}");
        fprintf(stderr, "harness: --seed: 1 to 32 hex digits\n");
        return 2;
    }
    // Test hook: a seed starting "bad0" plays a harness that cannot set up
    // (the real one: no GPU, an allocation refused before the student's call).
    if (seed && strncmp(seed, "bad0", 4) == 0) {
        rec("{\"type\":\"harness_error\",\"message\":\"case small: could not allocate its buffers\"}");
        fprintf(stderr, "harness: case small: could not allocate its buffers\n");
        return 2;
    }
    if (seed) { printf("harness seed: %s\n", seed); fflush(stdout); }
    rec("{\"type\":\"device\",\"name\":\"Fake GPU\",\"cc\":\"9.0\",\"sms\":1,\"copy_gbs\":100.0,\"peak_fp32_gflops\":1000}");
    if (!strcmp(mode, "check")) {
        char* list = strdup(cases);
        // Test hook: after "de1a" and the set-up's two digits (below), two
        // more make the check run take that many seconds before its cases
        // (tests/runner/time_prestart.t).
        if (seed_hook(seed, "de1a", 8))
            sleep(seed_digits(seed, 6));
        // "c0de" and two digits: the check run's work takes that many
        // seconds of CPU before its cases (tests/runner/cpu_load.t).
        if (seed_hook(seed, "c0de", 6))
            burn_cpu(seed_digits(seed, 4));
        for (char* t = strtok(list, ","); t; t = strtok(NULL, ","))
            run_case(t, t);
    } else if (!strcmp(mode, "time")) {
        int n = case_n(one);
        float* out = (float*)malloc(n * sizeof(float));
        // Test hook: a seed starting "de1a" and two decimal digits plays a
        // set-up (CUDA's context, the inputs) that takes that many seconds
        // before the gate: a GPU time-sliced between many jobs' contexts
        // (tests/runner/timing_load.t).
        if (seed_hook(seed, "de1a", 6))
            sleep(seed_digits(seed, 4));
        // "de1b" and two digits: the same, on the job's first timing run
        // only (a marker in its work directory): a start-up slowed by a
        // passing load, which a second run does not meet.
        if (seed_hook(seed, "de1b", 6)) {
            FILE* once = fopen("/work/.fake-slow-once", "wx");
            if (once) {
                fclose(once);
                sleep(seed_digits(seed, 4));
            }
        }
        // "de1c" (below): a second of set-up first, so that the run is
        // seen before its gate too (tests/runner/time_hold_nice.t).
        if (seed_hook(seed, "de1c", 6))
            sleep(1);
        // The timing gate, as the real harness's hc_gate_wait: set up, say
        // 'r', and time only after the runner's 'g' (it holds the GPU then).
        if (gate >= 0) {
            char c = 'r';
            if (write(gate, &c, 1) != 1 || read(gate, &c, 1) != 1 || c != 'g') {
                rec("{\"type\":\"harness_error\",\"message\":\"the runner's timing gate closed before the go\"}");
                return 2;
            }
            close(gate);
            printf("harness: gate passed\n");
            fflush(stdout);
        }
        // "de1c" and two digits: that many seconds after the gate, under
        // the exclusive lock (tests/runner/time_judge.t: a hold long enough
        // to be seen from outside).
        if (seed_hook(seed, "de1c", 6))
            sleep(seed_digits(seed, 4));
        char buf[8192];
        int o = snprintf(buf, sizeof buf, "{\"type\":\"timing\",\"name\":\"%s\",\"samples_ms\":[", one);
        for (int s = 0; s < 30; s++) {
            double t0 = now_ms();
            for (int r = 0; r < 20; r++) fill(out, n);
            o += snprintf(buf + o, sizeof buf - o, "%s%.6f", s ? "," : "", (now_ms() - t0) / 20);
        }
        // The hold record: the steps after the gate, as an owner reports
        // them (the runner keeps names of [a-z_] and seconds >= 0 only:
        // tests/runner/time_hold_nice.t).
        rec("{\"type\":\"hold\",\"samples\":0.25,\"load\":0.5,\"Bad name\":1,\"late\":-1,"
            "\"text\":\"x\"}");
        snprintf(buf + o, sizeof buf - o, "],\"seed2\":\"0000000000000001\"}");
        rec(buf);
        char rc[64];
        snprintf(rc, sizeof rc, "%s@recheck", one);
        run_case(one, rc);
        free(out);
    } else if (strcmp(mode, "device")) {
        return 2;
    }
    rec("{\"type\":\"done\"}");
    return 0;
}
