/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A strict JSON (RFC 8259) parser for the tests of gpsctl --json: the
 * guests have no python.  json_parse() builds a tree of struct jv, or
 * returns NULL for anything that is not exactly one JSON value (with
 * whitespace around it); numbers keep their text so that a u64 is read
 * back exactly (jv_u64).  Lookups return NULL when a key or index is
 * missing or the value is of another type, so that chains of them can be
 * asserted once at the end.
 */
#ifndef GPS_JSON_H
#define GPS_JSON_H

#include <stdlib.h>
#include <string.h>

enum jv_type { JV_NULL, JV_FALSE, JV_TRUE, JV_NUM, JV_STR, JV_ARR, JV_OBJ };

struct jv {
	enum jv_type type;
	char *key;		/* member of an object: its name */
	char *text;		/* JV_STR: the string; JV_NUM: the number */
	struct jv *child;	/* JV_ARR, JV_OBJ: first element or member */
	struct jv *next;	/* next element or member */
};

struct jv_parser {
	const char *p;
	int depth;
};

static inline void jv_free(struct jv *v)
{
	while (v) {
		struct jv *next = v->next;

		jv_free(v->child);
		free(v->key);
		free(v->text);
		free(v);
		v = next;
	}
}

static inline void jv_ws(struct jv_parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
	       *ps->p == '\r')
		ps->p++;
}

static inline int jv_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string at ps->p (on its quote): malloc'd, UTF-8; NULL if invalid. */
static inline char *jv_string(struct jv_parser *ps)
{
	size_t len = 0, cap = 16;
	char *s = malloc(cap);
	unsigned int u;
	int i, h;

	if (!s || *ps->p++ != '"')
		goto bad;
	for (;;) {
		unsigned char c = *ps->p++;
		char out[4];
		int n = 1;

		if (c == '"')
			break;
		if (c < 0x20)
			goto bad;		/* control characters, and NUL */
		out[0] = c;
		if (c == '\\') {
			c = *ps->p++;
			switch (c) {
			case '"': case '\\': case '/': out[0] = c; break;
			case 'b': out[0] = '\b'; break;
			case 'f': out[0] = '\f'; break;
			case 'n': out[0] = '\n'; break;
			case 'r': out[0] = '\r'; break;
			case 't': out[0] = '\t'; break;
			case 'u':
				for (u = 0, i = 0; i < 4; i++) {
					h = jv_hex(*ps->p++);
					if (h < 0)
						goto bad;
					u = u << 4 | h;
				}
				if (u < 0x80) {
					out[0] = u;
				} else if (u < 0x800) {
					out[0] = 0xc0 | u >> 6;
					out[1] = 0x80 | (u & 0x3f);
					n = 2;
				} else {	/* surrogates kept as they are */
					out[0] = 0xe0 | u >> 12;
					out[1] = 0x80 | (u >> 6 & 0x3f);
					out[2] = 0x80 | (u & 0x3f);
					n = 3;
				}
				break;
			default:
				goto bad;
			}
		}
		if (len + n + 1 > cap) {
			char *t = realloc(s, cap *= 2);

			if (!t)
				goto bad;
			s = t;
		}
		memcpy(s + len, out, n);
		len += n;
	}
	s[len] = '\0';
	return s;
bad:
	free(s);
	return NULL;
}

static inline int jv_digits(struct jv_parser *ps)
{
	const char *start = ps->p;

	while (*ps->p >= '0' && *ps->p <= '9')
		ps->p++;
	return ps->p > start;
}

static inline struct jv *jv_value(struct jv_parser *ps);

static inline struct jv *jv_new(enum jv_type type)
{
	struct jv *v = calloc(1, sizeof(*v));

	if (v)
		v->type = type;
	return v;
}

/* The elements of an array or the members of an object. */
static inline struct jv *jv_items(struct jv_parser *ps, struct jv *v,
				   char close)
{
	struct jv **tail = &v->child;

	ps->p++;
	jv_ws(ps);
	if (*ps->p == close) {
		ps->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct jv *item;

		if (close == '}') {
			jv_ws(ps);
			if (*ps->p != '"')
				goto bad;
			key = jv_string(ps);
			if (!key)
				goto bad;
			jv_ws(ps);
			if (*ps->p++ != ':') {
				free(key);
				goto bad;
			}
		}
		item = jv_value(ps);
		if (!item) {
			free(key);
			goto bad;
		}
		item->key = key;
		*tail = item;
		tail = &item->next;
		jv_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p++ == close)
			return v;
		goto bad;
	}
bad:
	jv_free(v);
	return NULL;
}

static inline struct jv *jv_value(struct jv_parser *ps)
{
	const char *start;
	struct jv *v;

	jv_ws(ps);
	if (++ps->depth > 64)
		return NULL;
	switch (*ps->p) {
	case '{':
	case '[':
		v = jv_new(*ps->p == '{' ? JV_OBJ : JV_ARR);
		v = v ? jv_items(ps, v, *ps->p == '{' ? '}' : ']') : NULL;
		break;
	case '"':
		v = jv_new(JV_STR);
		if (v && !(v->text = jv_string(ps))) {
			jv_free(v);
			v = NULL;
		}
		break;
	case 't':
	case 'f':
	case 'n':
		v = NULL;
		if (!strncmp(ps->p, "true", 4))
			v = jv_new(JV_TRUE), ps->p += 4;
		else if (!strncmp(ps->p, "false", 5))
			v = jv_new(JV_FALSE), ps->p += 5;
		else if (!strncmp(ps->p, "null", 4))
			v = jv_new(JV_NULL), ps->p += 4;
		break;
	default:
		start = ps->p;
		if (*ps->p == '-')
			ps->p++;
		if (*ps->p == '0')
			ps->p++;
		else if (!jv_digits(ps))
			return NULL;
		if (*ps->p == '.') {
			ps->p++;
			if (!jv_digits(ps))
				return NULL;
		}
		if (*ps->p == 'e' || *ps->p == 'E') {
			ps->p++;
			if (*ps->p == '+' || *ps->p == '-')
				ps->p++;
			if (!jv_digits(ps))
				return NULL;
		}
		v = jv_new(JV_NUM);
		if (v && !(v->text = strndup(start, ps->p - start))) {
			jv_free(v);
			v = NULL;
		}
		break;
	}
	ps->depth--;
	return v;
}

/* One JSON value and nothing else but whitespace; NULL if not. */
static inline struct jv *json_parse(const char *text)
{
	struct jv_parser ps = { .p = text };
	struct jv *v = jv_value(&ps);

	if (!v)
		return NULL;
	jv_ws(&ps);
	if (*ps.p) {
		jv_free(v);
		return NULL;
	}
	return v;
}

/* Member @key of object @v. */
static inline struct jv *jv_get(const struct jv *v, const char *key)
{
	struct jv *m;

	if (!v || v->type != JV_OBJ)
		return NULL;
	for (m = v->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

/* Element @i of array @v. */
static inline struct jv *jv_at(const struct jv *v, int i)
{
	struct jv *e;

	if (!v || v->type != JV_ARR)
		return NULL;
	for (e = v->child; e && i; e = e->next)
		i--;
	return e;
}

/* Elements of an array, members of an object; -1 for anything else. */
static inline int jv_len(const struct jv *v)
{
	struct jv *e;
	int n = 0;

	if (!v || (v->type != JV_ARR && v->type != JV_OBJ))
		return -1;
	for (e = v->child; e; e = e->next)
		n++;
	return n;
}

/* A non-negative integer, exactly; @bad if @v is anything else. */
static inline unsigned long long jv_u64(const struct jv *v,
						unsigned long long bad)
{
	char *end;
	unsigned long long n;

	if (!v || v->type != JV_NUM || v->text[0] == '-')
		return bad;
	n = strtoull(v->text, &end, 10);
	return *end ? bad : n;
}

static inline double jv_num(const struct jv *v, double bad)
{
	return v && v->type == JV_NUM ? strtod(v->text, NULL) : bad;
}

static inline const char *jv_str(const struct jv *v)
{
	return v && v->type == JV_STR ? v->text : NULL;
}

#endif /* GPS_JSON_H */
