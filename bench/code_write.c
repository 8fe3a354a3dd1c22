/*
 * code_write: how site patching may write the program's code, measured
 * (docs/interception.md, "Why /proc/self/mem and not mprotect").
 *
 * Build (no Makefile rule; from the project root):
 *   mkdir -p build/bench && cc -O2 -pthread -o build/bench/code_write bench/code_write.c
 *
 * Run:
 *   build/bench/code_write mem|mprotect [SECONDS [mdwe]]
 *     mem       writes through /proc/self/mem (pwrite of an aligned quadword)
 *     mprotect  mprotect read-write, one 8-byte store, mprotect read-execute
 *     SECONDS   how long to write (default 2)
 *     mdwe      first prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN)
 *   NOTHREAD=1 in the environment: no executing thread (the bare cost).
 *
 * A page of private file-backed code (a memfd mapped MAP_PRIVATE r-x, like a
 * library's text) holds `mov $imm32,%eax; ret` in one aligned quadword.  A
 * thread calls it in a loop while the main thread rewrites the quadword,
 * alternating two immediates that differ in every byte, each write followed
 * by a membarrier(SYNC_CORE) as bufsel does.  A call that returns anything
 * but one of the two values ran a mix of old and new bytes ("torn").  A
 * SIGSEGV in the executing thread ends the run with status 3; a failed
 * mprotect back to read-execute with status 4.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

#define VAL_A 0x01020304
#define VAL_B ((int)0xf1f2f3f4)

static uint8_t *code;
static atomic_int stop;
static atomic_long calls, torn;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *executor(void *arg)
{
	(void)arg;
	int (*f)(void) = (int (*)(void))(void *)code;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int v = f();
		if (v != VAL_A && v != VAL_B)
			atomic_fetch_add(&torn, 1);
		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	}
	return NULL;
}

static void on_segv(int sig)
{
	static const char m[] = "SIGSEGV in the executing thread\n";
	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(3);
	_exit(3);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mem";
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	bool threaded = !getenv("NOTHREAD");
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 3 && prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0))
		printf("PR_SET_MDWE: %s\n", strerror(errno));
	uint8_t a[8] = { 0xb8, 4, 3, 2, 1, 0xc3, 0x90, 0x90 }, b[8] = { 0xb8, 0xf4, 0xf3, 0xf2, 0xf1, 0xc3, 0x90, 0x90 };
	int fd = memfd_create("code", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 4096) || pwrite(fd, a, 8, 0) != 8)
		return perror("memfd"), 2;
	code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (code == MAP_FAILED || mem < 0)
		return perror("mmap or /proc/self/mem"), 2;
	syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
	signal(SIGSEGV, on_segv);
	pthread_t t;
	if (threaded && pthread_create(&t, NULL, executor, NULL))
		return 2;
	usleep(10000);
	long n = 0;
	double t0 = now(), spent = 0;
	while (now() - t0 < secs) {
		const uint8_t *v = (n & 1) ? a : b;
		double s = now();
		if (!strcmp(mode, "mem")) {
			if (pwrite(mem, v, 8, (off_t)(uintptr_t)code) != 8) {
				printf("pwrite: %s\n", strerror(errno));
				break;
			}
		} else {
			if (mprotect(code, 4096, PROT_READ | PROT_WRITE)) {
				printf("mprotect read-write: %s\n", strerror(errno));
				break;
			}
			uint64_t q;
			memcpy(&q, v, 8);
			__atomic_store_n((uint64_t *)code, q, __ATOMIC_SEQ_CST);
			if (mprotect(code, 4096, PROT_READ | PROT_EXEC)) {
				printf("mprotect read-execute: %s\n", strerror(errno));
				_exit(4);
			}
		}
		spent += now() - s;
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
		n++;
	}
	atomic_store(&stop, 1);
	if (threaded)
		pthread_join(t, NULL);
	printf("%s: writes=%ld us_per_write=%.2f calls=%ld torn=%ld\n", mode, n, n ? spent / (double)n * 1e6 : 0.0,
	       atomic_load(&calls), atomic_load(&torn));
	return 0;
}
