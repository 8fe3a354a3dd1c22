/*
 * Buffer rings for the integration programs, written out with raw
 * io_uring_register calls: Debian's liburing (2.3) predates the flags of
 * struct io_uring_buf_reg and IORING_REGISTER_PBUF_STATUS.  Each program
 * defines reg_call, reg_ring, unreg_ring and show_status on its own ring
 * with the _on forms.
 */
#ifndef BUFSEL_TEST_BS_RINGS_H
#define BUFSEL_TEST_BS_RINGS_H

#include "test/prog/bs_bufs.h"

#include <sys/mman.h>

#define REG_PBUF_STATUS 26
#define RING_MMAP 1u
#define OFF_PBUF_RING 0x80000000ULL
#define OFF_PBUF_SHIFT 16

struct reg {			/* struct io_uring_buf_reg, as 6.18 has it */
	uint64_t ring_addr;
	uint32_t ring_entries;
	uint16_t bgid;
	uint16_t flags;
	uint32_t min_left;
	uint32_t resv[5];
};

struct status {			/* struct io_uring_buf_status */
	uint32_t buf_group;
	uint32_t head;
	uint32_t resv[8];
};

static inline int reg_call_on(int fd, unsigned opcode, void *arg, unsigned nr)
{
	int ret = (int)syscall(__NR_io_uring_register, fd, opcode, arg, nr);
	return ret < 0 ? -errno : ret;
}

static inline int reg_ring_on(int fd, uint64_t addr, uint32_t entries, uint16_t bgid, uint16_t flags)
{
	struct reg r = { .ring_addr = addr, .ring_entries = entries, .bgid = bgid, .flags = flags };
	return reg_call_on(fd, IORING_REGISTER_PBUF_RING, &r, 1);
}

static inline int unreg_ring_on(int fd, uint16_t bgid)
{
	struct reg r = { .bgid = bgid };
	return reg_call_on(fd, IORING_UNREGISTER_PBUF_RING, &r, 1);
}

static inline void show_status_on(int fd, uint32_t bgid)
{
	struct status st = { .buf_group = bgid };
	int ret = reg_call_on(fd, REG_PBUF_STATUS, &st, 1);
	note("status of %u: %d head %u", bgid, ret, ret ? 0 : st.head);
}

static inline void *ring_mem(uint32_t entries)
{
	size_t len = (entries * sizeof(struct io_uring_buf) + 4095) & ~(size_t)4095;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	return m;
}

/* Publishes bids first..first+n-1 of a at the ring's tail. */
static inline void ring_add(struct io_uring_buf_ring *br, uint32_t entries, const struct arena *a,
		     unsigned first, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		io_uring_buf_ring_add(br, arena_buf(a, first + i), a->len, (unsigned short)(first + i),
				      io_uring_buf_ring_mask(entries), (int)i);
	io_uring_buf_ring_advance(br, (int)n);
}


/* A regular file, already unlinked, holding s. */
static inline int temp_file(const char *s)
{
	char path[] = "/tmp/bs_ring.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp: %s", strerror(errno));
	unlink(path);
	write_all(fd, s, strlen(s));
	return fd;
}

/* A ring of entries in its own pages, registered on bgid with its tail at 0. */
static inline struct io_uring_buf_ring *ring_new(int fd, uint16_t bgid, uint32_t entries)
{
	struct io_uring_buf_ring *br = ring_mem(entries);
	io_uring_buf_ring_init(br);
	int ret = reg_ring_on(fd, (uintptr_t)br, entries, bgid, 0);
	if (ret)
		die("register ring %u: %s", bgid, strerror(-ret));
	return br;
}

#endif
