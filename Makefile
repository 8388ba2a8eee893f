# cugrade — top-level build. Two commands matter (see README.md):
#   make run    install what is missing, build, start server (+ runner when a GPU is present)
#   make test   install what the tests need, build, run every test that needs no GPU
#
# Layout: common/ is linked into both binaries; server/*.c (but main.c) form
# libserver.a, runner/*.c and runner/*/*.c (its rooms, runner/README.md; but
# main.c and launch.c, cugrade-launch) form librunner.a. Unit tests in
# tests/unit/{server,runner,common}_*.c link the matching library.

BUILD   ?= build
NPROC   ?= $(shell nproc 2>/dev/null || echo 1)
CC      ?= cc
NVCC    ?= /usr/local/cuda/bin/nvcc

CFLAGS_BASE = -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter \
              -Wshadow -Wstrict-prototypes -Wformat=2 -g -I. -Icommon
HARDEN      = -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
LDHARDEN    = -pie -Wl,-z,relro -Wl,-z,now

ifeq ($(SAN),1)
  OPT      = -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDSAN    = -fsanitize=address,undefined
  HARDEN   = -fstack-protector-strong -fPIE
else ifeq ($(FUZZ),1)
  # libFuzzer targets (tests/fuzz/): Debian's clang; the library code is
  # instrumented for coverage, libFuzzer's main is linked into the targets.
  CC       = clang
  # clang, unlike gcc, flags vprintf-style helpers that pass their va_list
  # on (-Wformat-nonliteral) and libseccomp's SCMP_A0() macro, which leaves
  # datum_b to its zero (-Wmissing-field-initializers).
  OPT      = -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
             -fno-sanitize-recover=undefined -Wno-format-nonliteral -Wno-missing-field-initializers
  LDSAN    = -fsanitize=address,undefined
  HARDEN   = -fstack-protector-strong -fPIE
else
  OPT      = -O2
  LDSAN    =
endif

CFLAGS  += $(CFLAGS_BASE) $(HARDEN) $(OPT)
LDFLAGS += $(LDHARDEN) $(LDSAN)

SERVER_LIBS = -lcmark-gfm-extensions -lcmark-gfm -luv -lhttp_parser -ljansson -lsqlite3 -lcrypto -lm -lpthread
RUNNER_LIBS = -lcurl -ljansson -lseccomp -lcrypto -lm -lpthread

COMMON_SRC  = $(wildcard common/*.c)
SERVER_SRC  = $(filter-out server/main.c,$(wildcard server/*.c))
RUNNER_SRC  = $(filter-out runner/main.c runner/launch.c,$(wildcard runner/*.c runner/*/*.c))

COMMON_OBJ  = $(COMMON_SRC:%.c=$(BUILD)/%.o)
SERVER_OBJ  = $(SERVER_SRC:%.c=$(BUILD)/%.o)
RUNNER_OBJ  = $(RUNNER_SRC:%.c=$(BUILD)/%.o)

UNIT_SERVER = $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(wildcard tests/unit/server_*.c))
UNIT_RUNNER = $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(wildcard tests/unit/runner_*.c))
UNIT_COMMON = $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(wildcard tests/unit/common_*.c))
TOOLS       = $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(wildcard tests/tools/*.c))

BINS = $(BUILD)/cugrade-server $(BUILD)/cugrade-runner $(BUILD)/cugrade-launch

.PHONY: all deps test-deps run test asan fuzz fuzz-build fuzz-bins test-gpu dist bench clean format format-check format-all format-tool
all: $(BINS) $(UNIT_SERVER) $(UNIT_RUNNER) $(UNIT_COMMON) $(TOOLS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# page.c embeds the stylesheet and script (.incbin): rebuild it when they change.
$(BUILD)/server/page.o: server/static/style.css server/static/app.js
# bundle.c embeds the student client the same way.
$(BUILD)/server/bundle.o: client/cugrade.py

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(BUILD)/libserver.a: $(SERVER_OBJ)
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(BUILD)/librunner.a: $(RUNNER_OBJ)
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^

$(BUILD)/cugrade-server: $(BUILD)/server/main.o $(BUILD)/libserver.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) $^ $(SERVER_LIBS) -o $@
$(BUILD)/cugrade-runner: $(BUILD)/runner/main.o $(BUILD)/librunner.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) $^ $(RUNNER_LIBS) -o $@
# The sanitizer runs' pre-started target (runner/launch.c): libc and dlopen
# only, and never built with ASan/UBSan -- it becomes the student's process
# inside the sandbox, where LeakSanitizer cannot work (seccomp denies ptrace)
# and its runtime would intercept the student's and the harness's malloc.
LAUNCH_CFLAGS = $(CFLAGS_BASE) -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -O2
$(BUILD)/runner/launch.o: runner/launch.c
	@mkdir -p $(dir $@)
	$(CC) $(LAUNCH_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/cugrade-launch: $(BUILD)/runner/launch.o
	$(CC) $(LDHARDEN) $^ -ldl -o $@

$(BUILD)/tests/unit/server_%: $(BUILD)/tests/unit/server_%.o $(BUILD)/libserver.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) $^ $(SERVER_LIBS) -o $@
$(BUILD)/tests/unit/runner_%: $(BUILD)/tests/unit/runner_%.o $(BUILD)/librunner.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) $^ $(RUNNER_LIBS) -o $@
$(BUILD)/tests/unit/common_%: $(BUILD)/tests/unit/common_%.o $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) $^ -ljansson -lcrypto -lm -o $@
$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o $(BUILD)/librunner.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) $^ $(RUNNER_LIBS) -o $@
$(BUILD)/tests/fuzz/%: $(BUILD)/tests/fuzz/%.o $(BUILD)/libserver.a $(BUILD)/librunner.a $(BUILD)/libcommon.a
	$(CC) $(LDFLAGS) -fsanitize=fuzzer $^ $(SERVER_LIBS) $(RUNNER_LIBS) -o $@

deps:
	@sh deploy/install-deps.sh run
test-deps:
	@sh deploy/install-deps.sh test

run: deps
	@$(MAKE) --no-print-directory all
	@sh deploy/run.sh

# The build runs on every core (the binaries and the fuzzers side by side),
# then tests/run.sh runs the suites side by side (JOBS, see its header).
test: test-deps
	@$(MAKE) --no-print-directory -j$(NPROC) all fuzz-build
	@sh tests/run.sh $(BUILD)

# The same suite against an ASan+UBSan build. Every sanitizer report of any
# process goes to build-asan/sanitizer/ and fails the suite that caused it
# (tests/run.sh), whether or not the suite reads that process's stderr.
asan: test-deps
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-asan SAN=1 all
	@$(MAKE) --no-print-directory -j$(NPROC) fuzz-build
	@rm -rf build-asan/sanitizer; mkdir -p build-asan/sanitizer
	@SANITIZER_LOG_DIR=$(CURDIR)/build-asan/sanitizer \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$(CURDIR)/build-asan/sanitizer/report \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build-asan/sanitizer/report \
	  sh tests/run.sh build-asan

# Fuzzers: one libFuzzer target per parser (tests/fuzz/*.c), built with
# clang and ASan+UBSan in $(FUZZ_BUILD)/ from the same sources as the
# binaries. `make fuzz` runs each for FUZZ_SECONDS and prints a table;
# `make test` runs a short smoke run of each (tests/fuzz/smoke.t).
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS  = $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c))
fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) FUZZ=1 fuzz-bins
fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/%)
fuzz: test-deps
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh $(FUZZ_BUILD)

# On a GPU host (the device tool): the real pipeline on a real GPU.
test-gpu:
	@sh tests/gpu/run.sh $(BUILD)

# Binaries, their shared libraries (ldd) and Debian's bwrap in one folder,
# to carry to a GPU host that has no libuv/libcurl development files.
dist: all
	@sh deploy/dist.sh $(BUILD) dist

bench:
	@sh tests/bench/run.sh $(BUILD)

# clang-format (.clang-format) on the C and CUDA lines changed since
# FORMAT_BASE, committed or not: the tree converges file by file as it is
# worked on, with no whole-tree reformat that every open branch would
# conflict with. format-check fails (and prints the diff) where those lines
# are not formatted: CI runs it with FORMAT_BASE at the commit it builds
# on. format-all formats every file, for the day the tree is reformatted
# once. clang-format comes from Debian (make test-deps).
FORMAT_BASE ?= main
FORMAT_EXT = c,h,cu,cuh
FORMAT_ALL = $(wildcard common/*.[ch] server/*.[ch] runner/*.[ch] runner/*/*.[ch] \
             labs/common/*.cu labs/common/*.cuh labs/common/*.h labs/*/harness.cu)
format: format-tool
	@git clang-format -f --extensions $(FORMAT_EXT) $(FORMAT_BASE)
format-check: format-tool
	@out=$$(git clang-format --diff --extensions $(FORMAT_EXT) $(FORMAT_BASE)) || exit 2; \
	case "$$out" in \
	""|"no modified files to format"|"clang-format did not modify any files") \
	    echo "format-check: the C and CUDA changed since $(FORMAT_BASE) are formatted";; \
	*) printf '%s\n' "$$out"; echo "format-check: not formatted (run: make format)" >&2; exit 1;; \
	esac
format-all: format-tool
	clang-format -i $(FORMAT_ALL)
format-tool:
	@command -v git-clang-format >/dev/null 2>&1 || \
	    { echo "make format: clang-format is missing (make test-deps installs it)" >&2; exit 2; }

clean:
	rm -rf build build-asan build-fuzz dist

# page.c embeds the icon too (see the stylesheet's rule above).
$(BUILD)/server/page.o: server/static/favicon.svg

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
