# bufsel — one Makefile for the library, the launcher, the tests and the benchmarks.
#   make            build/libbufsel.so and build/bufsel
#   make test       every unit test and every native-vs-bufsel integration test
#   make asan       the same build and tests under ASan+UBSan (build-asan/)
#   make demo       install Debian deps if missing, build, run a liburing program under bufsel
#   make install PREFIX=/usr/local

B        ?= build
PREFIX   ?= /usr/local
CC       ?= cc
WERROR   ?= -Werror
SAN      ?=
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra $(WERROR) -MMD -MP -I. $(SAN)
LIBCFLAGS = $(CFLAGS) -fPIC -fvisibility=hidden -fno-stack-protector
LDLIBS_LIB = -Wl,-z,defs -Wl,--version-script=preload/bufsel.map -ldl -lpthread

LIB_SRCS  := $(wildcard preload/*.c pool/*.c conf/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/obj/%.o)
LAUNCH_SRCS := $(wildcard launcher/*.c conf/*.c)
LAUNCH_OBJS := $(patsubst %.c,$(B)/obj-launcher/%.o,$(LAUNCH_SRCS))

# Integration programs: ordinary liburing programs, unchanged between the native
# and the bufsel run. *_static.c link liburing.a into the program (inline syscalls
# in the executable's own text); everything else uses Debian's liburing.so.2.
PROG_SRCS   := $(wildcard test/prog/*.c)
PROG_BINS   := $(PROG_SRCS:test/prog/%.c=$(B)/test/prog/%)
UNIT_SRCS   := $(wildcard test/unit/*.c)
UNIT_BINS   := $(UNIT_SRCS:test/unit/%.c=$(B)/test/unit/%)
# Unit tests link the room they test; none of them links preload/ as a whole,
# only its pure parts (no system call in them): the shadow layout and the copy paths.
UNIT_LIBOBJS := $(filter-out $(B)/obj/preload/%,$(LIB_OBJS)) \
	$(addprefix $(B)/obj/preload/,shadow.o submit.o complete.o)

.PHONY: all test unit integration asan demo install clean bench bench-quick fuzz-conf
all: $(B)/libbufsel.so $(B)/bufsel

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) -c $< -o $@

$(B)/obj-launcher/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libbufsel.so: $(LIB_OBJS) preload/bufsel.map
	$(CC) -shared $(SAN) -o $@ $(LIB_OBJS) $(LDLIBS_LIB)

$(B)/bufsel: $(LAUNCH_OBJS)
	$(CC) $(SAN) -o $@ $(LAUNCH_OBJS)

$(B)/test/prog/%_static: test/prog/%_static.c test/prog/cqe_print.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -Wl,-Bstatic -luring -Wl,-Bdynamic -lpthread

# The bs_ programs (provided buffers) share bs_bufs.h as well.
$(B)/test/prog/bs_%: test/prog/bs_%.c test/prog/cqe_print.h test/prog/bs_bufs.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

# The pol_ programs (configured policies) use the same helpers.
$(B)/test/prog/pol_%: test/prog/pol_%.c test/prog/cqe_print.h test/prog/bs_bufs.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

$(B)/test/prog/%: test/prog/%.c test/prog/cqe_print.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

# Launcher objects a unit test needs besides pool/ and conf/; launcher/main.c stays out.
UNIT_LAUNCH_launcher_elf := $(B)/obj-launcher/launcher/elf.o
$(B)/test/unit/launcher_elf: $(UNIT_LAUNCH_launcher_elf)
UNIT_LAUNCH_launcher_report := $(B)/obj-launcher/launcher/report.o $(B)/obj-launcher/launcher/json.o
$(B)/test/unit/launcher_report: $(UNIT_LAUNCH_launcher_report)

$(B)/test/unit/%: test/unit/%.c $(UNIT_LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(UNIT_LIBOBJS) $(UNIT_LAUNCH_$*) -lcriterion -lpthread

# The native-vs-bufsel runner: runs every program in its table three ways.
$(B)/test/integration/compare: test/integration/compare.c test/integration/harness.c test/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c -lcriterion -lpthread

# The kernel's io_uring tracepoints show that bufsel kept provided buffers from it.
$(B)/test/integration/emulated: test/integration/emulated.c test/integration/harness.c test/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c -lcriterion -lpthread

# Configured policies (cap, max_len, -ENOBUFS injection), statistics and
# configuration errors, checked against exact expected output.
$(B)/test/integration/policy: test/integration/policy.c test/integration/harness.c test/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c -lcriterion -lpthread

# bufsel report on a statistics file bufsel wrote: the recommendation, the
# plot (gnuplot), and one line for a bad file.
$(B)/test/integration/report: test/integration/report.c test/integration/harness.c test/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c -lcriterion -lpthread

INTEGRATION_BINS := $(B)/test/integration/compare $(B)/test/integration/emulated \
	$(B)/test/integration/policy $(B)/test/integration/report

test: all $(PROG_BINS) $(UNIT_BINS) $(INTEGRATION_BINS)
	@sh test/run-all.sh $(B)

integration: all $(PROG_BINS) $(INTEGRATION_BINS)
	BUFSEL_BUILD=$(B) $(B)/test/integration/compare && BUFSEL_BUILD=$(B) $(B)/test/integration/emulated && \
		BUFSEL_BUILD=$(B) $(B)/test/integration/policy && BUFSEL_BUILD=$(B) $(B)/test/integration/report

# The same tests with the library, the programs and the tests built with
# ASan+UBSan; a sanitizer report makes the reporting process fail its test.
asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	$(MAKE) B=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" test

demo:
	@sh test/demo.sh

# Static analysis of the sources (what make builds, with its -std=gnu11 -I.):
# cppcheck with test/cppcheck.supp, clang-tidy with .clang-tidy, one file per
# job.  Any finding fails.  Needs cppcheck and clang-tidy (Debian 12).
.PHONY: lint
LINT_SRCS := $(sort $(wildcard preload/*.c pool/*.c conf/*.c launcher/*.c))
LINT_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
lint:
	cppcheck --std=c11 -I. --library=posix --library=gnu --enable=warning,style,performance,portability \
		--inconclusive --inline-suppr --suppressions-list=test/cppcheck.supp --error-exitcode=1 -q \
		--template='{file}:{line}:{column}: {severity}: {message} [{id}]' preload pool conf launcher
	@echo "clang-tidy on $(words $(LINT_SRCS)) files, $(LINT_JOBS) at a time"
	@printf '%s\n' $(LINT_SRCS) | xargs -P $(LINT_JOBS) -I{} sh -c \
		'out=$$(clang-tidy --quiet "$$1" -- -std=gnu11 -I. 2>&1) || \
		{ printf "%s\n" "$$out" | grep -v "warnings generated"; exit 1; }' sh {}
	@echo "lint: cppcheck and clang-tidy found nothing"

# memcheck on bufsel (test/valgrind/run.sh): the integration programs with the
# library preloaded, compared with their native runs; the launcher; the unit
# tests.  Under valgrind bufsel has no seccomp trap, so the programs' liburing
# calls reach it through uring_via_libc.so, liburing over libc syscall().
.PHONY: valgrind
$(B)/test/valgrind/uring_via_libc.so: test/valgrind/uring_via_libc.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ $<

valgrind: all $(PROG_BINS) $(UNIT_BINS) $(B)/test/valgrind/uring_via_libc.so
	@sh test/valgrind/run.sh $(B)

# libFuzzer on conf/: arbitrary bytes as a configuration file and as BUFSEL_*
# variables (test/fuzz/conf_fuzz.c).  Needs clang with libFuzzer (Debian 12:
# clang and libclang-rt-14-dev).  New inputs go to $(B)/fuzz/corpus-conf; the
# seeds in test/fuzz/corpus-conf are only read; a crash is written to $(B)/fuzz/.
#   make fuzz-conf SECONDS=180
FUZZ_CC    ?= clang
SECONDS    ?= 60
FUZZ_FLAGS  = -std=gnu11 -g -O1 -I. -Wall -Wextra $(WERROR) -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
CONF_SRCS  := $(wildcard conf/*.c)

$(B)/fuzz/conf_fuzz: test/fuzz/conf_fuzz.c $(CONF_SRCS) $(wildcard conf/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ test/fuzz/conf_fuzz.c $(CONF_SRCS)

fuzz-conf: $(B)/fuzz/conf_fuzz
	@mkdir -p $(B)/fuzz/corpus-conf
	$(B)/fuzz/conf_fuzz -max_total_time=$(SECONDS) -timeout=10 -max_len=8192 \
		-dict=test/fuzz/conf.dict -artifact_prefix=$(B)/fuzz/ \
		$(B)/fuzz/corpus-conf test/fuzz/corpus-conf

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(B)/libbufsel.so $(DESTDIR)$(PREFIX)/lib/libbufsel.so
	install -m 0755 $(B)/bufsel $(DESTDIR)$(PREFIX)/bin/bufsel
	install -m 0644 docs/bufsel.1 $(DESTDIR)$(PREFIX)/share/man/man1/bufsel.1

clean:
	rm -rf build build-asan

-include $(shell find $(B) build-asan -name '*.d' 2>/dev/null)
