/*
 * cugrade-launch - the sanitizer runs' pre-started target (trusted; runs
 * inside the sandbox, under compute-sanitizer).
 *
 *   compute-sanitizer --tool T ... /lab/launch /work/prog.so check --seed S ...
 *
 * compute-sanitizer spends most of its time before the program does any
 * work: its injection and the CUDA context under the tool (~0.5 s for
 * racecheck, ~0.2 s for memcheck on an H200). The runner starts the
 * sanitizers while nvcc still compiles the student's file, with this
 * program as their target: it brings CUDA up through the driver (the
 * primary context, which the harness's runtime then uses), and waits on
 * fd 4, a socket to the runner:
 *
 *   runner -> 'g'     the program is linked: dlopen the shared object named
 *                     by argv[1] (the harness and the student's object,
 *                     linked with -shared), answer 'l', close fd 4 and run
 *                     its main() with argv[1..] -- the harness as if exec'd;
 *   runner -> EOF     no program (a compile error, a rejection): exit 0.
 *   launch -> 'r'     CUDA is up (or there is no GPU here); sent once.
 *   launch -> 'e'     the shared object could not be loaded (ours): the
 *                     message follows on stderr, exit LAUNCH_EXIT_LOAD.
 *
 * The runner starts the check run only after every launcher has answered
 * 'l' or 'e': the object the sanitizer sees is the one the runner linked,
 * before any student code ran. fd 4 is closed before the harness starts,
 * so student code never holds it. Nothing here takes a verdict: the exit
 * status is the harness's (or compute-sanitizer's).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAUNCH_CONTROL_FD 4
#define LAUNCH_EXIT_LOAD 5

/* The driver API, looked up at run time: this program links nothing of
 * CUDA, so that a host without a GPU (CI's fake labs) runs it too. */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_retain_fn)(void **, int);
typedef int (*cu_set_current_fn)(void *);

static void cuda_up(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return; /* no driver: the harness will say so itself */
    cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
    cu_device_get_fn get = (cu_device_get_fn)dlsym(h, "cuDeviceGet");
    cu_retain_fn retain = (cu_retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    cu_set_current_fn set = (cu_set_current_fn)dlsym(h, "cuCtxSetCurrent");
    int dev = 0;
    void *ctx = NULL;
    /* Failures are the harness's to report, with its own words. */
    if (init && get && retain && set && init(0) == 0 && get(&dev, 0) == 0 &&
        retain(&ctx, dev) == 0)
        set(ctx);
}

static void say(char c)
{
    ssize_t w;
    do
        w = write(LAUNCH_CONTROL_FD, &c, 1);
    while (w < 0 && errno == EINTR);
}

int main(int argc, char **argv)
{
    char c = 0;
    ssize_t r;

    if (argc < 2 || argv[1][0] != '/') {
        fprintf(stderr, "cugrade-launch: usage: cugrade-launch /ABS/PATH/prog.so ARGS... "
                        "(fd 4: the runner's control socket)\n");
        return 2;
    }
    cuda_up();
    say('r');
    do
        r = read(LAUNCH_CONTROL_FD, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1 || c != 'g')
        return 0; /* nothing to run: the runner went on without us */

    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*entry)(int, char **) = h ? (int (*)(int, char **))dlsym(h, "main") : NULL;
    if (!entry) {
        const char *e = dlerror();
        fprintf(stderr, "cugrade-launch: cannot load %s: %s\n", argv[1], e ? e : "no main()");
        say('e');
        return LAUNCH_EXIT_LOAD;
    }
    say('l');
    close(LAUNCH_CONTROL_FD);
    /* The harness as if exec'd: argv[0] is the program, what follows its
     * arguments. Its exit() or return ends the process as before. */
    return entry(argc - 1, argv + 1);
}
