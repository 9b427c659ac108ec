// SPDX-License-Identifier: GPL-2.0
/*
 * STAGE: asynchronous batches of ranges made resident, with one completion
 * record per batch queued on the fd that submitted it; eviction notices for
 * fds that asked for them; read() of both in the order they happened.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "tempo.h"
#include "trace.h"

static void tempo_file_free(struct kref *ref)
{
	struct tempo_file *tf = container_of(ref, struct tempo_file, ref);

	kvfree(tf->notices);
	kfree(tf);
}

void tempo_file_put(struct tempo_file *tf)
{
	kref_put(&tf->ref, tempo_file_free);
}

/* Frees a batch that is no longer on any list, and its reference to the fd. */
static void tempo_batch_free(struct tempo_batch *b)
{
	struct tempo_file *tf = b->tf;

	kfree(b->ev);
	kvfree(b);
	tempo_file_put(tf);
}

/* Drops the pin the batch holds on one extent. Caller holds dev->lock. */
static void tempo_batch_unpin_locked(struct tempo_dev *dev, struct tempo_batch_ext *be)
{
	tempo_file_pin_drop_locked(be->batch->tf, be->ext, true);
	tempo_unpin_slot_locked(dev, be->slot, 1);
	be->pinned = false;
}

/*
 * The batch's last extent is in (or failed): its pins pass to the fd (or are
 * dropped on error), its record is queued and the batch itself is freed.
 * Caller holds dev->lock.
 */
static void tempo_batch_finish_locked(struct tempo_dev *dev, struct tempo_batch *b)
{
	struct tempo_file *tf = b->tf;
	struct tempo_completion *rec = &b->ev->rec;
	u32 i;

	lockdep_assert_held(&dev->lock);
	for (i = 0; i < b->nr_ext; i++) {
		struct tempo_batch_ext *be = &b->ext[i];

		if (!be->pinned)
			continue;
		if (rec->status) {
			tempo_batch_unpin_locked(dev, be);
		} else {
			tempo_file_pin_settle_locked(tf, be->ext);
			be->pinned = false;
		}
	}
	if (rec->status)
		dev->stats.stage_errors++;
	rec->complete_ns = ktime_get_ns();
	dev->stats.inflight_batches--;
	tf->inflight_exts -= b->nr_ext;
	trace_tempo_stage_complete(rec->ticket, b->nr_ext, rec->bytes, rec->status,
				   rec->complete_ns - rec->submit_ns);
	list_del(&b->node);
	if (!tf->closed) {
		spin_lock(&tf->cq_lock);
		b->ev->seq = tf->seq++;
		list_add_tail(&b->ev->node, &tf->cq);
		spin_unlock(&tf->cq_lock);
		b->ev = NULL;
		wake_up_interruptible(&tf->cq_wait);
	}
	tempo_batch_free(b);
}

/* One extent of a batch is resident (status 0) or failed. Caller holds dev->lock. */
void tempo_batch_ext_done_locked(struct tempo_dev *dev, struct tempo_batch_ext *be, int status)
{
	struct tempo_batch *b = be->batch;

	/* the failed slot is freed next: the batch's pin on it goes now */
	if (status && be->pinned)
		tempo_batch_unpin_locked(dev, be);
	if (status && !b->ev->rec.status)
		b->ev->rec.status = status;
	if (!--b->remaining)
		tempo_batch_finish_locked(dev, b);
}

/* The fd is closing: its batches keep running but hold no pins. */
void tempo_file_release_batches_locked(struct tempo_file *tf)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_batch *b;
	u32 i;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry(b, &tf->inflight, node)
		for (i = 0; i < b->nr_ext; i++)
			if (b->ext[i].pinned)
				tempo_batch_unpin_locked(dev, &b->ext[i]);
	tf->closed = true;
	list_del_init(&tf->subscriber);
}

/*
 * Queues a notice on every subscribed fd. A full ring turns its newest notice
 * into a LOST record that absorbs the rest until the reader catches up.
 * Caller holds dev->lock; does not sleep.
 */
void tempo_notify_locked(struct tempo_dev *dev, u16 kind, u64 offset, u64 bytes)
{
	u64 now = ktime_get_ns();
	struct tempo_file *tf;

	lockdep_assert_held(&dev->lock);
	list_for_each_entry(tf, &dev->subscribers, subscriber) {
		struct tempo_notice *n;

		spin_lock(&tf->cq_lock);
		if (tf->nr_notices == TEMPO_NOTICES_PER_FD) {
			n = &tf->notices[(tf->notice_head + tf->nr_notices - 1) %
					 TEMPO_NOTICES_PER_FD];
			if (n->kind != TEMPO_REC_LOST) {
				n->kind = TEMPO_REC_LOST;
				n->offset = 0;
			}
			n->bytes += bytes;
			n->ns = now;
		} else {
			n = &tf->notices[(tf->notice_head + tf->nr_notices++) %
					 TEMPO_NOTICES_PER_FD];
			*n = (struct tempo_notice){ .seq = tf->seq++,
						    .offset = offset,
						    .bytes = bytes,
						    .ns = now,
						    .kind = kind };
		}
		spin_unlock(&tf->cq_lock);
		wake_up_interruptible(&tf->cq_wait);
	}
}

long tempo_ioctl_set_events(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_notice *ring = NULL;
	struct tempo_events e;

	if (copy_from_user(&e, argp, sizeof(e)))
		return -EFAULT;
	if (e.mask & ~TEMPO_EVENT_ALL || e.reserved0 || e.reserved[0] || e.reserved[1] ||
	    e.reserved[2])
		return -EINVAL;
	if (e.mask && !READ_ONCE(tf->notices)) {
		ring = kvcalloc(TEMPO_NOTICES_PER_FD, sizeof(*ring), TEMPO_GFP_FILE);
		if (!ring)
			return -ENOMEM;
	}
	mutex_lock(&dev->lock);
	spin_lock(&tf->cq_lock);
	if (ring && !tf->notices) {
		tf->notices = ring;
		ring = NULL;
	}
	spin_unlock(&tf->cq_lock);
	tf->events = e.mask;
	if (e.mask && list_empty(&tf->subscriber))
		list_add_tail(&tf->subscriber, &dev->subscribers);
	else if (!e.mask)
		list_del_init(&tf->subscriber);
	mutex_unlock(&dev->lock);
	kvfree(ring);
	return 0;
}

/*
 * Checks that the fast tier can take the batch: extents not yet in the map
 * need a slot (free, or evictable and not part of this batch), and with
 * TEMPO_STAGE_F_PIN newly pinned extents must fit the pin limits.
 */
static int tempo_stage_admit_locked(struct tempo_file *tf, const u64 *exts, u32 nr, bool pin)
{
	struct tempo_dev *dev = tf->dev;
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
	if (!pin)
		return 0;
	if (((u64)dev->nr_pinned + new_pins) * dev->extent_bytes > dev->pin_limit_bytes)
		return -EDQUOT;
	return tempo_file_pin_check_locked(tf, exts, nr);
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

/* Links one extent of an admitted batch to its slot. Caller holds dev->lock. */
static void tempo_stage_attach_locked(struct tempo_file *tf, struct tempo_batch_ext *be,
				      struct tempo_slot *slot, bool pin)
{
	struct tempo_dev *dev = tf->dev;

	be->slot = slot;
	if (pin) {
		tempo_pin_slot_locked(dev, slot);
		tempo_file_pin_add_locked(tf, be->ext, true);
		be->pinned = true;
	} else {
		tempo_lru_touch_locked(dev, slot);
	}
	if (slot->state == TEMPO_SLOT_FILLING) {
		list_add_tail(&be->wait_node, &slot->waiters);
		be->batch->remaining++;
	}
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
	b = kvzalloc(struct_size(b, ext, nr_ext), TEMPO_GFP_FILE);
	if (!b)
		goto out_free_exts;
	b->ev = kzalloc(sizeof(*b->ev), TEMPO_GFP_FILE);
	if (!b->ev)
		goto out_free_batch;
	fills = kvmalloc_array(nr_ext, sizeof(*fills), GFP_KERNEL);
	if (!fills)
		goto out_free_batch;
	b->tf = tf;
	b->nr_ext = nr_ext;
	b->ev->rec.len = sizeof(b->ev->rec);
	b->ev->rec.kind = TEMPO_REC_STAGE;
	b->ev->rec.ticket = s.ticket;
	b->ev->rec.flags = s.flags;
	b->ev->rec.bytes = bytes;

	mutex_lock(&dev->lock);
	ret = -EAGAIN;
	if (tf->nr_batches >= TEMPO_MAX_BATCHES_PER_FD ||
	    tf->inflight_exts + nr_ext > max_t(u32, dev->nr_slots, TEMPO_MAX_INFLIGHT_EXTS_PER_FD))
		goto out_unlock;
	ret = tempo_stage_admit_locked(tf, exts, nr_ext, pin);
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
	b->ev->rec.submit_ns = ktime_get_ns();
	for (i = 0; i < nr_ext; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, exts[i]);

		b->ext[i].ext = exts[i];
		b->ext[i].batch = b;
		INIT_LIST_HEAD(&b->ext[i].wait_node);
		if (slot)
			tempo_stage_attach_locked(tf, &b->ext[i], slot, pin);
	}
	for (i = 0; i < nr_ext; i++) {
		struct tempo_slot *slot;

		if (b->ext[i].slot)
			continue;
		slot = tempo_slot_get_locked(dev, exts[i]);
		tempo_stage_attach_locked(tf, &b->ext[i], slot, pin);
		fills[nr_fills++] = slot;
	}

	b->ev->rec.read_bytes = (u64)nr_fills * dev->extent_bytes;
	kref_get(&tf->ref);
	tf->nr_batches++;
	tf->inflight_exts += nr_ext;
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
	kfree(b->ev);
	kvfree(b);
out_free_exts:
	kvfree(exts);
	return ret;
}
