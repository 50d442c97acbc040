// SPDX-License-Identifier: GPL-2.0
/*
 * gpsctl's output: a JSON writer (RFC 8259: strings escaped, numbers in
 * decimal, commas and indentation placed by the writer so that the
 * commands only say what goes where) and text tables whose columns are
 * as wide as their widest cell.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpsctl.h"

void json_begin(struct json *j, FILE *f, int pretty)
{
	j->f = f;
	j->pretty = pretty;
	j->depth = 0;
	j->need_comma = 0;
}

/* Before a value: the comma of the previous one, indentation, the key. */
static void json_member(struct json *j, const char *key)
{
	const char *p;

	if (j->need_comma)
		fputc(',', j->f);
	if (j->pretty && j->depth)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	else if (j->need_comma)
		fputc(' ', j->f);
	j->need_comma = 1;
	if (!key)
		return;
	fputc('"', j->f);
	for (p = key; *p; p++)
		fputc(*p, j->f);	/* keys are gpsctl's own: plain */
	fputs("\": ", j->f);
}

static void json_open(struct json *j, const char *key, char c)
{
	json_member(j, key);
	fputc(c, j->f);
	j->depth++;
	j->need_comma = 0;
}

static void json_close(struct json *j, char c)
{
	int empty = !j->need_comma;

	j->depth--;
	if (j->pretty && !empty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(c, j->f);
	j->need_comma = 1;
}

void json_obj(struct json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_obj_end(struct json *j)
{
	json_close(j, '}');
}

void json_arr(struct json *j, const char *key)
{
	json_open(j, key, '[');
}

void json_arr_end(struct json *j)
{
	json_close(j, ']');
}

void json_int(struct json *j, const char *key, long long v)
{
	json_member(j, key);
	fprintf(j->f, "%lld", v);
}

void json_uint(struct json *j, const char *key, uint64_t v)
{
	json_member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

/* Rates: three decimals are plenty; never "nan" or "inf" (not JSON). */
void json_double(struct json *j, const char *key, double v)
{
	json_member(j, key);
	if (v != v || v > 1e300 || v < -1e300)
		v = 0;
	fprintf(j->f, "%.3f", v);
}

void json_str(struct json *j, const char *key, const char *s)
{
	const unsigned char *p;

	json_member(j, key);
	fputc('"', j->f);
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

void json_null(struct json *j, const char *key)
{
	json_member(j, key);
	fputs("null", j->f);
}

/* After the outermost value: a newline (one document per line or file). */
void json_end(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

void table_init(struct table *t, int cols)
{
	t->cols = cols;
	t->left = 1;		/* the first column: names */
	t->rows = 0;
	t->cell = NULL;
}

void table_add(struct table *t, const char *const *cells)
{
	char **cell = realloc(t->cell, sizeof(*cell) * t->cols * (t->rows + 1));
	int c;

	if (!cell) {
		perror("gpsctl");
		exit(1);
	}
	t->cell = cell;
	for (c = 0; c < t->cols; c++) {
		cell[t->rows * t->cols + c] = strdup(cells[c] ? cells[c] : "");
		if (!cell[t->rows * t->cols + c]) {
			perror("gpsctl");
			exit(1);
		}
	}
	t->rows++;
}

void table_print(const struct table *t, FILE *f)
{
	int r, c, w, width[t->cols > 0 ? t->cols : 1];

	for (c = 0; c < t->cols; c++) {
		width[c] = 0;
		for (r = 0; r < t->rows; r++) {
			w = strlen(t->cell[r * t->cols + c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	for (r = 0; r < t->rows; r++) {
		for (c = 0; c < t->cols; c++) {
			const char *s = t->cell[r * t->cols + c];

			if (c)
				fputs("  ", f);
			if (c == t->cols - 1 && !*s)
				;	/* no trailing blanks */
			else if (!(t->left >> c & 1))
				fprintf(f, "%*s", width[c], s);
			else if (c == t->cols - 1)
				fputs(s, f);	/* no trailing blanks */
			else
				fprintf(f, "%-*s", width[c], s);
		}
		fputc('\n', f);
	}
}

void table_free(struct table *t)
{
	int i;

	for (i = 0; i < t->rows * t->cols; i++)
		free(t->cell[i]);
	free(t->cell);
	t->cell = NULL;
	t->rows = 0;
}

/* 1536 -> "1.5 KiB"; exact bytes below 1 KiB. */
const char *fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}
