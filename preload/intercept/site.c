#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "preload/intercept/site.h"

#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "preload/log.h"
#include "preload/sys.h"

static struct {
	int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
	int (*step)(unw_cursor_t *);
	int (*get_proc_name)(unw_cursor_t *, char *, size_t, unw_word_t *);
	int (*get_reg)(unw_cursor_t *, int, unw_word_t *);
	int (*getcontext)(unw_context_t *);
	const void *self_base, *self_end;
} unw;

static int find_own_text(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const void *probe = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *lo = (const char *)info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && (const char *)probe >= lo &&
		    (const char *)probe < lo + ph->p_memsz) {
			unw.self_base = lo;
			unw.self_end = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void site_init(void)
{
	dl_iterate_phdr(find_own_text, (void *)site_init);

	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	unw.init_local2 = (int (*)(unw_cursor_t *, unw_context_t *, int))dlsym(h, "_ULx86_64_init_local2");
	unw.step = (int (*)(unw_cursor_t *))dlsym(h, "_ULx86_64_step");
	unw.get_proc_name = (int (*)(unw_cursor_t *, char *, size_t, unw_word_t *))dlsym(h, "_ULx86_64_get_proc_name");
	unw.get_reg = (int (*)(unw_cursor_t *, int, unw_word_t *))dlsym(h, "_ULx86_64_get_reg");
	unw.getcontext = (int (*)(unw_context_t *))dlsym(h, "_Ux86_64_getcontext");
	if (!unw.init_local2 || !unw.step || !unw.get_proc_name || !unw.get_reg || !unw.getcontext) {
		unw.init_local2 = NULL;
		dlclose(h);
	}
}

int site_in_bufsel(const void *addr)
{
	return addr >= unw.self_base && addr < unw.self_end;
}

static size_t frame_name(unw_cursor_t *cur, unw_word_t ip, char *buf, size_t len)
{
	char sym[128];
	unw_word_t off = 0;
	Dl_info di;
	const char *obj = "?";
	if (dladdr((void *)ip, &di) && di.dli_fname) {
		obj = strrchr(di.dli_fname, '/');
		obj = obj ? obj + 1 : di.dli_fname;
		if (!*obj)
			obj = "main program";
	}
	if (unw.get_proc_name(cur, sym, sizeof(sym), &off) == 0)
		return (size_t)snprintf(buf, len, "%s+0x%lx (%s)", sym, (unsigned long)off, obj);
	return (size_t)snprintf(buf, len, "0x%lx (%s)", (unsigned long)ip, obj);
}

void site_describe(const struct call_site *cs, char *buf, size_t len)
{
	unw_context_t ctx;
	unw_cursor_t cur;
	size_t used = 0;
	snprintf(buf, len, "?");
	if (cs->path == PATH_PATCH) {
		/* The stub has no unwind information: name the site alone. */
		Dl_info di;
		const char *obj = "?";
		if (dladdr(cs->ret_addr, &di) && di.dli_fname) {
			obj = strrchr(di.dli_fname, '/');
			obj = obj ? obj + 1 : di.dli_fname;
		}
		if (di.dli_sname)
			snprintf(buf, len, "%s+0x%lx (%s)", di.dli_sname,
				 (unsigned long)((const char *)cs->ret_addr - (const char *)di.dli_saddr), obj);
		else
			snprintf(buf, len, "%p (%s)", cs->ret_addr, obj);
		return;
	}
	if (!unw.init_local2)
		return;
	if (cs->ucontext) {
		if (unw.init_local2(&cur, (unw_context_t *)cs->ucontext, UNW_INIT_SIGNAL_FRAME))
			return;
	} else {
		unw.getcontext(&ctx);
		if (unw.init_local2(&cur, &ctx, 0))
			return;
	}
	for (int frames = 0, depth = 0; frames < 3 && depth < 32 && used + 8 < len; depth++) {
		unw_word_t ip;
		if (unw.get_reg(&cur, UNW_REG_IP, &ip) || !ip)
			break;
		if (!site_in_bufsel((void *)ip)) {
			if (frames++)
				used += (size_t)snprintf(buf + used, len - used, " <- ");
			if (used < len)
				used += frame_name(&cur, ip, buf + used, len - used);
		}
		if (unw.step(&cur) <= 0)
			break;
	}
}

void site_backtrace(void *ucontext, const char *prefix)
{
	unw_cursor_t cur;
	char line[320];
	if (!unw.init_local2 || unw.init_local2(&cur, (unw_context_t *)ucontext, UNW_INIT_SIGNAL_FRAME))
		return;
	for (int depth = 0; depth < 32; depth++) {
		unw_word_t ip;
		if (unw.get_reg(&cur, UNW_REG_IP, &ip) || !ip)
			break;
		int n = snprintf(line, sizeof(line), "%s #%d ", prefix, depth);
		n += (int)frame_name(&cur, ip, line + n, sizeof(line) - (size_t)n - 1);
		if (n > (int)sizeof(line) - 2)
			n = (int)sizeof(line) - 2;
		line[n++] = '\n';
		sys_write(2, line, (size_t)n);
		if (unw.step(&cur) <= 0)
			break;
	}
}
