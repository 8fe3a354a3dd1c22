#define _GNU_SOURCE	/* strerrordesc_np */
#include "preload/log.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

_Static_assert(sizeof(size_t) == sizeof(uintmax_t) && sizeof(ptrdiff_t) == sizeof(intmax_t),
	       "the formatter reads size_t and ptrdiff_t as the max types");
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "preload/sys.h"

#define LOG_LINES_PER_SEC 2000

static _Atomic long log_window;		/* the second the count below belongs to */
static atomic_int log_count;

static int log_admit(void)
{
	struct timespec ts;
	if (sys_call3(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, (long)&ts, 0))
		return 1;
	long now = (long)ts.tv_sec, seen = atomic_load_explicit(&log_window, memory_order_relaxed);
	if (now != seen && atomic_compare_exchange_strong(&log_window, &seen, now))
		atomic_store(&log_count, 0);
	int n = atomic_fetch_add_explicit(&log_count, 1, memory_order_relaxed);
	if (n == LOG_LINES_PER_SEC) {
		static const char msg[] = "bufsel: log: more than 2000 lines this second, the rest are dropped\n";
		sys_write(2, msg, sizeof(msg) - 1);
	}
	return n < LOG_LINES_PER_SEC;
}

/*
 * printf's formatting without libc's printf, which is not async-signal-safe
 * (POSIX; glibc's can allocate for wide strings, positional arguments or
 * long widths) and log lines come from the SIGSYS handler.  What bufsel's
 * formats use: flags - 0 # + and space, width and precision (also *),
 * lengths hh h l ll z j t, and d i u x X o p s c %.  Output is cut at the
 * buffer's end.
 */
struct out {
	char *p, *end;
};

static void put(struct out *o, char c)
{
	if (o->p < o->end)
		*o->p++ = c;
}

static void put_pad(struct out *o, char c, int n)
{
	while (n-- > 0)
		put(o, c);
}

struct spec {
	int left, zero, alt, plus, space, width, prec;
};

static void put_str(struct out *o, const struct spec *sp, const char *s, size_t n)
{
	int pad = sp->width > (int)n ? sp->width - (int)n : 0;
	if (!sp->left)
		put_pad(o, ' ', pad);
	for (size_t i = 0; i < n; i++)
		put(o, s[i]);
	if (sp->left)
		put_pad(o, ' ', pad);
}

static void put_num(struct out *o, const struct spec *sp, uintmax_t v, int neg, unsigned base, int upper,
		    const char *prefix)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char buf[24];
	int n = 0;
	for (uintmax_t rest = v; rest; rest /= base)
		buf[n++] = digits[rest % base];
	int prec = sp->prec < 0 ? 1 : sp->prec;
	int zeros = prec > n ? prec - n : 0;
	if (base == 8 && sp->alt && !zeros && (n == 0 || buf[n - 1] != '0'))
		zeros = 1;
	char sign = neg ? '-' : sp->plus ? '+' : sp->space ? ' ' : 0;
	int plen = (sign != 0) + (int)(prefix ? 2 : 0);
	int len = plen + zeros + n;
	int pad = sp->width > len ? sp->width - len : 0;
	if (sp->zero && !sp->left && sp->prec < 0) {
		zeros += pad;
		pad = 0;
	}
	if (!sp->left)
		put_pad(o, ' ', pad);
	if (sign)
		put(o, sign);
	if (prefix) {
		put(o, prefix[0]);
		put(o, prefix[1]);
	}
	put_pad(o, '0', zeros);
	while (n)
		put(o, buf[--n]);
	if (sp->left)
		put_pad(o, ' ', pad);
}

static int read_int(const char **f, va_list *ap)
{
	if (**f == '*') {
		(*f)++;
		return va_arg(*ap, int);
	}
	int v = 0;
	while (**f >= '0' && **f <= '9')
		v = v * 10 + (*(*f)++ - '0');
	return v;
}

enum len { L_INT, L_CHAR, L_SHORT, L_LONG, L_LLONG, L_SIZE, L_MAX, L_PTRDIFF };

static uintmax_t arg_unsigned(enum len l, va_list *ap)
{
	switch (l) {
	case L_CHAR: return (unsigned char)va_arg(*ap, unsigned);
	case L_SHORT: return (unsigned short)va_arg(*ap, unsigned);
	case L_LONG: return va_arg(*ap, unsigned long);
	case L_LLONG: return va_arg(*ap, unsigned long long);
	case L_SIZE:	/* size_t is uintmax_t's width here */
	case L_MAX: return va_arg(*ap, uintmax_t);
	case L_PTRDIFF: return (uintmax_t)va_arg(*ap, ptrdiff_t);
	default: return va_arg(*ap, unsigned);
	}
}

static intmax_t arg_signed(enum len l, va_list *ap)
{
	switch (l) {
	case L_CHAR: return (signed char)va_arg(*ap, int);
	case L_SHORT: return (short)va_arg(*ap, int);
	case L_LONG: return va_arg(*ap, long);
	case L_LLONG: return va_arg(*ap, long long);
	case L_SIZE: return (intmax_t)va_arg(*ap, size_t);
	case L_MAX:	/* and ptrdiff_t intmax_t's */
	case L_PTRDIFF: return va_arg(*ap, intmax_t);
	default: return va_arg(*ap, int);
	}
}

static enum len read_len(const char **f)
{
	switch (**f) {
	case 'h':
		(*f)++;
		if (**f == 'h') {
			(*f)++;
			return L_CHAR;
		}
		return L_SHORT;
	case 'l':
		(*f)++;
		if (**f == 'l') {
			(*f)++;
			return L_LLONG;
		}
		return L_LONG;
	case 'z': (*f)++; return L_SIZE;
	case 'j': (*f)++; return L_MAX;
	case 't': (*f)++; return L_PTRDIFF;
	default: return L_INT;
	}
}

/* Returns the length written (no terminating NUL). */
static size_t format(char *buf, size_t len, const char *f, va_list ap_in)
{
	struct out o = { buf, buf + len };
	va_list ap;
	va_copy(ap, ap_in);
	for (; *f; f++) {
		if (*f != '%') {
			put(&o, *f);
			continue;
		}
		struct spec sp = { .prec = -1 };
		for (;; f++) {
			if (f[1] == '-') sp.left = 1;
			else if (f[1] == '0') sp.zero = 1;
			else if (f[1] == '#') sp.alt = 1;
			else if (f[1] == '+') sp.plus = 1;
			else if (f[1] == ' ') sp.space = 1;
			else break;
		}
		f++;
		sp.width = read_int(&f, &ap);
		if (sp.width < 0) {
			sp.left = 1;
			sp.width = -sp.width;
		}
		if (*f == '.') {
			f++;
			sp.prec = read_int(&f, &ap);
		}
		enum len l = read_len(&f);
		switch (*f) {
		case 'd':
		case 'i': {
			intmax_t v = arg_signed(l, &ap);
			put_num(&o, &sp, v < 0 ? -(uintmax_t)v : (uintmax_t)v, v < 0, 10, 0, NULL);
			break;
		}
		case 'u': put_num(&o, &sp, arg_unsigned(l, &ap), 0, 10, 0, NULL); break;
		case 'o': put_num(&o, &sp, arg_unsigned(l, &ap), 0, 8, 0, NULL); break;
		case 'x':
		case 'X': {
			uintmax_t v = arg_unsigned(l, &ap);
			put_num(&o, &sp, v, 0, 16, *f == 'X', sp.alt && v ? (*f == 'X' ? "0X" : "0x") : NULL);
			break;
		}
		case 'p': {
			void *v = va_arg(ap, void *);
			if (!v) {
				put_str(&o, &sp, "(nil)", 5);
				break;
			}
			sp.alt = 1;
			put_num(&o, &sp, (uintptr_t)v, 0, 16, 0, "0x");
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			size_t n = 0;
			while (s[n] && (sp.prec < 0 || n < (size_t)sp.prec))
				n++;
			put_str(&o, &sp, s, n);
			break;
		}
		case 'c': {
			char c = (char)va_arg(ap, int);
			put_str(&o, &sp, &c, 1);
			break;
		}
		case '%': put(&o, '%'); break;
		default:
			/* Not a conversion bufsel uses: shown as written, no argument taken. */
			put(&o, '%');
			if (*f)
				put(&o, *f);
			else
				f--;
			break;
		}
	}
	va_end(ap);
	return (size_t)(o.p - buf);
}

static void log_line(const char *fmt, va_list ap)
{
	static const char prefix[] = "bufsel: ";
	char line[512];
	memcpy(line, prefix, sizeof(prefix) - 1);
	size_t n = sizeof(prefix) - 1;
	n += format(line + n, sizeof(line) - n - 1, fmt, ap);
	line[n++] = '\n';
	sys_write(2, line, n);
}

void bufsel_log(enum bufsel_log_level level, const char *fmt, ...)
{
	if (!bufsel_log_on(level) || !log_admit())
		return;
	va_list ap;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

void bufsel_log_uncapped(enum bufsel_log_level level, const char *fmt, ...)
{
	if (!bufsel_log_on(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

int log_first(enum log_once what)
{
	unsigned bit = 1u << what;
	return !(atomic_fetch_or_explicit(&bufsel.warned, bit, memory_order_relaxed) & bit);
}

const char *log_errname(int err)
{
	const char *desc = strerrordesc_np(-err);
	return desc ? desc : "Unknown error";
}
