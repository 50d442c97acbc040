// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the driver's history ring, /sys/kernel/debug/gps/history
 * (modules built with CONFIG_GPS_DEBUG; skipped elsewhere).  One store
 * through device 0's view and a fence of device 0 must leave, for that
 * GPS page and in this order: the fence starting on device 0, the write
 * fault of view 0, the harvest's write-protection of the small page, its
 * diff (one block changed), the push into device 1's replica, and the
 * fence's end.  The filter shows one GPS page and not its neighbour;
 * "off" stops recording.  Knobs are restored; recording is left on.
 */
#include "kselftest_harness.h"
#include "gps_test.h"

#define GP		GPS_PAGE_64K
#define SUB		1		/* the small page stored to */

/* One parsed line of the history file. */
struct hline {
	char type[32];
	unsigned long long handle;
	unsigned long gidx;
	unsigned int sub;
	const char *rest;		/* what follows, in the buffer */
};

/* Split @text into lines, parsed into @out (at most @max); their number. */
static int hparse(char *text, struct hline *out, int max)
{
	char *line, *save = NULL;
	int n = 0, pos;

	for (line = strtok_r(text, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		struct hline *h = &out[n];

		pos = 0;
		if (sscanf(line, "%*s cpu%*u %31s h%llu g%lu s%u %n", h->type,
			   &h->handle, &h->gidx, &h->sub, &pos) < 4)
			continue;
		h->rest = line + pos;
		n++;
	}
	return n;
}

/* The first line from @from on of @type for small page @sub whose rest
 * starts with @what (NULL: any); -1 if none.
 */
static int hfind(const struct hline *h, int n, int from, const char *type,
		 int sub, const char *what)
{
	int i;

	for (i = from < 0 ? 0 : from; i < n; i++)
		if (!strcmp(h[i].type, type) &&
		    (sub < 0 || h[i].sub == (unsigned int)sub) &&
		    (!what || !strncmp(h[i].rest, what, strlen(what))))
			return i;
	return -1;
}

static void hlog(struct __test_metadata *_metadata, const struct hline *h,
		 int n)
{
	int i;

	for (i = 0; i < n; i++)
		TH_LOG("%s h%llu g%lu s%u %s", h[i].type, h[i].handle,
		       h[i].gidx, h[i].sub, h[i].rest);
}

FIXTURE(history) {
	struct gps_fixture;
};

static const char *const history_knobs[] = {
	GPS_KNOBS_COMMON, "keep_writable_ms", NULL,
};

FIXTURE_SETUP(history)
{
	/* Skipped before anything changes: a skipped setup has no teardown. */
	gps_fx(self)->fd = -1;
	if (access(GPS_HISTORY, F_OK))
		SKIP(return, "no " GPS_HISTORY " (module without CONFIG_GPS_DEBUG)");
	if (gps_fixture_setup(_metadata, gps_fx(self), 2, history_knobs))
		return;
	/* Only the fence publishes, and it write-protects the page. */
	ASSERT_EQ(0, gps_set_knob("harvest_interval_us", 0));
	ASSERT_EQ(0, gps_set_knob("keep_writable_ms", 0));
	ASSERT_EQ(0, gps_set_knob("page_size", GP));
}

FIXTURE_TEARDOWN(history)
{
	gps_history_cmd("on");
	gps_history_cmd("all");
	gps_fixture_teardown(_metadata, gps_fx(self));
}

/*
 * A store and a fence: fence start, write fault, protect, diff, push to
 * device 1, fence end, in this order, for that GPS page only.
 */
TEST_F(history, store_fence_sequence)
{
	struct hline h[256];
	uint32_t got = 0, off = SUB * 4096 + 64;
	volatile uint32_t *p;
	char *text;
	int n, fs, wf, pr, df, pu, fe, i;

	ASSERT_EQ(0, gps_history_cmd("on"));
	ASSERT_EQ(0, gps_history_cmd("clear"));
	gps_fixture_alloc(_metadata, gps_fx(self), 2 * GP, GP, 2);
	/* GPS page 1 written too: the filter must leave it out */
	((volatile uint32_t *)self->b.view[0])[GP / 4] = 7;
	p = (volatile uint32_t *)((char *)self->b.view[0] + off);
	*p = 0x1234;
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_read(self->fd, &self->b, 1, off, &got, 4));
	ASSERT_EQ(0x1234, got);

	text = gps_history_read(self->b.args.handle, 0, -1);
	ASSERT_NE(NULL, text);
	n = hparse(text, h, 256);
	ASSERT_GT(n, 0);
	for (i = 0; i < n; i++) {
		/* global (h0), or of GPS page 0 of ours, or a zap of both */
		if (!h[i].handle || !strcmp(h[i].type, "zap"))
			continue;
		EXPECT_EQ(self->b.args.handle, h[i].handle);
		EXPECT_EQ(0, h[i].gidx);
	}
	wf = hfind(h, n, 0, "wfault", SUB, "view 0 dev 0 owner 0");
	fs = hfind(h, n, wf, "fence-dev", -1, "dev 0");
	pr = hfind(h, n, fs, "protect", 0, "dev 0 pages 0+0x2 protected");
	df = hfind(h, n, pr, "diff", SUB, "dev 0 blocks 1 twin freed");
	pu = hfind(h, n, df, "push", SUB, "dev 0 -> 1");
	fe = hfind(h, n, pu, "fence-done", -1, "dev 0");
	EXPECT_LE(0, wf);
	EXPECT_LT(wf, fs);
	EXPECT_LT(fs, pr);
	EXPECT_LT(pr, df);
	EXPECT_LT(df, pu);
	EXPECT_LT(pu, fe);
	if (fe < 0 || wf < 0)
		hlog(_metadata, h, n);
	free(text);

	/* Off: a second store and fence leave no trace. */
	ASSERT_EQ(0, gps_history_cmd("off"));
	p[1] = 5;
	ASSERT_EQ(0, gps_fence(self->fd, 0, NULL));
	ASSERT_EQ(0, gps_history_cmd("on"));
	text = gps_history_read(self->b.args.handle, 0, -1);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(n, hparse(text, h, 256));
	free(text);

	/* The neighbour's own history holds its store. */
	text = gps_history_read(self->b.args.handle, 1, -1);
	ASSERT_NE(NULL, text);
	n = hparse(text, h, 256);
	EXPECT_LE(0, hfind(h, n, 0, "wfault", 0, "view 0 dev 0 owner 0"));
	free(text);
}

TEST_HARNESS_MAIN
