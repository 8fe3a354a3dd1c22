/*
 * The memory of a buffer ring registered in the program's own pages stays
 * the program's, as natively: the kernel pins the pages and reads them,
 * and bufsel, which keeps such a ring itself on a kernel without rings,
 * moves them into memory it maps twice (preload/select/bufring.c).  A fork's
 * child gets a copy of its parent's pages, whose writes the parent never
 * sees, while the ring is registered and after; a ring in the middle of a
 * larger mapping leaves its neighbours alone; after the unregistration
 * the pages hold what they held.  Each line prints what the program sees.
 */
#include "test/prog/bs_rings.h"

#include <sys/wait.h>

#define ENTRIES 8
#define PAGE 4096

/* In a child: write a word into the page, exit.  The parent then looks. */
static void child_writes(volatile uint32_t *word, uint32_t v)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		*word = v;
		_exit(*word == v ? 0 : 1);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("child: status %d", st);
}

int main(void)
{
	struct io_uring ring;
	int ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0)
		die("queue_init: %s", strerror(-ret));
	/* Three pages; the ring is the middle one. */
	char *area = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(area, 'a', PAGE);
	memset(area + 2 * PAGE, 'c', PAGE);
	struct io_uring_buf_ring *br = (void *)(area + PAGE);
	io_uring_buf_ring_init(br);
	ret = reg_ring_on(ring.ring_fd, (uintptr_t)br, ENTRIES, 1, 0);
	note("register in the middle page: %d", ret);
	struct arena a = arena_new(16, ENTRIES);
	ring_add(br, ENTRIES, &a, 0, 2);
	note("neighbours: '%c' '%c'", area[PAGE - 1], area[2 * PAGE]);

	/* The last entry's spare word, which no selection reads. */
	volatile uint32_t *word = (volatile uint32_t *)&br->bufs[ENTRIES - 1].len;
	*word = 7;
	child_writes(word, 99);
	note("registered: after a child wrote 99, the parent reads %u", *word);

	int fd = temp_file("pinned");
	struct io_uring_sqe *sqe = get_sqe(&ring);
	io_uring_prep_read(sqe, fd, NULL, 16, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = 1;
	sqe->user_data = 1;
	submit_expect(&ring, 1);
	reap_print(&ring, 1);

	ret = unreg_ring_on(ring.ring_fd, 1);
	note("unregister: %d", ret);
	note("after: tail %u, word %u, neighbours '%c' '%c'", br->tail, *word, area[PAGE - 1], area[2 * PAGE]);
	child_writes(word, 55);
	note("unregistered: after a child wrote 55, the parent reads %u", *word);
	close(fd);
	io_uring_queue_exit(&ring);
	return 0;
}
