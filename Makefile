# bufsel — one Makefile for the library, the launcher, the tests and the benchmarks.
#   make            build/libbufsel.so and build/bufsel
#   make test       every unit test and every native-vs-bufsel integration test
#   make asan       the same build and tests under ASan+UBSan (build-asan/)
#   make demo       install Debian deps if missing, build, run a liburing program under bufsel
#   make bench      the A/B benchmark suite (make bench-quick: a shorter one)
#   make liburing-suite  liburing's own test suite natively and under bufsel in each mode
#   make liburing-examples  liburing's proxy and UDP echo examples, every byte, under bufsel
#   make vm-test    the programs native and under bufsel on Debian 11's Linux 5.10, in qemu
#   make deb        build/bufsel_<version>_amd64.deb, with Debian's tools
#   make deb-test   build it, install it here, check it, remove it (root)
#   make readme-check  run every command the README shows, compare its output (root)
#   make install PREFIX=/usr/local [LIBDIR=...] [DESTDIR=...]

B        ?= build
PREFIX   ?= /usr/local
# Where make install puts libbufsel.so; the launcher looks there.
LIBDIR   ?= $(PREFIX)/lib
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
DOCDIR   ?= $(PREFIX)/share/doc/bufsel
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
VERSION  := $(shell sed -n 's/^\#define BUFSEL_VERSION "\(.*\)"$$/\1/p' version.h)
CC       ?= cc
WERROR   ?= -Werror
SAN      ?=
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra $(WERROR) -MMD -MP -I. $(SAN)
LIBCFLAGS = $(CFLAGS) -fPIC -fvisibility=hidden -fno-stack-protector
LDLIBS_LIB = -Wl,-z,defs -Wl,--version-script=preload/bufsel.map -ldl -lpthread

LIB_SRCS  := $(wildcard preload/*.c preload/*/*.c pool/*.c conf/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/obj/%.o)
LAUNCH_SRCS := $(wildcard launcher/*.c conf/*.c)
LAUNCH_OBJS := $(patsubst %.c,$(B)/obj-launcher/%.o,$(LAUNCH_SRCS))

# Integration programs: ordinary liburing programs, unchanged between the native
# and the bufsel run. *_static.c link liburing.a into the program (inline syscalls
# in the executable's own text); everything else uses Debian's liburing.so.2.
PROG_SRCS   := $(wildcard test/prog/*.c)
PROG_BINS   := $(PROG_SRCS:test/prog/%.c=$(B)/test/prog/%)
# Libraries the programs preload into their children (test/prog/lib).
PROG_BINS   += $(B)/test/prog/lib/occupy_trampoline.so
UNIT_SRCS   := $(wildcard test/unit/*.c)
UNIT_BINS   := $(UNIT_SRCS:test/unit/%.c=$(B)/test/unit/%)
# Unit tests link the room they test; none of them links preload/ as a whole,
# only its pure parts (no system call in them): the shadow layout, the copy
# paths, the heap they allocate from and the instruction decoder site
# patching relies on.
UNIT_LIBOBJS := $(filter-out $(B)/obj/preload/%,$(LIB_OBJS)) \
	$(addprefix $(B)/obj/preload/,shadow/shadow.o shadow/submit.o shadow/complete.o shadow/timeouts.o heap.o \
		arena.o spin.o intercept/insn.o shadow/compat.o select/opdef.o)

.PHONY: all test unit integration asan demo install clean bench bench-quick fuzz-conf liburing-suite \
	liburing-examples man deb deb-test readme-check FORCE
all: $(B)/libbufsel.so $(B)/bufsel

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(LIBCFLAGS) -c $< -o $@

$(B)/obj-launcher/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DBUFSEL_LIBDIR='"$(LIBDIR)"' -c $< -o $@

# The launcher has LIBDIR compiled in: a new one rebuilds what names it.
$(B)/obj-launcher/launcher/library.o $(B)/obj-launcher/launcher/main.o: $(B)/libdir
$(B)/libdir: FORCE
	@mkdir -p $(B)
	@echo '$(LIBDIR)' | cmp -s - $@ || echo '$(LIBDIR)' > $@
FORCE:

$(B)/libbufsel.so: $(LIB_OBJS) preload/bufsel.map
	$(CC) -shared $(SAN) $(LDFLAGS) -o $@ $(LIB_OBJS) $(LDLIBS_LIB)

$(B)/bufsel: $(LAUNCH_OBJS)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $(LAUNCH_OBJS)

# The man pages carry the version in their footer.
MAN_PAGES := $(B)/man/bufsel.1 $(B)/man/bufsel.conf.5
$(B)/man/%: docs/% version.h
	@mkdir -p $(dir $@)
	sed '1s/"bufsel"/"bufsel $(VERSION)"/' $< > $@
man: $(MAN_PAGES)

$(B)/test/prog/%_static: test/prog/%_static.c test/prog/cqe_print.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -Wl,-Bstatic -luring -Wl,-Bdynamic -lpthread

# The bs_ programs (provided buffers) share bs_bufs.h as well.
$(B)/test/prog/bs_%: test/prog/bs_%.c test/prog/cqe_print.h test/prog/bs_bufs.h test/prog/bs_rings.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

# The hardened programs share the W^X checks in sec_wx.h.
$(B)/test/prog/sec_%: test/prog/sec_%.c test/prog/cqe_print.h test/prog/sec_wx.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

# The pol_ programs (configured policies) use the same helpers.
$(B)/test/prog/pol_%: test/prog/pol_%.c test/prog/cqe_print.h test/prog/bs_bufs.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

$(B)/test/prog/lib/%.so: test/prog/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -fPIC -o $@ $<

$(B)/test/prog/%: test/prog/%.c test/prog/cqe_print.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring -lpthread

# Objects a unit test needs besides pool/, conf/ and preload/'s pure parts;
# launcher/main.c stays out.
UNIT_OBJS_launcher_elf := $(B)/obj-launcher/launcher/elf.o
$(B)/test/unit/launcher_elf: $(UNIT_OBJS_launcher_elf)
UNIT_OBJS_launcher_report := $(addprefix $(B)/obj-launcher/launcher/,report.o report_options.o report_load.o report_advice.o report_text.o report_plot.o json.o)
$(B)/test/unit/launcher_report: $(UNIT_OBJS_launcher_report)
UNIT_OBJS_launcher_json_write := $(B)/obj-launcher/launcher/json_write.o $(B)/obj-launcher/launcher/json.o
$(B)/test/unit/launcher_json_write: $(UNIT_OBJS_launcher_json_write)
# Reads this process's own /proc/self/maps, with bufsel's system calls.
UNIT_OBJS_shadow_maps := $(addprefix $(B)/obj/preload/,shadow/shadow_maps.o procfile.o sys.o)
$(B)/test/unit/shadow_maps: $(UNIT_OBJS_shadow_maps)
# Signals put off while a lock is held, with bufsel's system calls.
UNIT_OBJS_preload_sigdefer := $(addprefix $(B)/obj/preload/,intercept/sigdefer.o state.o sys.o)
$(B)/test/unit/preload_sigdefer: $(UNIT_OBJS_preload_sigdefer)

$(B)/test/unit/%: test/unit/%.c $(UNIT_LIBOBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(UNIT_LIBOBJS) $(UNIT_OBJS_$*) -lcriterion -lpthread

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

# Faults only bufsel can have (its own allocations failing, no fd left for a
# shadow), checked by what they must never do to a program.
$(B)/test/integration/faults: test/integration/faults.c test/integration/harness.c test/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c -lcriterion -lpthread

# Safe to load into any process (docs/security.md): the statistics file's
# hostile targets, host limits, a setuid program run by an unprivileged user.
$(B)/test/integration/security: test/integration/security.c test/integration/harness.c test/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c -lcriterion -lpthread

# bufsel ab on real programs: the arms' environments, the ratios, the pool
# statistics, failures and bad command lines; reads the JSON with launcher/json.c.
$(B)/test/integration/ab: test/integration/ab.c test/integration/harness.c test/integration/harness.h \
		launcher/json.c launcher/json.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< test/integration/harness.c launcher/json.c -lcriterion -lpthread -lm

INTEGRATION_BINS := $(B)/test/integration/compare $(B)/test/integration/emulated \
	$(B)/test/integration/policy $(B)/test/integration/report $(B)/test/integration/ab \
	$(B)/test/integration/faults $(B)/test/integration/security

test: all $(PROG_BINS) $(UNIT_BINS) $(INTEGRATION_BINS)
	@sh test/run-all.sh $(B)

integration: all $(PROG_BINS) $(INTEGRATION_BINS)
	BUFSEL_BUILD=$(B) $(B)/test/integration/compare && BUFSEL_BUILD=$(B) $(B)/test/integration/emulated && \
		BUFSEL_BUILD=$(B) $(B)/test/integration/policy && BUFSEL_BUILD=$(B) $(B)/test/integration/report && \
		BUFSEL_BUILD=$(B) $(B)/test/integration/ab && \
		BUFSEL_BUILD=$(B) $(B)/test/integration/faults && \
		BUFSEL_BUILD=$(B) $(B)/test/integration/security

# The same tests with the library, the programs and the tests built with
# ASan+UBSan; a sanitizer report makes the reporting process fail its test.
asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	$(MAKE) B=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" test

demo:
	@sh test/demo.sh

# liburing's test suite (LIBURING_TARBALL, built once in $(B)/liburing-suite/)
# natively and under bufsel in every mode; fails on a difference not listed in
# test/liburing/exclusions.  TIMEOUT=, SUITE_JOBS=, SUITE_TESTS=.
LIBURING_TARBALL ?= $(lastword $(sort $(wildcard $(CURDIR)/../shared/third_party/liburing-*.tar.gz)))
liburing-suite: all
	LIBURING_TARBALL=$(LIBURING_TARBALL) B=$(B) bash test/liburing/run.sh

# liburing's examples/proxy and examples/io_uring-udp on loopback, natively
# and with their buffer rings bufsel's (also as older kernels): every byte
# must arrive.
liburing-examples: all
	LIBURING_TARBALL=$(LIBURING_TARBALL) B=$(B) bash test/liburing/examples.sh

# bufsel on a real Linux 5.10 (Debian 11's kernel, fetched with apt-get into
# $(B)/vm) under qemu: each program natively and under bufsel in the guest,
# liburing's buffer-ring tests under bufsel; the guest's verdict is the exit
# status (test/vm/run.sh).  VM_PROGRAMS=, VM_LIBURING=0, VM_TIMEOUT=.
.PHONY: vm-test
vm-test: all $(PROG_BINS)
	LIBURING_TARBALL=$(LIBURING_TARBALL) B=$(B) bash test/vm/run.sh

# Static analysis of the sources (what make builds, with its -std=gnu11 -I.):
# cppcheck with test/cppcheck.supp, clang-tidy with .clang-tidy, one file per
# job.  Any finding fails.  Needs cppcheck and clang-tidy (Debian 12).
.PHONY: lint
LINT_SRCS := $(sort $(wildcard preload/*.c preload/*/*.c pool/*.c conf/*.c launcher/*.c))
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

# Benchmark workloads (bench/workloads/, bench/README.md): ordinary liburing
# programs, the same binary run natively and under bufsel by `bufsel ab`, each
# printing "bench: name=value ..." lines. The *_client programs are their load
# generators, run without bufsel; they make no io_uring call and link no liburing.
BENCH_WL_SRV  := echo pipe file idle_prealloc idle_select
BENCH_WL_GEN  := echo_client idle_client
BENCH_WL_BINS := $(BENCH_WL_SRV:%=$(B)/bench/%) $(BENCH_WL_GEN:%=$(B)/bench/%)
BENCH_WL_LIB  := $(B)/obj-bench/libworkloads.a
BENCH_WL_OBJS := $(patsubst %.c,$(B)/obj-bench/%.o,$(addprefix bench/workloads/, \
	bench.c opts.c pattern.c latency.c spawn.c net.c ring.c waitlist.c idle_server.c))
.PHONY: bench-progs bench-smoke
bench-progs: $(BENCH_WL_BINS)

$(B)/obj-bench/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BENCH_WL_LIB): $(BENCH_WL_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(BENCH_WL_GEN:%=$(B)/bench/%): $(B)/bench/%: $(B)/obj-bench/bench/workloads/%.o $(BENCH_WL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ -lm

$(BENCH_WL_SRV:%=$(B)/bench/%): $(B)/bench/%: $(B)/obj-bench/bench/workloads/%.o $(BENCH_WL_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ -luring -lpthread -lm

# Each workload briefly, natively and in every bufsel arm: every run must
# exit 0 with well-formed "bench:" lines (the programs check their data).
bench-smoke: all bench-progs
	sh bench/workloads/smoke.sh $(B)

# The A/B benchmark suite (bench/suite.c and bench/suite/, docs/performance.md): every workload
# of build/bench through `bufsel ab` natively (twice: native2 is the noise
# floor), under emulate, passthrough and kernel56; writes bench/results/latest.{json,md,svg} and prints the table.
# make bench takes about 9 minutes on 2 cores, make bench-quick about 2 minutes.
# BENCH_RUNS, BENCH_SECONDS (and BENCH_WARMUP, BENCH_IDLE_ROUNDS) override.
BENCH_PROGS ?= $(B)/bench
BENCH_OUT   ?= bench/results
BENCH_OPTS   = --bufsel $(B)/bufsel --progs $(BENCH_PROGS) --out $(BENCH_OUT) \
	$(if $(BENCH_RUNS),--runs $(BENCH_RUNS)) $(if $(BENCH_WARMUP),--warmup $(BENCH_WARMUP)) \
	$(if $(BENCH_SECONDS),--seconds $(BENCH_SECONDS)) $(if $(BENCH_IDLE_ROUNDS),--idle-rounds $(BENCH_IDLE_ROUNDS))

$(B)/bench/suite: bench/suite.c $(wildcard bench/suite/*.c bench/suite/*.h) \
		launcher/json.c launcher/json.h launcher/json_write.c launcher/json_write.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) -lm

bench: all bench-progs $(B)/bench/suite
	$(B)/bench/suite $(BENCH_OPTS)

bench-quick: all bench-progs $(B)/bench/suite
	$(B)/bench/suite --quick $(BENCH_OPTS)

# Differential fuzzing against the kernel (docs/reliability.md): seqfuzz runs
# random, reproducible operation sequences on provided buffers and prints their
# transcripts; difffuzz runs them natively and under bufsel and compares.
#   make fuzz-quick                                  10,000 sequences, every third batch of
#                                                    1,000 on buffer rings (in make test)
#   make fuzz SEQUENCES=1000000 [SEED=S] [FUZZ_SECONDS=T]
#   make fuzz-rings                                  3,000 sequences on buffer rings, every
#                                                    one --rings
SEQUENCES    ?= 100000
SEED         ?= 1
FUZZ_SECONDS ?= 0
SEQFUZZ_SRCS := test/fuzz/seqfuzz.c test/fuzz/seq_gen.c test/fuzz/seq_reap.c
FUZZ_BINS    := $(B)/test/fuzz/seqfuzz $(B)/test/fuzz/difffuzz

$(B)/test/fuzz/seqfuzz: $(SEQFUZZ_SRCS) test/fuzz/seqfuzz.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(SEQFUZZ_SRCS) -luring

$(B)/test/fuzz/difffuzz: test/fuzz/difffuzz.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $<

fuzz-quick: all $(FUZZ_BINS)
	$(B)/test/fuzz/difffuzz --build $(B) --sequences 10000 --seed 1

fuzz: all $(FUZZ_BINS)
	$(B)/test/fuzz/difffuzz --build $(B) --sequences $(SEQUENCES) --seed $(SEED) --seconds $(FUZZ_SECONDS)

fuzz-rings: all $(FUZZ_BINS)
	$(B)/test/fuzz/difffuzz --build $(B) --sequences 3000 --seed 1 --batch 500 --rings-every 1 --keep-going

# The whole-SQE fuzzer (docs/reliability.md, "Whole-SQE fuzzing"): random
# bytes in every SQE field, bad pointers, SQ ring chaos, random enter
# arguments, natively and under bufsel, counting divergences, crashes, hangs.
#   make fuzz-sqe-quick                              3,000 sequences (not yet in make test)
#   make fuzz-sqe SQES=1000000 [SEED=S] [FUZZ_SECONDS=T]
SQES         ?= 1000000
SQE_PER_SEQ  := 13
$(B)/test/fuzz/sqefuzz: test/fuzz/sqefuzz.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -luring

fuzz-sqe-quick: all $(B)/test/fuzz/sqefuzz $(B)/test/fuzz/difffuzz
	$(B)/test/fuzz/difffuzz --generator sqefuzz --build $(B) --sequences 3000 --batch 250 --seed 1 \
		--timeout 120 --keep-going --native-twice-every 1

# A sequence writes about 13 SQEs: SQES/13 sequences.
fuzz-sqe: all $(B)/test/fuzz/sqefuzz $(B)/test/fuzz/difffuzz
	$(B)/test/fuzz/difffuzz --generator sqefuzz --build $(B) --sequences $$(( $(SQES) / $(SQE_PER_SEQ) + 1 )) \
		--batch 500 --seed $(SEED) --seconds $(FUZZ_SECONDS) --timeout 300 --keep-going --native-twice-every 1

test: $(FUZZ_BINS)
.PHONY: fuzz fuzz-quick fuzz-rings fuzz-sqe fuzz-sqe-quick

install: all $(MAN_PAGES)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 $(B)/libbufsel.so $(DESTDIR)$(LIBDIR)/libbufsel.so
	install -m 0755 $(B)/bufsel $(DESTDIR)$(BINDIR)/bufsel
	install -m 0644 $(B)/man/bufsel.1 $(DESTDIR)$(MANDIR)/man1/bufsel.1
	install -m 0644 $(B)/man/bufsel.conf.5 $(DESTDIR)$(MANDIR)/man5/bufsel.conf.5
	install -m 0644 pkg/bufsel.bash-completion $(DESTDIR)$(BASHCOMPDIR)/bufsel
	install -m 0644 pkg/bufsel.conf $(DESTDIR)$(DOCDIR)/examples/bufsel.conf

deb:
	pkg/make-deb.sh $(B) $(VERSION)

# Installs the package on this machine (root; none installed yet), checks it
# and removes it again: lintian, the installed launcher and library, dpkg -r.
deb-test: $(B)/test/prog/bs_recv
	pkg/test-deb.sh $(B) $(VERSION)

# Every sh block of the README run, its shown output compared (root: the
# README installs the package and removes it).
readme-check: all $(PROG_BINS)
	python3 test/readme_check.py README.md

clean:
	rm -rf build build-asan

-include $(shell find $(B) build-asan -path '*/vm' -prune -o -name '*.d' -type f -print 2>/dev/null)
