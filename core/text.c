/* SPDX-License-Identifier: MIT */
/* text.c - text that others supplied, made safe to print; see text.h. */
#include "core/text.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/*
 * Length of the well-formed UTF-8 character at s (RFC 3629), its code
 * point in *cp; or 0.  Overlong forms are refused: E0 82 9B would be a
 * CSI to a lenient decoder.  The NUL that ends s is never a continuation
 * byte, so a character cut by the end is refused as well.
 */
static size_t
utf8_char(const unsigned char *s, uint32_t *cp)
{
	uint32_t v, min;
	size_t n;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, v = s[0] & 0x1fu, min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3, v = s[0] & 0x0fu, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, v = s[0] & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3fu);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* C0, DEL and C1: what a terminal may act on instead of showing. */
static int
is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/*
 * The decision, for the next character of s: writes what stands for it
 * into out (1 to 4 bytes) and returns that length; *used is how many
 * bytes of s it stands for.
 */
static size_t
next(const unsigned char *s, enum mstat_text_rule rule, char out[4],
     size_t *used)
{
	uint32_t cp;
	size_t n = utf8_char(s, &cp);

	if (n == 0) {
		*used = 1;
		out[0] = '?';
		return 1;
	}
	*used = n;
	if (is_control(cp)) {
		out[0] = '?';
		return 1;
	}
	if (rule == MSTAT_TEXT_QUOTED && (cp == '"' || cp == '\\')) {
		out[0] = '\\';
		out[1] = (char)cp;
		return 2;
	}
	memcpy(out, s, n);
	return n;
}

size_t
mstat_text_escape(char *dst, size_t len, const char *src,
		  enum mstat_text_rule rule)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t k = 0;

	if (len == 0)
		return 0;
	while (*s) {
		char out[4];
		size_t used, n = next(s, rule, out, &used);
		if (k + n >= len)
			break;
		memcpy(dst + k, out, n);
		k += n;
		s += used;
	}
	dst[k] = '\0';
	return k;
}

int
mstat_text_put(FILE *f, const char *src, enum mstat_text_rule rule)
{
	const unsigned char *s = (const unsigned char *)src;

	while (*s) {
		char out[4];
		size_t used, n = next(s, rule, out, &used);
		if (fwrite(out, 1, n, f) != n)
			return -1;
		s += used;
	}
	return 0;
}

void
mstat_text_say(const char *prog, const char *fmt, ...)
{
	char raw[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: ", prog);
	mstat_text_put(stderr, raw, MSTAT_TEXT_PLAIN);
	fputc('\n', stderr);
}
