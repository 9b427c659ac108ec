// SPDX-License-Identifier: GPL-2.0
/*
 * STAGE: asynchronous batches of ranges made resident, with one completion
 * record per batch queued on the fd that submitted it.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "tempo.h"
#include "trace.h"

static void tempo_file_free(struct kref *ref)
{
	struct tempo_file *tf = container_of(ref, struct tempo_file, ref);

	kfree(tf);
}

void tempo_file_put(struct tempo_file *tf)
{
	kref_put(&tf->ref, tempo_file_free);
}

/* The batch's last extent is in (or failed). Caller holds dev->lock. */
static void tempo_batch_finish_locked(struct tempo_dev *dev, struct tempo_batch *b)
{
	struct tempo_file *tf = b->tf;
	u32 i;

	lockdep_assert_held(&dev->lock);
	if (b->done.status) {
		for (i = 0; i < b->nr_ext; i++) {
			struct tempo_batch_ext *be = &b->ext[i];

			if (!be->pinned)
				continue;
			tempo_file_pin_drop_locked(tf, be->ext);
			tempo_unpin_slot_locked(dev, xa_load(&dev->map, be->ext), 1);
			be->pinned = false;
		}
		dev->stats.stage_errors++;
	}
	b->done.complete_ns = ktime_get_ns();
	dev->stats.inflight_batches--;
	trace_tempo_stage_complete(b->done.ticket, b->nr_ext, b->done.bytes, b->done.status,
				   b->done.complete_ns - b->done.submit_ns);
	list_del(&b->node);
	if (tf->closed) {
		kvfree(b);
		tempo_file_put(tf);
		return;
	}
	spin_lock(&tf->cq_lock);
	list_add_tail(&b->node, &tf->cq);
	spin_unlock(&tf->cq_lock);
	wake_up_interruptible(&tf->cq_wait);
}

/* One extent of a batch is resident (status 0) or failed. Caller holds dev->lock. */
void tempo_batch_ext_done_locked(struct tempo_dev *dev, struct tempo_batch_ext *be, int status)
{
	struct tempo_batch *b = be->batch;

	if (status && !b->done.status)
		b->done.status = status;
	if (!--b->remaining)
		tempo_batch_finish_locked(dev, b);
}

/* The fd is closing: its batches keep running but hold no pins. */
void tempo_file_release_batches_locked(struct tempo_file *tf)
{
	struct tempo_batch *b;
	u32 i;

	lockdep_assert_held(&tf->dev->lock);
	list_for_each_entry(b, &tf->inflight, node)
		for (i = 0; i < b->nr_ext; i++)
			b->ext[i].pinned = false;
	tf->closed = true;
}

/*
 * Checks that the fast tier can take the batch: extents not yet in the map
 * need a slot (free, or evictable and not part of this batch), and with
 * TEMPO_STAGE_F_PIN newly pinned extents must fit the pin limit.
 */
static int tempo_stage_admit_locked(struct tempo_dev *dev, const u64 *exts, u32 nr, bool pin)
{
	u32 i, need = 0, lru_in_batch = 0, new_pins = 0;

	for (i = 0; i < nr; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, exts[i]);

		if (!slot) {
			need++;
			new_pins++;
			continue;
		}
		if (slot->state == TEMPO_SLOT_RESIDENT && !slot->pins)
			lru_in_batch++;
		if (!slot->pins)
			new_pins++;
	}
	if (need > dev->nr_free + dev->nr_lru - lru_in_batch)
		return -ENOSPC;
	if (pin && ((u64)dev->nr_pinned + new_pins) * dev->extent_bytes > dev->pin_limit_bytes)
		return -EDQUOT;
	return 0;
}

/* Reserves map entries for the extents not yet mapped, so stores cannot fail. */
static int tempo_map_reserve_locked(struct tempo_dev *dev, const u64 *exts, u32 nr)
{
	u32 i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = xa_reserve(&dev->map, exts[i], GFP_KERNEL);
		if (ret) {
			while (i--)
				xa_release(&dev->map, exts[i]);
			return ret;
		}
	}
	return 0;
}

long tempo_ioctl_stage(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_slot **fills;
	struct tempo_batch *b;
	struct tempo_stage s;
	u32 nr_ext, nr_fills = 0, i;
	u64 *exts, bytes;
	bool pin;
	long ret;

	if (copy_from_user(&s, argp, sizeof(s)))
		return -EFAULT;
	if (s.flags & ~TEMPO_STAGE_F_ALL || s.reserved[0] || s.reserved[1])
		return -EINVAL;
	pin = s.flags & TEMPO_STAGE_F_PIN;
	ret = tempo_copy_ranges(dev, s.ranges, s.nr_ranges, &exts, &nr_ext, &bytes);
	if (ret)
		return ret;

	ret = -ENOMEM;
	b = kvzalloc(struct_size(b, ext, nr_ext), GFP_KERNEL);
	if (!b)
		goto out_free_exts;
	fills = kvmalloc_array(nr_ext, sizeof(*fills), GFP_KERNEL);
	if (!fills)
		goto out_free_batch;
	b->tf = tf;
	b->nr_ext = nr_ext;
	b->done.ticket = s.ticket;
	b->done.flags = s.flags;
	b->done.bytes = bytes;

	mutex_lock(&dev->lock);
	ret = -EAGAIN;
	if (tf->nr_batches >= TEMPO_MAX_BATCHES_PER_FD)
		goto out_unlock;
	ret = tempo_stage_admit_locked(dev, exts, nr_ext, pin);
	if (ret)
		goto out_unlock;
	ret = tempo_map_reserve_locked(dev, exts, nr_ext);
	if (ret)
		goto out_unlock;
	if (pin) {
		ret = tempo_file_pin_reserve_locked(tf, exts, nr_ext);
		if (ret)
			goto out_release_map;
	}

	/* Admitted: from here nothing fails. Pin what is mapped before evicting. */
	b->done.submit_ns = ktime_get_ns();
	for (i = 0; i < nr_ext; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, exts[i]);

		b->ext[i].ext = exts[i];
		b->ext[i].batch = b;
		INIT_LIST_HEAD(&b->ext[i].wait_node);
		if (!slot)
			continue;
		if (pin) {
			tempo_pin_slot_locked(dev, slot);
			tempo_file_pin_add_locked(tf, exts[i]);
			b->ext[i].pinned = true;
		} else {
			tempo_lru_touch_locked(dev, slot);
		}
		if (slot->state == TEMPO_SLOT_FILLING) {
			list_add_tail(&b->ext[i].wait_node, &slot->waiters);
			b->remaining++;
		}
	}
	for (i = 0; i < nr_ext; i++) {
		struct tempo_slot *slot;

		if (xa_load(&dev->map, exts[i]))
			continue;
		slot = tempo_slot_get_locked(dev, exts[i]);
		if (pin) {
			tempo_pin_slot_locked(dev, slot);
			tempo_file_pin_add_locked(tf, exts[i]);
			b->ext[i].pinned = true;
		}
		list_add_tail(&b->ext[i].wait_node, &slot->waiters);
		b->remaining++;
		fills[nr_fills++] = slot;
	}

	b->done.read_bytes = (u64)nr_fills * dev->extent_bytes;
	kref_get(&tf->ref);
	tf->nr_batches++;
	list_add_tail(&b->node, &tf->inflight);
	dev->stats.stage_batches++;
	dev->stats.inflight_batches++;
	trace_tempo_stage_submit(s.ticket, nr_ext, bytes, 0, 0);
	/* Hold one count until every bio is out, so the batch cannot finish early. */
	b->remaining++;
	mutex_unlock(&dev->lock);

	for (i = 0; i < nr_fills; i++)
		tempo_fill_submit(dev, fills[i]);

	mutex_lock(&dev->lock);
	if (!--b->remaining)
		tempo_batch_finish_locked(dev, b);
	mutex_unlock(&dev->lock);
	kvfree(fills);
	kvfree(exts);
	return 0;

out_release_map:
	for (i = 0; i < nr_ext; i++)
		xa_release(&dev->map, exts[i]);
out_unlock:
	mutex_unlock(&dev->lock);
	kvfree(fills);
out_free_batch:
	kvfree(b);
out_free_exts:
	kvfree(exts);
	return ret;
}
