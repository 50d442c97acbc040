/* SPDX-License-Identifier: MIT */
/*
 * t_stderr.h - catch what the library writes on stderr during a test:
 * t_stderr_catch() sends fd 2 to a temporary file, t_stderr_said() puts
 * the real stderr back (so the harness's own messages reach it) and
 * returns what was written meanwhile.
 */
#ifndef T_STDERR_H
#define T_STDERR_H

#include <stdio.h>
#include <unistd.h>

struct t_stderr {
	FILE *f;		/* stderr while caught */
	int saved;		/* the real stderr */
};

static inline int t_stderr_catch(struct t_stderr *c)
{
	c->f = tmpfile();
	if (!c->f)
		return -1;
	fflush(stderr);
	c->saved = dup(2);
	if (c->saved < 0 || dup2(fileno(c->f), 2) != 2)
		return -1;
	return 0;
}

static inline void t_stderr_said(struct t_stderr *c, char *buf, size_t size)
{
	size_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->f);
	n = fread(buf, 1, size - 1, c->f);
	buf[n] = 0;
	fclose(c->f);
}

static inline int t_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#endif /* T_STDERR_H */
