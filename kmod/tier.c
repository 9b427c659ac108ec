// SPDX-License-Identifier: GPL-2.0
/*
 * The fast tier: extent-sized slots of kernel pages or of a Device-DAX range,
 * the map from logical extents to slots, fills from the backing device and
 * LRU eviction of unpinned resident extents.
 */
#include <linux/bio.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "tempo.h"
#include "trace.h"

static void tempo_fill_copy_work(struct work_struct *work);
static void tempo_fills_work(struct work_struct *work);

static void tempo_slot_init(struct tempo_dev *dev, struct tempo_slot *slot, unsigned long pfn)
{
	slot->dev = dev;
	slot->pfn = pfn;
	slot->state = TEMPO_SLOT_FREE;
	INIT_LIST_HEAD(&slot->waiters);
	INIT_WORK(&slot->copy_work, tempo_fill_copy_work);
	list_add_tail(&slot->node, &dev->free);
	dev->nr_free++;
}

/*
 * Sets up fast_bytes of kernel pages, or with dax the first fast_bytes (0:
 * all) of that Device-DAX instance, which tempo.ko then owns (dax.c). Fills
 * DMA straight into the slots, or with !dax_dma read into a bounce buffer and
 * copy (for platforms whose disks cannot DMA into the range, such as QEMU's
 * emulated CXL window). May sleep.
 */
int tempo_tier_init(struct tempo_dev *dev, u64 fast_bytes, const char *dax, bool dax_dma)
{
	unsigned int order = dev->extent_shift - PAGE_SHIFT;
	unsigned long pfn;
	u32 i;
	int ret;

	INIT_LIST_HEAD(&dev->lru);
	INIT_LIST_HEAD(&dev->free);
	init_llist_head(&dev->fills_done);
	INIT_WORK(&dev->fills_work, tempo_fills_work);
	if (dax) {
		ret = tempo_dax_attach(dev, dax, fast_bytes, &fast_bytes);
		if (ret)
			return ret;
		dev->fast_kind = TEMPO_FAST_DAX;
	}
	ret = -EINVAL;
	dev->nr_slots = fast_bytes >> dev->extent_shift;
	if (dev->nr_slots < 2)
		goto out;

	ret = -ENOMEM;
	dev->slots = kvcalloc(dev->nr_slots, sizeof(*dev->slots), GFP_KERNEL);
	if (!dev->slots)
		goto out;

	if (dax) {
		dev->dax_bounce = !dax_dma;
		if (dev->dax_bounce) {
			ret = tempo_bounce_init(dev);
			if (ret)
				goto out_free_slots;
		}
		pfn = PHYS_PFN(dev->dax_start);
		for (i = 0; i < dev->nr_slots; i++)
			tempo_slot_init(dev, &dev->slots[i], pfn + ((unsigned long)i << order));
		return 0;
	}

	dev->fast_kind = TEMPO_FAST_PAGES;
	dev->page_blocks = kvcalloc(dev->nr_slots, sizeof(*dev->page_blocks), GFP_KERNEL);
	if (!dev->page_blocks)
		goto out_free_slots;
	for (i = 0; i < dev->nr_slots; i++) {
		dev->page_blocks[i] = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN, order);
		if (!dev->page_blocks[i])
			goto out_free_pages;
		tempo_slot_init(dev, &dev->slots[i], page_to_pfn(dev->page_blocks[i]));
	}
	return 0;

out_free_pages:
	while (i--)
		__free_pages(dev->page_blocks[i], order);
	kvfree(dev->page_blocks);
	dev->page_blocks = NULL;
out_free_slots:
	tempo_bounce_exit(dev);
	kvfree(dev->slots);
	dev->slots = NULL;
out:
	if (dev->fast_kind == TEMPO_FAST_DAX)
		tempo_dax_detach(dev);
	return ret;
}

/* After the last fill has completed and the last fd is gone. */
void tempo_tier_exit(struct tempo_dev *dev)
{
	u32 i;

	if (dev->page_blocks) {
		for (i = 0; i < dev->nr_slots; i++)
			__free_pages(dev->page_blocks[i], dev->extent_shift - PAGE_SHIFT);
		kvfree(dev->page_blocks);
	}
	tempo_bounce_exit(dev);
	if (dev->fast_kind == TEMPO_FAST_DAX)
		tempo_dax_detach(dev);
	kvfree(dev->slots);
	xa_destroy(&dev->map);
}

/*
 * The DAX range is going away under the module (dax.c): from now on every
 * access fails, no mapping reaches the range and no fill starts. Returns once
 * the last fill into it has ended, so nothing writes there after. May sleep.
 */
void tempo_tier_lose(struct tempo_dev *dev)
{
	mutex_lock(&dev->lock);
	WRITE_ONCE(dev->tier_lost, true);
	unmap_mapping_range(dev->inode->i_mapping, 0, 0, 1);
	mutex_unlock(&dev->lock);
	/* blocked readers return EIO, waiting faults SIGBUS */
	wake_up_all(&dev->notice_wait);
	wake_up_all(&dev->fill_wait);
	wait_event(dev->fill_wait, !READ_ONCE(dev->nr_filling));
}

/*
 * Evicts the least recently used unpinned resident extent, telling
 * subscribers when notify. Caller holds dev->lock.
 */
static struct tempo_slot *tempo_evict_one_locked(struct tempo_dev *dev, bool notify)
{
	struct tempo_slot *slot;

	lockdep_assert_held(&dev->lock);
	slot = list_first_entry_or_null(&dev->lru, struct tempo_slot, node);
	if (!slot)
		return NULL;
	list_del(&slot->node);
	dev->nr_lru--;
	/* No new mapping can appear: faults insert pfns under dev->lock. */
	unmap_mapping_range(dev->inode->i_mapping, tempo_ext_offset(dev, slot->ext),
			    dev->extent_bytes, 1);
	xa_erase(&dev->map, slot->ext);
	trace_tempo_evict(tempo_ext_offset(dev, slot->ext), dev->extent_bytes, 0);
	dev->stats.evictions++;
	dev->stats.evicted_bytes += dev->extent_bytes;
	if (notify)
		tempo_notify_locked(dev, TEMPO_REC_EVICT, tempo_ext_offset(dev, slot->ext),
				    dev->extent_bytes);
	slot->state = TEMPO_SLOT_FREE;
	return slot;
}

/*
 * Takes a slot for extent ext (not in the map) and marks it FILLING: a free
 * slot, else the LRU victim. NULL when every slot is pinned or filling. The
 * map entry for ext must have been reserved. Caller holds dev->lock; it then
 * calls tempo_fill_submit() after dropping it.
 */
struct tempo_slot *tempo_slot_get_locked(struct tempo_dev *dev, u64 ext)
{
	struct tempo_slot *slot;

	lockdep_assert_held(&dev->lock);
	slot = list_first_entry_or_null(&dev->free, struct tempo_slot, node);
	if (slot) {
		list_del(&slot->node);
		dev->nr_free--;
	} else {
		slot = tempo_evict_one_locked(dev, true);
		if (!slot)
			return NULL;
	}
	slot->ext = ext;
	slot->state = TEMPO_SLOT_FILLING;
	slot->pins = 0;
	slot->fault_fill = false;
	slot->fill_start_ns = ktime_get_ns();
	INIT_LIST_HEAD(&slot->node);
	xa_store(&dev->map, ext, slot, GFP_KERNEL);
	dev->nr_filling++;
	return slot;
}

/* The fill's read has ended: tempo_fills_work() completes it. Any context. */
static void tempo_fill_done(struct tempo_slot *slot)
{
	struct tempo_dev *dev = slot->dev;

	if (llist_add(&slot->done_node, &dev->fills_done))
		queue_work(dev->wq, &dev->fills_work);
}

/* The last bio of a fill ends it (after the copy, in bounce mode); any bio's error fails it. */
static void tempo_fill_end_io(struct bio *bio)
{
	struct tempo_slot *slot = bio->bi_private;

	if (bio->bi_status)
		WRITE_ONCE(slot->bio_status, bio->bi_status);
	bio_put(bio);
	if (!atomic_dec_and_test(&slot->bios))
		return;
	if (slot->bounce)
		queue_work(slot->dev->wq, &slot->copy_work);
	else
		tempo_fill_done(slot);
}

/*
 * The bounce pool (dax_bounce): TEMPO_BOUNCE_BUFS extent-sized buffers of
 * single pages, allocated at load, so a fill never needs a large contiguous
 * allocation. May sleep.
 */
int tempo_bounce_init(struct tempo_dev *dev)
{
	unsigned long n = dev->extent_bytes >> PAGE_SHIFT, i, b;

	spin_lock_init(&dev->bounce_lock);
	init_waitqueue_head(&dev->bounce_wait);
	INIT_LIST_HEAD(&dev->bounce_free);
	for (b = 0; b < TEMPO_BOUNCE_BUFS; b++) {
		struct tempo_bounce *bb = &dev->bounce[b];

		bb->pages = kvcalloc(n, sizeof(*bb->pages), GFP_KERNEL);
		if (!bb->pages)
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			bb->pages[i] = alloc_page(GFP_KERNEL);
			if (!bb->pages[i])
				return -ENOMEM;
		}
		list_add_tail(&bb->node, &dev->bounce_free);
	}
	return 0;
}

/* Frees the pool, whole or as far as tempo_bounce_init() got. */
void tempo_bounce_exit(struct tempo_dev *dev)
{
	unsigned long n = dev->extent_bytes >> PAGE_SHIFT, i, b;

	for (b = 0; b < TEMPO_BOUNCE_BUFS; b++) {
		struct tempo_bounce *bb = &dev->bounce[b];

		for (i = 0; bb->pages && i < n && bb->pages[i]; i++)
			__free_page(bb->pages[i]);
		kvfree(bb->pages);
		bb->pages = NULL;
	}
}

static struct tempo_bounce *tempo_bounce_get(struct tempo_dev *dev)
{
	struct tempo_bounce *bb;

	spin_lock(&dev->bounce_lock);
	bb = list_first_entry_or_null(&dev->bounce_free, struct tempo_bounce, node);
	if (bb)
		list_del(&bb->node);
	spin_unlock(&dev->bounce_lock);
	return bb;
}

static void tempo_bounce_put(struct tempo_dev *dev, struct tempo_bounce *bb)
{
	spin_lock(&dev->bounce_lock);
	list_add(&bb->node, &dev->bounce_free);
	spin_unlock(&dev->bounce_lock);
	wake_up(&dev->bounce_wait);
}

/* One bio per BIO_MAX_VECS pages of the bounce buffer. */
static void tempo_fill_submit_bounce(struct tempo_dev *dev, struct tempo_slot *slot)
{
	unsigned long n = dev->extent_bytes >> PAGE_SHIFT, i, nr_bios;
	sector_t sector = tempo_ext_offset(dev, slot->ext) >> SECTOR_SHIFT;
	struct bio *bio = NULL;

	nr_bios = DIV_ROUND_UP(n, BIO_MAX_VECS);
	atomic_set(&slot->bios, nr_bios);
	for (i = 0; i < n; i++) {
		if (!bio) {
			bio = bio_alloc(dev->bdev, min_t(unsigned long, n - i, BIO_MAX_VECS),
					REQ_OP_READ, GFP_KERNEL | __GFP_NOFAIL);
			bio->bi_iter.bi_sector = sector + (i << (PAGE_SHIFT - SECTOR_SHIFT));
			bio->bi_private = slot;
			bio->bi_end_io = tempo_fill_end_io;
		}
		__bio_add_page(bio, slot->bounce->pages[i], PAGE_SIZE, 0);
		if (i + 1 == n || !((i + 1) % BIO_MAX_VECS)) {
			submit_bio(bio);
			bio = NULL;
		}
	}
}

/*
 * Reads the slot's extent from the backing device. Called without dev->lock;
 * in bounce mode it may wait for a pool buffer (killable: a killed caller's
 * fill fails with -ENOMEM).
 */
void tempo_fill_submit(struct tempo_dev *dev, struct tempo_slot *slot)
{
	struct bio *bio;

	/* an in-flight fill holds the module: rmmod fails (-EBUSY) instead of waiting */
	__module_get(THIS_MODULE);
	slot->bio_status = BLK_STS_OK;
	if (dev->dax_bounce) {
		if (wait_event_killable(dev->bounce_wait, (slot->bounce = tempo_bounce_get(dev)))) {
			slot->bio_status = BLK_STS_RESOURCE;
			tempo_fill_done(slot);
			return;
		}
		tempo_fill_submit_bounce(dev, slot);
		return;
	}
	/* A one-vector bio with a multi-page bvec; the block layer splits it. */
	atomic_set(&slot->bios, 1);
	bio = bio_alloc(dev->bdev, 1, REQ_OP_READ, GFP_KERNEL | __GFP_NOFAIL);
	bio->bi_iter.bi_sector = tempo_ext_offset(dev, slot->ext) >> SECTOR_SHIFT;
	bio->bi_private = slot;
	bio->bi_end_io = tempo_fill_end_io;
	__bio_add_page(bio, pfn_to_page(slot->pfn), dev->extent_bytes, 0);
	submit_bio(bio);
}

/* Copies a bounce buffer into the slot's DAX memory and returns it. May sleep. */
static void tempo_fill_copy_bounce(struct tempo_dev *dev, struct tempo_slot *slot, bool ok)
{
	void *dst = dev->dax_kaddr + (PFN_PHYS(slot->pfn) - dev->dax_start);
	unsigned long i, n = dev->extent_bytes >> PAGE_SHIFT;

	for (i = 0; ok && i < n; i++) {
		memcpy_flushcache(dst + (i << PAGE_SHIFT), page_address(slot->bounce->pages[i]),
				  PAGE_SIZE);
		cond_resched();
	}
	tempo_bounce_put(dev, slot->bounce);
	slot->bounce = NULL;
}

/* Makes an unpinned resident slot the most recently used. Caller holds dev->lock. */
void tempo_lru_touch_locked(struct tempo_dev *dev, struct tempo_slot *slot)
{
	lockdep_assert_held(&dev->lock);
	if (slot->state == TEMPO_SLOT_RESIDENT && !slot->pins)
		list_move_tail(&slot->node, &dev->lru);
}

void tempo_pin_slot_locked(struct tempo_dev *dev, struct tempo_slot *slot)
{
	lockdep_assert_held(&dev->lock);
	if (!slot->pins++) {
		dev->nr_pinned++;
		if (slot->state == TEMPO_SLOT_RESIDENT) {
			list_del_init(&slot->node);
			dev->nr_lru--;
		}
	}
	dev->pins++;
	trace_tempo_pin(tempo_ext_offset(dev, slot->ext), dev->extent_bytes, slot->pins);
}

void tempo_unpin_slot_locked(struct tempo_dev *dev, struct tempo_slot *slot, u32 count)
{
	lockdep_assert_held(&dev->lock);
	WARN_ON_ONCE(slot->pins < count);
	slot->pins -= count;
	dev->pins -= count;
	trace_tempo_unpin(tempo_ext_offset(dev, slot->ext), dev->extent_bytes, slot->pins);
	if (slot->pins)
		return;
	dev->nr_pinned--;
	if (slot->state == TEMPO_SLOT_RESIDENT) {
		list_add_tail(&slot->node, &dev->lru);
		dev->nr_lru++;
	}
}

/*
 * Drops every unpinned resident extent (one RESET notice for all); returns
 * how many. Caller holds dev->lock.
 */
u32 tempo_reset_locked(struct tempo_dev *dev)
{
	struct tempo_slot *slot;
	u32 n = 0;

	lockdep_assert_held(&dev->lock);
	while ((slot = tempo_evict_one_locked(dev, false))) {
		list_add_tail(&slot->node, &dev->free);
		dev->nr_free++;
		n++;
	}
	tempo_notify_locked(dev, TEMPO_REC_RESET, 0, (u64)n * dev->extent_bytes);
	return n;
}

/*
 * Copies a bounce fill's buffer into its slot (the slot is FILLING: nothing
 * else touches its memory yet), then ends the fill. Several run at once.
 */
static void tempo_fill_copy_work(struct work_struct *work)
{
	struct tempo_slot *slot = container_of(work, struct tempo_slot, copy_work);

	tempo_fill_copy_bounce(slot->dev, slot, slot->bio_status == BLK_STS_OK);
	tempo_fill_done(slot);
}

/* Completes one fill: resident (or freed on error), its batches told. */
static void tempo_fill_complete_locked(struct tempo_dev *dev, struct tempo_slot *slot)
{
	struct tempo_batch_ext *be, *next;
	int status = blk_status_to_errno(slot->bio_status);

	lockdep_assert_held(&dev->lock);
	if (status) {
		dev->stats.fill_errors++;
	} else if (slot->fault_fill) {
		dev->stats.fault_fills++;
		dev->stats.fault_bytes += dev->extent_bytes;
	} else {
		dev->stats.staged_bytes += dev->extent_bytes;
	}
	if (!status) {
		slot->state = TEMPO_SLOT_RESIDENT;
		if (!slot->pins) {
			list_add_tail(&slot->node, &dev->lru);
			dev->nr_lru++;
		}
	}
	list_for_each_entry_safe(be, next, &slot->waiters, wait_node) {
		list_del_init(&be->wait_node);
		tempo_batch_ext_done_locked(dev, be, status);
	}
	if (status) {
		WARN_ON_ONCE(slot->pins);
		xa_erase(&dev->map, slot->ext);
		slot->state = TEMPO_SLOT_FREE;
		list_add_tail(&slot->node, &dev->free);
		dev->nr_free++;
	}
	dev->nr_filling--;
	dev->fill_gen++;
}

/* Fills completed per hold of dev->lock. */
#define TEMPO_FILLS_CHUNK 1024

/*
 * Completes every fill whose read has ended, in the order they ended, taking
 * dev->lock once per TEMPO_FILLS_CHUNK of them rather than once each: a STAGE
 * of many extents then wakes one worker, not one per extent contending for
 * the lock.
 */
static void tempo_fills_work(struct work_struct *work)
{
	struct tempo_dev *dev = container_of(work, struct tempo_dev, fills_work);
	struct llist_node *done = llist_reverse_order(llist_del_all(&dev->fills_done));
	struct tempo_slot *slot, *next;
	u32 n = 0;

	mutex_lock(&dev->lock);
	llist_for_each_entry_safe(slot, next, done, done_node)
	{
		tempo_fill_complete_locked(dev, slot);
		if (++n % TEMPO_FILLS_CHUNK)
			continue;
		mutex_unlock(&dev->lock);
		wake_up_all(&dev->fill_wait);
		cond_resched();
		mutex_lock(&dev->lock);
	}
	mutex_unlock(&dev->lock);
	wake_up_all(&dev->fill_wait);
	/* each fill held the module; tempo_exit() destroys dev->wq, which waits for this work */
	while (n--)
		module_put(THIS_MODULE);
}
