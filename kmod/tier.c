// SPDX-License-Identifier: GPL-2.0
/*
 * The fast tier: extent-sized slots of kernel pages or of a Device-DAX range,
 * the map from logical extents to slots, fills from the backing device and
 * LRU eviction of unpinned resident extents.
 */
#include <linux/bio.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "tempo.h"
#include "trace.h"

static void tempo_fill_work(struct work_struct *work);

static void tempo_slot_init(struct tempo_dev *dev, struct tempo_slot *slot, unsigned long pfn)
{
	slot->dev = dev;
	slot->pfn = pfn;
	slot->state = TEMPO_SLOT_FREE;
	INIT_LIST_HEAD(&slot->waiters);
	INIT_WORK(&slot->work, tempo_fill_work);
	list_add_tail(&slot->node, &dev->free);
	dev->nr_free++;
}

/*
 * Sets up fast_bytes of kernel pages, or the Device-DAX range
 * [dax_start, dax_start + dax_size) when dax_size is not zero. The DAX range
 * must have struct pages (a devdax namespace bound to device_dax). Fills DMA
 * straight into it, or with !dax_dma read into a bounce buffer and copy (for
 * platforms whose disks cannot DMA into the range, such as QEMU's emulated
 * CXL window). May sleep.
 */
int tempo_tier_init(struct tempo_dev *dev, u64 fast_bytes, u64 dax_start, u64 dax_size,
		    bool dax_dma)
{
	unsigned int order = dev->extent_shift - PAGE_SHIFT;
	unsigned long pfn;
	u32 i;
	int ret;

	INIT_LIST_HEAD(&dev->lru);
	INIT_LIST_HEAD(&dev->free);
	if (dax_size)
		fast_bytes = dax_size;
	dev->nr_slots = fast_bytes >> dev->extent_shift;
	if (dev->nr_slots < 2)
		return -EINVAL;

	ret = -ENOMEM;
	dev->slots = kvcalloc(dev->nr_slots, sizeof(*dev->slots), GFP_KERNEL);
	if (!dev->slots)
		goto out;

	if (dax_size) {
		ret = -EINVAL;
		if (!PAGE_ALIGNED(dax_start) || !pfn_valid(PHYS_PFN(dax_start)) ||
		    !pfn_valid(PHYS_PFN(dax_start + dax_size - 1)))
			goto out_free_slots;
		dev->dax_kaddr = memremap(dax_start, dax_size, MEMREMAP_WB);
		if (!dev->dax_kaddr)
			goto out_free_slots;
		dev->fast_kind = TEMPO_FAST_DAX;
		dev->dax_start = dax_start;
		dev->dax_bounce = !dax_dma;
		pfn = PHYS_PFN(dax_start);
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
	kvfree(dev->slots);
	dev->slots = NULL;
out:
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
	if (dev->dax_kaddr)
		memunmap(dev->dax_kaddr);
	kvfree(dev->slots);
	xa_destroy(&dev->map);
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

static void tempo_fill_end_io(struct bio *bio)
{
	struct tempo_slot *slot = bio->bi_private;

	slot->bio_status = bio->bi_status;
	bio_put(bio);
	queue_work(slot->dev->wq, &slot->work);
}

/* Reads the slot's extent from the backing device. Called without dev->lock. */
void tempo_fill_submit(struct tempo_dev *dev, struct tempo_slot *slot)
{
	struct page *target = pfn_to_page(slot->pfn);
	struct bio *bio;

	if (dev->dax_bounce) {
		slot->bounce =
			alloc_pages(GFP_KERNEL | __GFP_NOWARN, dev->extent_shift - PAGE_SHIFT);
		if (!slot->bounce) {
			slot->bio_status = BLK_STS_RESOURCE;
			queue_work(dev->wq, &slot->work);
			return;
		}
		target = slot->bounce;
	}
	/* A one-vector bio with a multi-page bvec; the block layer splits it. */
	bio = bio_alloc(dev->bdev, 1, REQ_OP_READ, GFP_KERNEL | __GFP_NOFAIL);
	bio->bi_iter.bi_sector = tempo_ext_offset(dev, slot->ext) >> SECTOR_SHIFT;
	bio->bi_private = slot;
	bio->bi_end_io = tempo_fill_end_io;
	__bio_add_page(bio, target, dev->extent_bytes, 0);
	submit_bio(bio);
}

/* Copies a bounce buffer into the slot's DAX memory and frees it. May sleep. */
static void tempo_fill_copy_bounce(struct tempo_dev *dev, struct tempo_slot *slot, bool ok)
{
	void *dst = dev->dax_kaddr + (PFN_PHYS(slot->pfn) - dev->dax_start);
	unsigned long i, n = dev->extent_bytes >> PAGE_SHIFT;

	for (i = 0; ok && i < n; i++) {
		memcpy_flushcache(dst + (i << PAGE_SHIFT), page_address(slot->bounce + i),
				  PAGE_SIZE);
		cond_resched();
	}
	__free_pages(slot->bounce, dev->extent_shift - PAGE_SHIFT);
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

/* Completes a fill in process context. Takes dev->lock. */
static void tempo_fill_work(struct work_struct *work)
{
	struct tempo_slot *slot = container_of(work, struct tempo_slot, work);
	struct tempo_dev *dev = slot->dev;
	struct tempo_batch_ext *be, *next;
	int status = blk_status_to_errno(slot->bio_status);

	/* the slot is FILLING: nothing else touches its memory yet */
	if (slot->bounce)
		tempo_fill_copy_bounce(dev, slot, !status);
	mutex_lock(&dev->lock);
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
	mutex_unlock(&dev->lock);
	wake_up_all(&dev->fill_wait);
}
