#define _GNU_SOURCE
/*
 * The fd → ring table.  Lookups run in the SIGSYS handler and from libc hooks
 * on any thread, so they take no lock: rings sit in a static array, a lookup
 * takes a reference with CAS, and the last reference tears a ring down.  A
 * ring is released only once no fd of the program refers to its file (the
 * program may have dup'd it), which is asked of the kernel with kcmp against
 * bufsel's own fd of the file or, on an unpinned ring (which bufsel holds no
 * fd of), by the file's inode.
 */
#include "preload/shadow/ring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "preload/heap.h"
#include "preload/log.h"
#include "preload/procfile.h"
#include "preload/select/bufring.h"
#include "preload/shadow/kernel_ops.h"
#include "preload/shadow/mover_pass.h"
#include "preload/shadow/shadow.h"
#include "preload/state.h"
#include "preload/stats_closed.h"
#include "preload/sys.h"

static struct ring ring_store[RING_SLOTS];
/* One past the highest slot ever claimed: every scan stops there, so a
 * process with no shadowed ring pays nothing on close, mmap or enter. */
static atomic_int ring_hwm;

/* r names the loop variable, a declarator: it cannot be parenthesised. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define for_each_slot(r)                                                                   \
	for (struct ring *r = ring_store,                                                  \
			 *r##_end = ring_store + atomic_load_explicit(&ring_hwm, memory_order_acquire); \
	     r < r##_end; r++)
/* NOLINTEND(bugprone-macro-parentheses) */

/* IORING_REGISTER_RING_FDS registrations are per task in the kernel, so the
 * index → ring map is per thread too. */
#define REG_RING_MAX 16
static __thread struct ring *reg_rings[REG_RING_MAX];

static int same_file(int fd, const struct ring *r)
{
	if (!r->unpinned)
		return sys_kcmp_file(fd, r->priv_fd) == 0;
	struct stat st;
	if (fd < 0 || sys_call3(SYS_fstat, fd, (long)&st, 0))
		return 0;
	return st.st_ino == r->ino && st.st_dev == r->dev;
}

int ring_fd_names(const struct ring *r)
{
	return r->priv_fd >= 0 || same_file(atomic_load_explicit(&r->real_fd, memory_order_relaxed), r);
}

/*
 * Files made with anon_inode_getfile share one inode (eventfd does); a ring
 * made so would not be told apart from another by its inode.  6.18 gives each
 * ring an inode of its own; whether this kernel does is asked once, against
 * an eventfd's.
 */
static unsigned long shared_anon_ino(void)
{
	static atomic_ulong ino;	/* 0: not asked yet */
	unsigned long v = atomic_load_explicit(&ino, memory_order_relaxed);
	if (v)
		return v;
	int efd = (int)sys_call3(SYS_eventfd2, 0, O_CLOEXEC, 0);
	struct stat st;
	v = ULONG_MAX;	/* cannot tell: no ring is told apart by inode */
	if (efd >= 0 && !sys_call3(SYS_fstat, efd, (long)&st, 0))
		v = st.st_ino;
	if (efd >= 0)
		sys_close(efd);
	atomic_store_explicit(&ino, v, memory_order_relaxed);
	return v;
}

int ring_identify(struct ring *r, int fd)
{
	struct stat st;
	if (sys_call3(SYS_fstat, fd, (long)&st, 0))
		return 0;
	r->ino = st.st_ino;
	r->dev = st.st_dev;
	unsigned long shared = shared_anon_ino();
	return shared != ULONG_MAX && st.st_ino != shared;
}

struct ring *ring_alloc(void)
{
	for (int i = 0; i < RING_SLOTS; i++) {
		struct ring *r = &ring_store[i];
		int expect = 0;
		if (atomic_compare_exchange_strong(&r->claimed, &expect, 1)) {
			int hwm = atomic_load(&ring_hwm);
			while (hwm < i + 1 && !atomic_compare_exchange_weak(&ring_hwm, &hwm, i + 1))
				;
			memset((char *)r, 0, offsetof(struct ring, claimed));
			/* Shared (and zeroed) from the start: a fork may come at
			 * any point of the ring's life.  Its own mapping, never
			 * reused by another ring: a child may still use the one
			 * its parent's ring in this slot had. */
			void *x = sys_mmap(NULL, sizeof(*r->x), PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
			if (sys_is_err((long)x)) {
				atomic_store(&r->claimed, 0);
				return NULL;
			}
			/* The pool's arena likewise, from the start: a pool made
			 * after a fork must be the one every process sees.
			 * Less where the address space is limited (RLIMIT_AS): a
			 * smaller arena only fails a provide sooner. */
			size_t alen = RING_ARENA_LEN;
			void *ar;
			while (sys_is_err((long)(ar = sys_mmap(NULL, alen, PROT_READ | PROT_WRITE,
							       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0))) &&
			       alen > RING_ARENA_MIN)
				alen /= 4;
			if (sys_is_err((long)ar)) {
				sys_munmap(x, sizeof(*r->x));
				atomic_store(&r->claimed, 0);
				return NULL;
			}
			r->x = x;
			r->arena = arena_init(ar, alen);
			r->arena_len = alen;
			r->x->sq_lock.shared = r->x->cq_lock.shared = r->x->tmo_lock.shared = 1;
			r->x->pool_lock.shared = 1;
			r->x->proc_pid[0] = (int)sys_call3(SYS_getpid, 0, 0, 0);
			r->prog_fd = r->priv_fd = r->mover_wake_fd = r->mover_ep = r->mem_fd = -1;
			r->closed_fd = r->watch_ep = -1;
			atomic_store(&r->real_fd, -1);
			atomic_store(&r->refs, 1);
			return r;
		}
	}
	return NULL;
}

void ring_publish(struct ring *r)
{
	atomic_store_explicit(&r->live, 1, memory_order_release);
}

static struct ring *ring_tryget(struct ring *r);

static void note_held_peak(unsigned long peak)
{
	unsigned long seen = atomic_load(&bufsel.n.held_peak);
	while (peak > seen && !atomic_compare_exchange_weak(&bufsel.n.held_peak, &seen, peak))
		;
}

/*
 * Per-batch bookkeeping sized by the SQ, mapped rather than allocated: a
 * ring's life is often short (10,000 setup/teardown cycles must stay flat),
 * and a mapping goes back to the kernel the moment the ring does.  Shared,
 * as x is: the CQ's byte flags and the reserve of made CQEs are the ring's,
 * whichever process moves them (the undo records of a batch are used only
 * under sq_lock, by the process that drains it).
 */
int ring_scratch_alloc(struct ring *r, unsigned sq_entries, unsigned cq_entries)
{
	size_t undo = (size_t)sq_entries * sizeof(*r->undo);
	size_t prog_end = (size_t)sq_entries * sizeof(*r->prog_end);
	size_t len = undo + prog_end + CQE_QUEUE_RESERVE * sizeof(struct io_uring_cqe) + cq_entries;
	void *m = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sys_is_err((long)m))
		return (int)(long)m;
	r->scratch = m;
	r->scratch_len = len;
	/* Widest alignment first: the undo records and the CQEs hold 64-bit
	 * fields, prog_end is 4-byte, the CQ's byte flags go last (an odd
	 * sq_entries or a CQ of 2 would misalign whatever followed them). */
	r->undo = m;
	r->synth_reserve = (void *)((char *)m + undo);
	r->x->synth = (struct cqe_queue){ .v = r->synth_reserve, .cap = CQE_QUEUE_RESERVE };
	r->prog_end = (unsigned *)((char *)m + undo + CQE_QUEUE_RESERVE * sizeof(struct io_uring_cqe));
	r->cq_from_real = (uint8_t *)m + len - cq_entries;
	return 0;
}

unsigned ring_slot(const struct ring *r)
{
	return (unsigned)(r - ring_store);
}

struct ring *ring_get_slot(unsigned slot, unsigned serial)
{
	if (slot >= RING_SLOTS)
		return NULL;
	struct ring *r = ring_tryget(&ring_store[slot]);
	if (r && r->serial != serial) {
		ring_put(r);
		r = NULL;
	}
	return r;
}

void ring_for_each_live(void (*fn)(int fd, struct ring *r, int *first), int fd, int *first)
{
	for_each_slot(r) {
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		fn(fd, got, first);
		ring_put(got);
	}
}

unsigned long ring_held_peak(void)
{
	for_each_slot(r) {
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		spin_lock(&got->x->pool_lock);
		note_held_peak(pool_peak_in_use(got->x->pool));
		spin_unlock(&got->x->pool_lock);
		ring_put(got);
	}
	return atomic_load(&bufsel.n.held_peak);
}

void ring_retire(struct ring *r, void *addr, size_t len)
{
	if (!addr)
		return;
	if (r->nretired == RING_RETIRED_MAX) {
		sys_munmap(r->retired[0].addr, r->retired[0].len);
		memmove(&r->retired[0], &r->retired[1], sizeof(r->retired[0]) * (RING_RETIRED_MAX - 1));
		r->nretired--;
	}
	r->retired[r->nretired].addr = addr;
	r->retired[r->nretired].len = len;
	r->nretired++;
}

static void ring_destroy(struct ring *r)
{
	for (unsigned i = 0; i < r->nretired; i++)
		sys_munmap(r->retired[i].addr, r->retired[i].len);
	r->nretired = 0;
	stats_ring_closed(r);
	struct ring_shared *x = r->x;
	if (x) {
		spin_lock(&x->pool_lock);
		note_held_peak(pool_peak_in_use(x->pool));
		spin_unlock(&x->pool_lock);
	}
	bufring_release(r);
	/* Gone from the slot before anything of it is unmapped: a fork that
	 * another thread makes meanwhile has the child's atfork handler read
	 * x and the pool in the arena (bufring_after_fork), and write to x. */
	__atomic_store_n(&r->x, NULL, __ATOMIC_RELEASE);
	/* The pool is not destroyed: another process may still use the ring,
	 * and all of the pool is in the arena, which goes with the last
	 * process's mapping of it. */
	if (r->arena)
		sys_munmap(r->arena, r->arena_len);
	r->arena = NULL;
	req_table_destroy(&r->reqs);
	if (r->scratch)
		sys_munmap(r->scratch, r->scratch_len);
	r->scratch = NULL;
	r->prog_end = NULL;
	r->cq_from_real = NULL;
	/* x is left as it is: another process may still use the ring.  A
	 * queue grown into this process's heap goes back to it. */
	if (x && x->synth.heap && r->synth_owner)
		heap_free(x->synth.v);
	r->synth_owner = 0;
	if (x)
		sys_munmap(x, sizeof(*x));
	r->undo = NULL;
	r->hooks = NULL;
	if (r->sh.mem && !r->prog_mem)
		sys_munmap(r->sh.mem, r->sh.lay.total_len);
	if (r->real_sqes_map)
		sys_munmap(r->real_sqes_map, r->real_sqes_len);
	if (r->real_cq_map && r->real_cq_map != r->real_sq_map)
		sys_munmap(r->real_cq_map, r->real_cq_len);
	if (r->real_sq_map)
		sys_munmap(r->real_sq_map, r->real_sq_len);
	if (r->priv_fd >= 0)
		sys_close(r->priv_fd);
	if (r->mover_wake_fd >= 0)
		sys_close(r->mover_wake_fd);
	if (r->mover_ep >= 0)
		sys_close(r->mover_ep);
	if (r->mem_fd >= 0)
		sys_close(r->mem_fd);
	r->prog_fd = r->priv_fd = r->mover_wake_fd = r->mover_ep = r->mem_fd = -1;
	r->closed_fd = r->watch_ep = -1;
	atomic_store(&r->real_fd, -1);
}

void ring_put(struct ring *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		ring_destroy(r);
		atomic_store_explicit(&r->claimed, 0, memory_order_release);
	}
}

void ring_put_ending_pass(struct ring *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
		/* The last reference: no close waits for this pass (its put came
		 * first), and the slot must not be touched once it is free. */
		atomic_fetch_sub_explicit(&r->mover_pass, 1, memory_order_seq_cst);
		ring_destroy(r);
		atomic_store_explicit(&r->claimed, 0, memory_order_release);
		return;
	}
	atomic_fetch_sub_explicit(&r->mover_pass, 1, memory_order_seq_cst);
}

void ring_abandon(struct ring *r)
{
	ring_put(r);
}

static struct ring *ring_tryget(struct ring *r)
{
	int n = atomic_load_explicit(&r->refs, memory_order_acquire);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&r->refs, &n, n + 1)) {
			if (atomic_load_explicit(&r->live, memory_order_acquire))
				return r;
			ring_put(r);
			return NULL;
		}
	}
	return NULL;
}

int ring_is_fd(int fd)
{
	for_each_slot(r) {
		if (atomic_load_explicit(&r->live, memory_order_acquire) && r->prog_fd == fd)
			return 1;
	}
	return 0;
}

int ring_owns_fd(int fd)
{
	return ring_next_owned_fd((unsigned)fd, (unsigned)fd) == fd && fd >= 0;
}

int ring_next_owned_fd(unsigned lo, unsigned hi)
{
	/* The process mover's epoll fd is bufsel's too, though no ring's. */
	int ep = atomic_load_explicit(&bufsel.mover_state, memory_order_acquire) == 2 ? bufsel.mover_epfd : -1;
	long best = ep >= 0 && (unsigned)ep >= lo && (unsigned)ep <= hi ? ep : -1;
	for_each_slot(r) {
		if (!atomic_load_explicit(&r->live, memory_order_acquire))
			continue;
		int fds[4] = { r->priv_fd, r->mover_wake_fd, r->mover_ep, r->mem_fd };
		for (int k = 0; k < 4; k++)
			if (fds[k] >= 0 && (unsigned)fds[k] >= lo && (unsigned)fds[k] <= hi &&
			    (best < 0 || fds[k] < best))
				best = fds[k];
	}
	return (int)best;
}

static int ring_alive(struct ring *r);
static void ring_release(struct ring *r);

/* Under the seccomp filter a close made with the program's own `syscall`
 * (liburing's io_uring_queue_exit) is not seen: a pinned ring's number may
 * name another file since, as an unpinned ring's may anywhere. */
int ring_closes_unseen(void)
{
	return bufsel.trap == BUFSEL_TRAP_SECCOMP;
}

/* The program's number for r was closed: r is no longer found by it, but
 * an enter on it that the kernel refuses is still judged as r's
 * (enter_closed_fd), as natively the program's mapping keeps the ring. */
static void lose_number(struct ring *r, int fd)
{
	if (fd >= 0)
		r->closed_fd = fd;
	r->prog_fd = -1;
}

/* fd was found to be r's file: real calls go there from now on. */
static struct ring *found_at(struct ring *r, int fd)
{
	if (r->unpinned && atomic_load_explicit(&r->real_fd, memory_order_relaxed) != fd)
		atomic_store_explicit(&r->real_fd, fd, memory_order_relaxed);
	return r;
}

/*
 * The live ring the program's number fd is recorded for and whose file it
 * names; closed: the mapped one it named before the program closed it
 * (ring_closing).  An unpinned ring's number may have been closed unseen and
 * handed out again, and a mapped one's closed, so the file is checked; a
 * ring nothing holds any more is released on the way.
 */
static struct ring *by_number(int fd, int closed)
{
	for_each_slot(r) {
		if (!atomic_load_explicit(&r->live, memory_order_acquire) ||
		    (r->prog_fd != fd && !(closed && r->closed_fd == fd)))
			continue;
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		if (got->prog_fd == fd || (closed && got->prog_fd < 0 && got->closed_fd == fd)) {
			if (closed ? got->map_pin && got->priv_fd >= 0
				   : (!got->unpinned && !got->map_pin && !ring_closes_unseen()) || same_file(fd, got))
				return got;
			if (!closed && !ring_alive(got))
				ring_release(got);
		}
		ring_put(got);
	}
	return NULL;
}

struct ring *ring_get(int fd)
{
	if (fd < 0)
		return NULL;
	struct ring *named = by_number(fd, 0);
	if (named)
		return found_at(named, fd);
	/* A dup of a ring fd: ask the kernel whether it is one of our files
	 * (any fd mapped shared at offset 0 comes here: one fstat for all the
	 * unpinned rings, not one each). */
	struct stat st = {0};
	int st_ok = -1;
	for_each_slot(r) {
		if (!atomic_load_explicit(&r->live, memory_order_acquire))
			continue;
		struct ring *got = ring_tryget(r);
		if (got && got->unpinned && st_ok < 0)
			st_ok = !sys_call3(SYS_fstat, fd, (long)&st, 0);
		if (got && (got->unpinned ? st_ok > 0 && st.st_ino == got->ino && st.st_dev == got->dev
					  : same_file(fd, got)))
			return found_at(got, fd);
		if (got)
			ring_put(got);
	}
	return NULL;
}

/* Only a caller the kernel has just told the fd is closed (-EBADF) asks. */
struct ring *ring_get_closed(int fd)
{
	return fd < 0 ? NULL : by_number(fd, 1);
}

struct ring *ring_get_registered(unsigned index)
{
	struct ring *r = index < REG_RING_MAX ? reg_rings[index] : NULL;
	return r ? ring_tryget(r) : NULL;
}

/*
 * A registration pins the ring in the kernel, fd or no fd, and liburing
 * closes the fd right after registering it: an unpinned ring gets bufsel's
 * fd for as long as the program has it registered, so that bufsel's own
 * calls still reach it.  When the last registration bufsel saw goes, so does
 * that fd, and with it the ring if the program has no fd left either.
 */
static void reg_pin(struct ring *r)
{
	int fd = atomic_load_explicit(&r->real_fd, memory_order_relaxed);
	if (r->unpinned && r->priv_fd < 0 && same_file(fd, r))
		r->priv_fd = sys_dupfd_high(fd);
}

static void reg_unpin(struct ring *r)
{
	struct ring *got = ring_tryget(r);
	if (!got)
		return;
	if (got->unpinned && got->priv_fd >= 0 && !got->map_pin) {
		int fd = got->priv_fd;
		got->priv_fd = -1;
		sys_close(fd);
		if (!ring_alive(got))
			ring_release(got);
	}
	ring_put(got);
}

void ring_set_registered(unsigned index, struct ring *r)
{
	if (index >= REG_RING_MAX)
		return;
	struct ring *old = reg_rings[index];
	reg_rings[index] = r;
	if (r && atomic_fetch_add(&r->registered, 1) == 0)
		reg_pin(r);
	if (old && atomic_fetch_sub(&old->registered, 1) == 1)
		reg_unpin(old);
}

/* Drops the table's reference; the ring goes when its last user does. */
static void ring_release(struct ring *r)
{
	int one = 1;
	if (!atomic_compare_exchange_strong(&r->live, &one, 0))
		return;
	log_debug("ring fd %d released", r->prog_fd);
	mover_stop(r);
	ring_put(r);
}

struct listed {
	unsigned long ino;
	int found;
};

/* A line of an epoll's fdinfo: "tfd: N events: E data: D  pos:P ino:I sdev:S". */
static int epoll_line(const char *s, const char *end, void *arg)
{
	struct listed *l = arg;
	if (end - s < 4 || s[0] != 't' || s[1] != 'f' || s[2] != 'd' || s[3] != ':')
		return 0;
	for (; end - s > 5; s++)
		if (s[0] == ' ' && s[1] == 'i' && s[2] == 'n' && s[3] == 'o' && s[4] == ':')
			break;
	if (end - s <= 5)
		return 0;
	unsigned long ino;
	s += 5;
	if (!procfile_hex(&s, end, &ino) && ino == l->ino)
		l->found = 1;
	return l->found;
}

/*
 * Whether r's file may still exist: 0 when the epoll that watches it no
 * longer lists it (the kernel drops a file from every epoll as its last
 * reference goes, and only then), 1 when it does or nothing can tell.
 */
static int file_may_live(const struct ring *r)
{
	if (r->watch_ep < 0 || !r->unpinned || r->priv_fd >= 0)
		return 1;	/* not watched, or bufsel's own fd keeps it */
	char path[32];
	procfile_fdinfo_path(path, r->watch_ep);
	struct listed l = { r->ino, 0 };
	int err = procfile_lines(path, epoll_line, &l);
	return err < 0 || l.found;
}

/* An answer from shadow_mapped_elsewhere worked out beforehand (a sweep
 * asks for every ring at once), or NOT_ASKED. */
#define NOT_ASKED 2

/* Does any fd of the process other than bufsel's own refer to r's file? */
static int ring_alive_as(struct ring *r, int mapped)
{
	/* The program's mappings hold the ring (one it cannot tell about
	 * stays: keeping a ring is safer than losing one). */
	if (r->map_pin && (mapped == NOT_ASKED ? shadow_mapped_elsewhere(&r->sh) : mapped) != 0)
		return 1;
	int prog = r->prog_fd;
	if (same_file(prog, r))
		return 1;
	/* The program's fd number is no longer this ring's: a new ring (or any
	 * file) may get it, and must not be taken for this one. */
	lose_number(r, prog);
	int real = atomic_load_explicit(&r->real_fd, memory_order_relaxed);
	if (r->unpinned && real >= 0 && real != r->priv_fd && real != prog && same_file(real, r))
		return 1;
	/* A registered index keeps the ring in use without any fd (a thread
	 * that exits takes its registrations along unseen: such a ring stays). */
	if (atomic_load(&r->registered) > 0)
		return 1;
	/* A pinned ring's file is held by bufsel's fd and mappings, as the
	 * kernel's ring is natively by the program's mappings: the program's
	 * views of the shadow keep it, its close seen or not, until a sweep
	 * finds them gone (close_mapped, on a kernel without NO_MMAP). */
	if (!r->unpinned && r->priv_fd >= 0 && r->sh.mem && !r->prog_mem &&
	    (mapped == NOT_ASKED ? shadow_mapped_elsewhere(&r->sh) : mapped) != 0) {
		r->map_pin = 1;
		return 1;
	}
	/* The usual end: the program closed its only fd.  Only a ring whose
	 * file lives on (a dup, a fork's copy) needs the walk below, which
	 * also finds the fd the ring is now reached by. */
	if (!file_may_live(r))
		return 0;
	int dir = (int)sys_call6(SYS_openat, AT_FDCWD, (long)"/proc/self/fd",
				 O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (dir < 0)
		return 1;	/* cannot tell: keeping a ring is safer than losing one */
	char buf[2048];
	int alive = 0;
	long n;
	while (!alive && (n = sys_call3(SYS_getdents64, dir, (long)buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && !alive;) {
			struct dirent64 *d = (void *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			int fd = atoi(d->d_name); // NOLINT(cert-err34-c): /proc/self/fd names are fd numbers
			if (fd != r->priv_fd && fd != dir && same_file(fd, r)) {
				alive = 1;
				found_at(r, fd);
			}
		}
	}
	sys_close(dir);
	return alive;
}

static int ring_alive(struct ring *r)
{
	return ring_alive_as(r, NOT_ASKED);
}

/*
 * The sweeps judge a ring holding a reference: without one, another thread
 * could tear the slot down and set a new ring up in it between the judgement
 * and ring_release, which would then drop the new ring.  The rings the
 * program closed but still maps are asked about together, SWEEP_BATCH to one
 * read of /proc/self/maps.
 */
#define SWEEP_BATCH 64

static void sweep_batch(struct ring **held, struct shadow_query *q, unsigned n)
{
	int err = shadow_mapped_elsewhere_n(q, n);
	for (unsigned i = 0; i < n; i++) {
		if (!ring_alive_as(held[i], err ? err : q[i].elsewhere))
			ring_release(held[i]);
		ring_put(held[i]);
	}
}

/*
 * A ring the program closed but maps ends when the program unmaps it, which
 * bufsel does not see: each sweep looks again.  A program that leaves many
 * rings so (liburing's teardowns.t closes 100 in a row and never unmaps
 * them) would make each setup look at all of them; a sweep looks at about
 * PIN_LOOKS of them, each in its turn, so that one unmapped is found within
 * (pinned rings / PIN_LOOKS) setups, and a close of its fd or a
 * close_range that names it looks at once.
 */
#define PIN_LOOKS 8
static atomic_uint pinned_seen, sweeps;

static int pin_look_now(const struct ring *r, unsigned sweep, unsigned stride)
{
	return stride <= 1 || (ring_slot(r) + sweep) % stride == 0;
}

void ring_sweep(void)
{
	struct ring *held[SWEEP_BATCH];
	struct shadow_query q[SWEEP_BATCH];
	unsigned n = 0, pinned = 0;
	unsigned sweep = atomic_fetch_add_explicit(&sweeps, 1, memory_order_relaxed);
	unsigned stride = (atomic_load_explicit(&pinned_seen, memory_order_relaxed) + PIN_LOOKS - 1) / PIN_LOOKS;
	for_each_slot(r) {
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		if (got->map_pin && (pinned++, !pin_look_now(got, sweep, stride))) {
			ring_put(got);
			continue;
		}
		if (got->map_pin && !shadow_view_intact(&got->sh)) {
			held[n] = got;
			q[n] = (struct shadow_query){ got->sh.mem, got->sh.mem_ino, got->sh.mem_dev, 0 };
			if (++n == SWEEP_BATCH) {
				sweep_batch(held, q, n);
				n = 0;
			}
			continue;
		}
		if (!ring_alive(got))
			ring_release(got);
		ring_put(got);
	}
	if (n)
		sweep_batch(held, q, n);
	atomic_store_explicit(&pinned_seen, pinned, memory_order_relaxed);
}

int ring_look_for_closes(void)
{
	if (!ring_closes_unseen())
		return 0;
	int pinned = 0;
	for_each_slot(r)
		pinned |= atomic_load_explicit(&r->live, memory_order_acquire) && !r->unpinned;
	if (pinned)
		ring_sweep();
	return pinned;
}

/*
 * The kernel has just given fd to a new ring, so a live ring still filed
 * under that number lost it to a close() bufsel did not see (liburing's
 * inline one, possibly on another thread after this setup's sweep).  Left
 * there it would answer the new ring's lookups: it goes if nothing refers to
 * it any more, else it is found through its dups only.
 */
void ring_fd_reused(int fd)
{
	for_each_slot(r) {
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		if (got->prog_fd == fd) {
			if (ring_alive(got))
				lose_number(got, fd);
			else
				ring_release(got);
		}
		ring_put(got);
	}
}

int ring_file_gone(struct ring *r)
{
	if (!r->unpinned || ring_alive(r))
		return 0;	/* a pinned ring lives while bufsel's fd does */
	ring_release(r);
	return 1;
}

void ring_closing(unsigned lo, unsigned hi)
{
	for_each_slot(r) {
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		int fd = got->prog_fd;
		/* A pinned ring has bufsel's fd already; an unpinned one gets
		 * one, the file's last reference once the program's goes. */
		if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi && (got->unpinned == (got->priv_fd < 0)) &&
		    got->sh.mem && !got->prog_mem && shadow_mapped_elsewhere(&got->sh) == 1) {
			int keep = got->unpinned ? sys_dupfd_high(fd) : got->priv_fd;
			if (keep >= 0) {
				got->map_pin = 1;
				got->priv_fd = keep;
			}
		}
		ring_put(got);
	}
}

void ring_closed(int fd)
{
	for_each_slot(r) {
		struct ring *got = ring_tryget(r);
		if (!got)
			continue;
		if (got->prog_fd == fd && !ring_alive(got))
			ring_release(got);
		ring_put(got);
	}
}

void ring_after_fork(void)
{
	/* Another thread of the parent may have held any of these when it
	 * forked; it does not exist in the child, which would wait for ever
	 * (the request table's lock).  The locks of x, pool_lock among them,
	 * and the arena's are not the child's copies but the ring's: a parent thread that holds one is
	 * still running and will let go, so the child waits for it (spin.h);
	 * the threads that wait (x->cq_waiters) still wait, in the parent. */
	for_each_slot(r) {
		atomic_store(&r->reqs.lock.v, 0);
		/* A queue of made CQEs in the heap is the parent's to move. */
		r->synth_owner = 0;
		if (!r->x)
			continue;
		__atomic_store_n(&r->x->forked, 1, __ATOMIC_RELAXED);
		bufring_after_fork(r);
		/* Its requests are tagged with a number of its own; the ones
		 * it inherited are the parent's, which answers their CQEs. */
		unsigned proc = atomic_fetch_add(&r->x->nprocs, 1) + 1;
		if (proc < REQ_PROC_ANY) {
			r->x->proc_pid[proc] = (int)sys_call3(SYS_getpid, 0, 0, 0);
			r->reqs.proc = proc;
		} else {
			r->reqs.proc = REQ_PROC_ANY;
		}
	}
}
