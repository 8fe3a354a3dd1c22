/*
 * Whether the program still maps a ring's shadow, as /proc/self/maps tells:
 * a mapping is the shadow's by inode and device together.  Inode numbers
 * repeat across devices (a memfd's count from 1 on some kernels), and a
 * match on the inode alone once kept a closed ring for good.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/shadow/shadow.h"

struct memfd {
	int fd;
	void *own, *view;
	struct stat st;
};

static struct memfd memfd_two_views(void)
{
	struct memfd m;
	m.fd = memfd_create("shadow_maps", MFD_CLOEXEC);
	cr_assert(m.fd >= 0);
	cr_assert_eq(ftruncate(m.fd, 4096), 0);
	cr_assert_eq(fstat(m.fd, &m.st), 0);
	m.own = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
	m.view = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
	cr_assert(m.own != MAP_FAILED && m.view != MAP_FAILED);
	return m;
}

/* A file this process maps, other than m's: its path's inode and device. */
static void other_mapped_file(const struct memfd *m, struct stat *st)
{
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert(f);
	char line[512];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		if (!path)
			continue;
		path[strcspn(path, "\n")] = 0;
		found = !stat(path, st) && st->st_dev != m->st.st_dev;
	}
	fclose(f);
	cr_assert(found, "no mapped file in /proc/self/maps");
}

Test(shadow_maps, the_program_view_is_found_and_bufsel_own_is_not)
{
	struct memfd m = memfd_two_views();
	struct shadow_query q = { m.own, m.st.st_ino, m.st.st_dev, 0 };
	cr_assert_eq(shadow_mapped_elsewhere_n(&q, 1), 0);
	cr_expect_eq(q.elsewhere, 1);

	munmap(m.view, 4096);
	cr_assert_eq(shadow_mapped_elsewhere_n(&q, 1), 0);
	cr_expect_eq(q.elsewhere, 0, "only bufsel's own mapping is left");
	munmap(m.own, 4096);
	close(m.fd);
}

Test(shadow_maps, a_mapping_with_the_same_inode_on_another_device_is_not_the_shadow)
{
	struct memfd m = memfd_two_views();
	munmap(m.view, 4096);
	struct stat other;
	other_mapped_file(&m, &other);

	/* A shadow whose inode number is that of a mapped library's. */
	struct shadow_query q = { m.own, other.st_ino, m.st.st_dev, 0 };
	cr_assert_eq(shadow_mapped_elsewhere_n(&q, 1), 0);
	cr_expect_eq(q.elsewhere, 0, "inode %lu matched on device %lx, the shadow's is %lx",
		     (unsigned long)other.st_ino, (unsigned long)other.st_dev, (unsigned long)m.st.st_dev);

	/* The same inode on its own device is found: the device is read right. */
	q = (struct shadow_query){ m.own, other.st_ino, other.st_dev, 0 };
	cr_assert_eq(shadow_mapped_elsewhere_n(&q, 1), 0);
	cr_expect_eq(q.elsewhere, 1, "the mapped file (device %lx) was not found", (unsigned long)other.st_dev);

	struct shadow sh = { .mem = m.own, .mem_ino = other.st_ino, .mem_dev = m.st.st_dev };
	cr_expect_eq(shadow_mapped_elsewhere(&sh), 0);
	shadow_note_view(&sh, (uintptr_t)m.own, (uintptr_t)m.own + 4096);
	cr_expect_eq(shadow_view_intact(&sh), 0, "a view of another file with the same inode number is not intact");
	munmap(m.own, 4096);
	close(m.fd);
}
