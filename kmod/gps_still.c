// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: debug check: a page without a twin holds still
 *
 * A push writes into a receiver's page that has no twin on the promise
 * that no view maps it writable: the fault paths give a page its twin
 * before a view may store to it, and the harvest write-protects a page
 * (TLB flushed) before it frees the twin.  A store that broke the promise
 * would never be harvested (no twin, no dirty bit) and so would be lost
 * to the other replicas, and a push writing whole words would lose it in
 * its own replica too.
 *
 * In a module built with CONFIG_GPS_DEBUG the harvest keeps a twin it
 * would free as the page's shadow, a copy of it taken once the page holds
 * still.  Every write of the driver into the page goes into the shadow
 * too, and the page must equal its shadow wherever the driver looks:
 * before each push into it, when it gains a twin or is made writable as
 * the only copy, and when the replica is freed.  A difference is a store
 * nothing published: it is warned about (which fails any test run) with
 * where it was found.
 *
 * Locking: shadows change under the GPS page lock, like twins.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/string.h>
#include "gps_internal.h"
#include "gps_still.h"

static atomic64_t gps_still_stores = ATOMIC64_INIT(0);

/* Bytes of @len at @off differ between @r's page @sub and its shadow. */
static void gps_still_compare(struct gps_replica *r, unsigned int sub,
			      unsigned int off, unsigned int len,
			      const char *where)
{
	u8 *p = kmap_local_page(r->pages[sub]);
	u8 *s = kmap_local_page(r->shadows[sub]);
	unsigned int i;

	if (memcmp(p + off, s + off, len)) {
		for (i = off; i < off + len - 1 && p[i] == s[i]; i++)
			;
		WARN_ONCE(1, "store to a page without a twin\n");
		pr_err_ratelimited("store to a page without a twin, found at %s: dev %d alloc %llu gpage %lu sub %u byte %u: %#x, shadow %#x (%lld so far)\n",
				   where, r->dev, r->alloc->handle, r->gidx,
				   sub, i, p[i], s[i],
				   atomic64_inc_return(&gps_still_stores));
		/* Once per difference: the shadow takes the page's bytes. */
		memcpy(s + off, p + off, len);
	}
	kunmap_local(s);
	kunmap_local(p);
}

/* The last look at page @sub of @r, and its shadow goes. */
static void gps_still_forget(struct gps_replica *r, unsigned int sub,
			     const char *where)
{
	if (!r->shadows[sub])
		return;
	if (!r->twins[sub])
		gps_still_compare(r, sub, 0, PAGE_SIZE, where);
	put_page(r->shadows[sub]);
	r->shadows[sub] = NULL;
}

/**
 * gps_still_adopt() - keep a twin the harvest frees as its page's shadow
 * @r: replica, its owner's harvest_lock held (so @r stays)
 * @sub: small page, write-protected in every view and diffed
 * @twin: the twin taken off @r
 *
 * Return: @twin if the caller is to free it: the page has a twin again
 * (a write fault since the diff), or a shadow already.
 */
struct page *gps_still_adopt(struct gps_replica *r, unsigned int sub,
			     struct page *twin)
{
	struct gps_gpage *gp = gps_gpage(r->alloc, r->gidx);

	spin_lock(&gp->lock);
	if (r->twins[sub] || r->shadows[sub]) {
		spin_unlock(&gp->lock);
		return twin;
	}
	copy_highpage(twin, r->pages[sub]);
	r->shadows[sub] = twin;
	spin_unlock(&gp->lock);
	return NULL;
}

/**
 * gps_still_check() - the driver is about to write into a page
 * @r: replica, GPS page lock held
 * @sub: small page
 * @off: first byte the write touches
 * @len: bytes
 * @where: caller, for the warning
 */
void gps_still_check(struct gps_replica *r, unsigned int sub,
		     unsigned int off, unsigned int len, const char *where)
{
	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	if (r->shadows[sub] && !r->twins[sub])
		gps_still_compare(r, sub, off, len, where);
}

/**
 * gps_still_sync() - the driver wrote into a page: so into its shadow
 * @r: replica, GPS page lock held
 * @sub: small page
 * @off: first byte written
 * @len: bytes
 */
void gps_still_sync(struct gps_replica *r, unsigned int sub,
		    unsigned int off, unsigned int len)
{
	u8 *p, *s;

	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	if (!r->shadows[sub])
		return;
	p = kmap_local_page(r->pages[sub]);
	s = kmap_local_page(r->shadows[sub]);
	memcpy(s + off, p + off, len);
	kunmap_local(s);
	kunmap_local(p);
}

/**
 * gps_still_drop() - a page may be stored to from now on: last look
 * @r: replica, GPS page lock held
 * @sub: small page, about to get a twin or to be made writable
 * @where: caller, for the warning
 */
void gps_still_drop(struct gps_replica *r, unsigned int sub,
		    const char *where)
{
	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	gps_still_forget(r, sub, where);
}

/**
 * gps_still_free() - a replica goes: last look at every page
 * @r: replica out of the page table, its views zapped
 */
void gps_still_free(struct gps_replica *r)
{
	unsigned int i;

	for (i = 0; i < r->alloc->nr_sub; i++)
		gps_still_forget(r, i, "free");
}
