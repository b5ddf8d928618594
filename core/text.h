/* SPDX-License-Identifier: MIT */
/*
 * text.h - text that others supplied, made safe to print.
 *
 * A process's name is whatever it wrote into its segment (any 63 bytes),
 * and anyone of the same user can give a file in /dev/shm any name; both
 * reach terminals, logs, JSON and OpenMetrics.  This is the one place
 * that decides what of such text is printed as it is:
 *
 *   - a character of valid UTF-8 that is not a control character is kept,
 *     so names in any script stay readable;
 *   - a control character (C0: U+0000..U+001F, DEL: U+007F, C1:
 *     U+0080..U+009F, which terminals obey as well: U+009B is CSI) becomes
 *     one '?';
 *   - each byte that is not part of a valid UTF-8 character (a stray or
 *     missing continuation byte, an overlong form, a surrogate, a value
 *     above U+10FFFF) becomes one '?'.
 *
 * '?' rather than a visible escape such as \x1b: one byte stands for one
 * character, so the result is never longer than what it replaces (names
 * keep their 63-byte bound and their columns), and an escape would need
 * every '\' of an ordinary name escaped too, or be mistaken for one.
 * JSON and OpenMetrics replace the same way, so a name reads the same in
 * every output, and a JSON row and a labelled sample can be matched by it.
 *
 * MSTAT_TEXT_QUOTED also writes '"' and '\' as \" and \\: that is all a
 * JSON string and an OpenMetrics label value need once no control
 * character is left (a line feed has become '?', not "\n").
 *
 * mstat-top and mstat-run share this; it depends on nothing but libc.
 */
#ifndef MSTAT_CORE_TEXT_H
#define MSTAT_CORE_TEXT_H

#include <stddef.h>
#include <stdio.h>

enum mstat_text_rule {
	MSTAT_TEXT_PLAIN,   /* a terminal, a line on stderr, a table cell */
	MSTAT_TEXT_QUOTED,  /* between the quotes of a JSON string or of an
			     * OpenMetrics label value */
};

/*
 * Copies `src` into `dst` (`len` bytes with the NUL) by `rule`, stopping
 * before a character or escape that does not fit whole: the result is
 * valid UTF-8 even when cut.  Returns its length.  The plain rule is
 * idempotent and never lengthens text.
 */
size_t mstat_text_escape(char *dst, size_t len, const char *src,
			 enum mstat_text_rule rule);

/* Writes `src` to `f` by `rule`, whole.  0, or -1 if the stream failed. */
int mstat_text_put(FILE *f, const char *src, enum mstat_text_rule rule);

/* One line on stderr, "PROG: " and the formatted text by the plain rule:
 * a line that may quote an argument or what a segment says is shown, not
 * obeyed, by the terminal. */
void mstat_text_say(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* MSTAT_CORE_TEXT_H */
