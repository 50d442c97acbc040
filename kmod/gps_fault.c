// SPDX-License-Identifier: GPL-2.0
/*
 * DOC: views, faults and write capture
 *
 * Each device maps an allocation through its own view: a shared mapping
 * of /dev/gps at the view's offset.  A fault maps the small page of the
 * replica that the view should see (gps_view_replica()).  Because the
 * vm_ops have .page_mkwrite, the kernel maps that page read-only and
 * calls gps_page_mkwrite() on the first write: for a GPS page with more
 * than one subscriber this is the paper's store interception.  The small
 * page is marked dirty, a twin (snapshot of its contents) is kept for the
 * later diff, and the page becomes writable until the harvester
 * write-protects it again.  Pages with a single subscriber (conventional
 * memory) are simply made writable: no twin, no harvest, no cost later.
 *
 * One fault serves a whole GPS page (or the capture_bytes window of it):
 * a read fault maps the window's other small pages read-only, and the
 * first write fault of an epoch captures them all: each gets its twin and
 * dirty bit and is mapped writable, so the next stores to the GPS page do
 * not trap.  A new replica, and one whose last harvest found one small
 * page changed, is narrow: it captures only the faulting page, until a
 * second small page faults in the same epoch.  A sparse writer keeps one
 * twin; a dense one takes one fault per GPS page per epoch (two in its
 * first).  On by default (capture_bytes = 0, the whole GPS page);
 * PAGE_SIZE gives one fault per small page (Documentation/reliability.rst,
 * "Capture windows").
 *
 * The host view (gps_host_view()) faults as the home device's view
 * (gps_view_dev()); its write faults also record, in the open file's
 * host_dirty, whose replica the host wrote, for host fences.  No harvest
 * leaves it writable: it is never the owner's view.
 *
 * Managed memory (GPS_MEM_MANAGED) has one copy per GPS page: a fault of a
 * view where the page is not first moves it there (gps_migrate.c).  The
 * views' mappings themselves (mmap, splits, mprotect) are gps_mmap.c's.
 *
 * Locking: see gps_internal.h.  Both handlers take sub_sem for reading to
 * look the page up and return with the page locked, which is what keeps
 * a concurrent harvest or subscription change from losing a write.  The
 * window's other pages are taken with trylock_page() (a harvest locks
 * them in ascending order) and left to fault alone when busy.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <linux/pgtable.h>
#include <linux/sched/signal.h>
#include "gps_internal.h"
#include "gps_inject.h"
#include "gps_delay.h"
#include "gps_still.h"
#include "gps_history.h"
#include "gps_trace.h"

static void gps_view_pos(struct gps_alloc *a, pgoff_t pgoff, int *view,
			 unsigned long *gidx, unsigned int *sub)
{
	pgoff_t off = pgoff - a->pgoff;

	*view = off / a->stride;
	off %= a->stride;
	*gidx = off >> (a->gshift - PAGE_SHIFT);
	*sub = off & (a->nr_sub - 1);
}

/*
 * The small pages one fault maps: *@lo and the count returned, the
 * capture window around @sub cut to the part of the GPS page that the
 * faulting VMA maps.
 */
static unsigned int gps_window(struct vm_fault *vmf, struct gps_alloc *a,
			       unsigned int sub, unsigned int *lo)
{
	unsigned int win = READ_ONCE(gps_knobs.capture_bytes) >> PAGE_SHIFT;
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t first, end;

	if (!win || win > a->nr_sub)
		win = a->nr_sub;
	first = vmf->pgoff - sub + round_down(sub, win);
	end = first + win;
	first = max(first, vma->vm_pgoff);
	end = min(end, vma->vm_pgoff + vma_pages(vma));
	*lo = sub - (vmf->pgoff - first);
	return end - first;
}

/* Address of small page @i of the faulting GPS page. */
static unsigned long gps_sub_addr(struct vm_fault *vmf, unsigned int sub,
				  unsigned int i)
{
	return (vmf->address & PAGE_MASK) + ((long)i - sub) * PAGE_SIZE;
}

/*
 * Map the window's other small pages read-only (a PTE already there
 * stays).  Caller holds sub_sem, so @r stays the view's target.
 */
static void gps_map_around(struct vm_fault *vmf, struct gps_replica *r,
			   unsigned int sub, unsigned int lo, unsigned int n)
{
	unsigned int i;

	lockdep_assert_held(&r->alloc->sub_sem);
	for (i = lo; i < lo + n; i++)
		if (i != sub)
			vm_insert_page(vmf->vma, gps_sub_addr(vmf, sub, i),
				       r->pages[i]);
}

vm_fault_t gps_fault(struct vm_fault *vmf)
{
	struct gps_alloc *a = vmf->vma->vm_private_data;
	struct gps_replica *r;
	unsigned long gidx;
	unsigned int sub, n = 0;
	struct page *page;
	int view, dev;

	gps_view_pos(a, vmf->pgoff, &view, &gidx, &sub);
	dev = gps_view_dev(a, view);
	down_read(&a->sub_sem);
	if (!a->dead && gps_um_wants(a, gidx, dev)) {
		/* managed memory: move the page here first, once */
		up_read(&a->sub_sem);
		gps_um_migrate(a, gidx, dev);
		down_read(&a->sub_sem);
	}
	if (a->dead) {
		up_read(&a->sub_sem);
		return VM_FAULT_SIGBUS;
	}
	r = gps_view_replica(a, gps_gpage(a, gidx), view);
	if (WARN_ON_ONCE(!r)) {
		up_read(&a->sub_sem);
		return VM_FAULT_SIGBUS;
	}
	/* Tracking records devices: a host view's access is no device's. */
	if (READ_ONCE(a->tracking) && view != gps_host_view()) {
		struct gps_gpage *gp = gps_gpage(a, gidx);

		set_bit(dev, vmf->flags & FAULT_FLAG_WRITE ? &gp->touched_w :
							     &gp->touched_r);
		atomic64_inc(&gps_devs[dev].stats.tracking_faults);
	}
	page = r->pages[sub];
	get_page(page);
	set_bit(view, r->mapped_views);
	lock_page(page);
	if (!(vmf->flags & FAULT_FLAG_WRITE) && a->nr_sub > 1) {
		unsigned int lo;

		n = gps_window(vmf, a, sub, &lo);
		gps_map_around(vmf, r, sub, lo, n);
	}
	gps_hist(GPS_H_FAULT, dev, view, a, gidx, sub, n << 16 |
		 (vmf->flags & FAULT_FLAG_WRITE ? GPS_HF_WRITE : 0) |
		 (READ_ONCE(a->tracking) ? GPS_HF_TRACK : 0));
	up_read(&a->sub_sem);

	if (!(vmf->flags & FAULT_FLAG_WRITE))
		atomic64_inc(&gps_devs[dev].stats.read_faults);
	vmf->page = page;
	return VM_FAULT_LOCKED;
}

/* What gps_mkwrite_pte() makes writable: captured pages of one chunk. */
struct gps_capture {
	struct vm_area_struct *vma;
	unsigned long base;		/* address of small page 0 */
	struct gps_replica *r;
	unsigned long *captured;	/* small pages locked, twinned, dirty */
};

/*
 * Make a read-only PTE of a captured page writable, young and clean:
 * the store that dirties it goes through without a fault, and the
 * hardware's dirty bit records it.  Under the PTE lock.  Cleared and set
 * again, not modified in place, so that the page table check counts it
 * as one mapping throughout.
 */
static int gps_mkwrite_pte(pte_t *ptep, unsigned long addr, void *data)
{
	struct gps_capture *c = data;
	unsigned int i = (addr - c->base) >> PAGE_SHIFT;
	struct mm_struct *mm = c->vma->vm_mm;
	pte_t pte = ptep_get(ptep);

	if (!test_bit(i, c->captured) || !pte_present(pte) || pte_write(pte) ||
	    pte_pfn(pte) != page_to_pfn(c->r->pages[i]))
		return 0;
	pte = pte_mkclean(pte_mkyoung(ptep_get_and_clear(mm, addr, ptep)));
	/* The VMA is writable and never a shadow stack (gps_mmap()). */
#ifdef GPS_HAVE_PTE_MKWRITE_NOVMA
	pte = pte_mkwrite_novma(pte);
#else
	pte = pte_mkwrite(pte);
#endif
	set_pte_at(mm, addr, ptep, pte);
	return 0;
}

/*
 * Small page @sub of @r is written from now on: it takes @spare as its
 * twin (a snapshot of what was published) unless it has one, gets its
 * dirty bit and may be mapped writable.  gp->lock held, the page locked.
 * Return: whether @spare was taken (*@spare is then NULL).
 */
static bool gps_twin_capture(struct gps_replica *r, unsigned int sub,
			     struct page **spare, const char *why)
{
	bool taken = false;

	lockdep_assert_held(&gps_gpage(r->alloc, r->gidx)->lock);
	gps_assert_page_locked(r->pages[sub]);
	if (!r->twins[sub]) {
		gps_still_drop(r, sub, why);
		copy_highpage(*spare, r->pages[sub]);
		r->twins[sub] = *spare;
		*spare = NULL;
		taken = true;
	}
	set_bit(sub, r->dirty);
	gps_set_wmapped(r, sub);
	return taken;
}

/* @n twins more for @r's owner. */
static void gps_twins_count(struct gps_replica *r, unsigned int n)
{
	atomic64_add(n, &gps_twin_pages);
	atomic64_add(n, &gps_devs[r->dev].stats.twin_pages);
}

#define GPS_CAPTURE_CHUNK	16

/*
 * Capture small pages [@lo, @lo + @n) but @sub of @r for device @dev at one
 * write fault, GPS_CAPTURE_CHUNK at a time: lock each (trylock), give it
 * a twin, set its dirty bit, then map it writable in the faulting VMA.
 * Pages busy or without memory for a twin (none is allocated while the
 * node is below its reserve) are left to fault alone.
 * Caller holds sub_sem for reading and @sub's page lock.
 */
static void gps_capture_around(struct vm_fault *vmf, struct gps_replica *r,
			       int dev, unsigned int sub, unsigned int lo,
			       unsigned int n)
{
	DECLARE_BITMAP(captured, GPS_PAGE_2M / PAGE_SIZE);
	struct page *twins[GPS_CAPTURE_CHUNK];
	struct gps_gpage *gp = gps_gpage(r->alloc, r->gidx);
	struct gps_capture c = {
		.vma = vmf->vma,
		.base = gps_sub_addr(vmf, sub, 0),
		.r = r,
		.captured = captured,
	};
	gfp_t gfp = GFP_HIGHUSER | __GFP_ACCOUNT | __GFP_NOWARN | __GFP_NORETRY;
	int nid = gps_devs[r->dev].nid;
	unsigned int s, i, end, done = 0, new_twins = 0, twins0;
	bool room;
	u32 cm;

	lockdep_assert_held_read(&r->alloc->sub_sem);
	gps_assert_page_locked(r->pages[sub]);
	bitmap_zero(captured, GPS_PAGE_2M / PAGE_SIZE);
	for (s = lo; s < lo + n; s = end) {
		end = min(s + GPS_CAPTURE_CHUNK, lo + n);
		/* Below the reserve, only pages with a twin are captured. */
		room = !gps_node_short(nid, end - s);
		for (i = s; i < end; i++) {
			twins[i - s] = NULL;
			if (i == sub || !trylock_page(r->pages[i]))
				continue;
			__set_bit(i, captured);
			if (room && !READ_ONCE(r->twins[i]) &&
			    !gps_should_fail(GPS_FAIL_CAPTURE_TWIN))
				twins[i - s] = alloc_pages_node(nid, gfp, 0);
		}

		spin_lock(&gp->lock);
		cm = 0;
		twins0 = new_twins;
		i = s;
		for_each_set_bit_from(i, captured, end) {
			if (!r->twins[i] && !twins[i - s]) {
				__clear_bit(i, captured);
				unlock_page(r->pages[i]);
				continue;
			}
			new_twins += gps_twin_capture(r, i, &twins[i - s],
						      "capture");
			cm |= BIT(i - s);
			done++;
		}
		gps_hist(GPS_H_CAPTURE, r->dev, dev, r->alloc, r->gidx, s,
			 cm | (new_twins - twins0) << 16);
		/* A harvest may have taken r off the list meanwhile. */
		gps_mark_dirty(r);
		spin_unlock(&gp->lock);
		for (i = s; i < end; i++)
			if (twins[i - s])
				put_page(twins[i - s]);

		i = s;
		for_each_set_bit_from(i, captured, end)
			vm_insert_page(vmf->vma, gps_sub_addr(vmf, sub, i),
				       r->pages[i]);
		apply_to_existing_page_range(vmf->vma->vm_mm,
					     gps_sub_addr(vmf, sub, s),
					     (end - s) << PAGE_SHIFT,
					     gps_mkwrite_pte, &c);
		i = s;
		for_each_set_bit_from(i, captured, end)
			unlock_page(r->pages[i]);
	}
	gps_twins_count(r, new_twins);
	atomic64_add(done, &gps_devs[dev].stats.pages_captured);
}

/* A write fault's tries for a twin, and the wait before each retry. */
#define GPS_TWIN_TRIES		4
#define GPS_TWIN_WAIT_MS	10

/*
 * The twin of a write fault to a replica of device @owner, allocated with
 * no lock held.  It never calls in the OOM killer and never takes the
 * owner's node below its reserve: it is refused where the node has less
 * than node_reserve_bytes available (gps_node_short()), and its
 * allocation reclaims but fails rather than kill (__GFP_RETRY_MAYFAIL).
 * A twin not had is tried again GPS_TWIN_WAIT_MS later, GPS_TWIN_TRIES
 * times in all, sleeping killably: memory that others free, or that a
 * harvest frees (the push thread's, when proactive harvests are on, or
 * a fence's: twins of pages not written again go), gives it room.
 *
 * Return: the twin, or NULL: the fault fails with SIGBUS.  No store is
 * lost: the faulting one has not happened, and those before are in the
 * replica, published by the next fence as always.
 */
static struct page *gps_twin_alloc(int owner)
{
	gfp_t gfp = GFP_HIGHUSER | __GFP_ACCOUNT | __GFP_NOWARN |
		    __GFP_RETRY_MAYFAIL;
	int nid = gps_devs[owner].nid, i;
	struct page *twin;

	for (i = 0; i < GPS_TWIN_TRIES; i++) {
		if (i) {
			schedule_timeout_killable(msecs_to_jiffies(GPS_TWIN_WAIT_MS));
			if (fatal_signal_pending(current))
				return NULL;
		}
		if (gps_node_short(nid, 1) ||
		    gps_should_fail(GPS_FAIL_TWIN_ALLOC))
			continue;
		twin = alloc_pages_node(nid, gfp, 0);
		if (twin)
			return twin;
	}
	pr_warn_ratelimited("%s[%d]: no memory for a twin on node %d: SIGBUS\n",
			    current->comm, task_pid_nr(current), nid);
	return NULL;
}

vm_fault_t gps_page_mkwrite(struct vm_fault *vmf)
{
	struct gps_alloc *a = vmf->vma->vm_private_data;
	struct page *page = vmf->page, *twin = NULL;
	struct gps_replica *r;
	struct gps_gpage *gp;
	unsigned long gidx;
	unsigned int sub, lo, n = 0;
	int view, dev, owner;
	u32 hf = 0;

	gps_view_pos(a, vmf->pgoff, &view, &gidx, &sub);
	dev = gps_view_dev(a, view);
	gp = gps_gpage(a, gidx);
retry:
	down_read(&a->sub_sem);
	if (a->dead) {
		up_read(&a->sub_sem);
		goto out_sigbus;
	}
	r = gps_view_replica(a, gp, view);
	if (!r || r->pages[sub] != page) {
		/* The view's target changed under us: fault again. */
		gps_hist(GPS_H_WFAULT, dev, view, a, gidx, sub, GPS_HF_RETRY);
		up_read(&a->sub_sem);
		if (twin)
			put_page(twin);
		return VM_FAULT_NOPAGE;
	}
	lock_page(page);
	if (READ_ONCE(a->tracking) && view != gps_host_view())
		set_bit(dev, &gp->touched_w);
	if (hweight64(READ_ONCE(gp->subs)) < 2) {
		/* One copy: nothing to publish, plain writable page. */
		spin_lock(&gp->lock);
		gps_still_drop(r, sub, "only copy");
		gps_set_wmapped(r, sub);
		gps_hist(GPS_H_WFAULT, dev, view, a, gidx, sub,
			 r->dev | GPS_HF_ONLY);
		spin_unlock(&gp->lock);
		up_read(&a->sub_sem);
		if (twin)
			put_page(twin);
		return VM_FAULT_LOCKED;
	}

	/* r may be freed once sub_sem is dropped: keep what we need of it */
	owner = r->dev;
	spin_lock(&gp->lock);
	if (!r->twins[sub] && !twin) {
		spin_unlock(&gp->lock);
		unlock_page(page);
		up_read(&a->sub_sem);
		twin = gps_twin_alloc(owner);
		if (!twin)
			return VM_FAULT_SIGBUS;
		goto retry;
	}
	if (gps_twin_capture(r, sub, &twin, "write fault")) {
		hf |= GPS_HF_NEWTWIN;
		gps_twins_count(r, 1);
	}
	gps_mark_dirty(r);
	/* A narrow replica widens at its second small page of the epoch. */
	if (a->nr_sub > 1 && r->narrow &&
	    bitmap_weight(r->dirty, a->nr_sub) > 1)
		r->narrow = false;
	if (a->nr_sub > 1 && !r->narrow)
		n = gps_window(vmf, a, sub, &lo);
	gps_hist(GPS_H_WFAULT, dev, view, a, gidx, sub,
		 owner | hf | (n > 1 ? GPS_HF_WIDE : 0));
	spin_unlock(&gp->lock);
	/*
	 * Recorded before any page is mapped writable: a captured page takes
	 * stores with no fault of their own, which a fence of @dev (or the
	 * host fence) must find here.  The page is on owner's dirty list.
	 */
	if (owner != dev)
		atomic_long_or(BIT(owner), &gps_devs[dev].remote_mask);
	if (view == gps_host_view()) {
		atomic_long_or(BIT(owner), &a->ctx->host_dirty);
		atomic64_inc(&gps_devs[dev].stats.host_write_faults);
	}
	if (n > 1)
		gps_capture_around(vmf, r, dev, sub, lo, n);
	up_read(&a->sub_sem);
	gps_delay(GPS_DELAY_MKWRITE_CAPTURED);

	if (twin)
		put_page(twin);
	atomic64_inc(&gps_devs[dev].stats.write_faults);
	atomic64_inc(&a->write_faults);
	trace_gps_write_fault(dev, owner, a->handle, gidx, sub);
	return VM_FAULT_LOCKED;

out_sigbus:
	if (twin)
		put_page(twin);
	return VM_FAULT_SIGBUS;
}
