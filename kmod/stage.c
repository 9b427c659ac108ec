// SPDX-License-Identifier: GPL-2.0
/*
 * STAGE: asynchronous batches of ranges made resident, with one completion
 * record per batch queued on the fd that submitted it (records.c).
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
	lockdep_assert_held(&dev->lock);
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
		tempo_records_queue_stage_locked(tf, b->ev);
		b->ev = NULL;
	}
	tempo_batch_free(b);
}

/* One extent of a batch is resident (status 0) or failed. Caller holds dev->lock. */
void tempo_batch_ext_done_locked(struct tempo_dev *dev, struct tempo_batch_ext *be, int status)
{
	struct tempo_batch *b = be->batch;

	lockdep_assert_held(&dev->lock);
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
}

/* What admitting extents adds up (tempo_stage_tally_locked()). */
struct tempo_admit {
	u32 need; /* extents without a slot */
	u32 lru; /* extents resident and unpinned: touched or pinned, not evicted */
	u32 new_pins; /* with TEMPO_STAGE_F_PIN: extents no fd pins yet */
	u64 new_fd_exts; /* with TEMPO_STAGE_F_PIN: extents this fd pins not yet */
};

/* Adds extents to a tally; with pin, checks each extent's pin caps (-EDQUOT). */
static int tempo_stage_tally_locked(struct tempo_file *tf, const u64 *exts, u32 nr, bool pin,
				    struct tempo_admit *a)
{
	struct tempo_dev *dev = tf->dev;
	u32 i;

	lockdep_assert_held(&dev->lock);
	for (i = 0; i < nr; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, exts[i]);

		if (!slot) {
			a->need++;
			a->new_pins++;
			continue;
		}
		if (slot->state == TEMPO_SLOT_RESIDENT && !slot->pins)
			a->lru++;
		if (!slot->pins)
			a->new_pins++;
	}
	return pin ? tempo_file_pin_count_locked(tf, exts, nr, &a->new_fd_exts) : 0;
}

/*
 * Whether the fast tier can take what was tallied: extents not yet mapped need
 * a slot (free, or evictable and not one of them), and with pin, newly pinned
 * extents must fit the pin limits.
 */
static int tempo_stage_fits_locked(struct tempo_file *tf, const struct tempo_admit *a, bool pin)
{
	struct tempo_dev *dev = tf->dev;

	lockdep_assert_held(&dev->lock);
	if ((u64)a->need + a->lru > (u64)dev->nr_free + dev->nr_lru)
		return -ENOSPC;
	if (!pin)
		return 0;
	if (((u64)dev->nr_pinned + a->new_pins) * dev->extent_bytes > dev->pin_limit_bytes)
		return -EDQUOT;
	return tempo_file_pin_fits_locked(tf, a->new_fd_exts);
}

/* Reserves map entries for the extents not yet mapped, so stores cannot fail. */
static int tempo_map_reserve_locked(struct tempo_dev *dev, const u64 *exts, u32 nr)
{
	u32 i;
	int ret;

	lockdep_assert_held(&dev->lock);
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

	lockdep_assert_held(&dev->lock);
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

/*
 * A STAGE works through its batch in pieces of TEMPO_STAGE_CHUNK extents and
 * lets others have dev->lock between them, so no call waits behind the
 * evictions and map updates of a big batch. A batch of fewer extents is
 * handled under one hold of the lock.
 */
#define TEMPO_STAGE_CHUNK 1024

/* What a STAGE call carries from piece to piece. */
struct tempo_stage_work {
	u64 *exts; /* the piece's extents: TEMPO_STAGE_CHUNK */
	struct tempo_batch_ext **be; /* the batch's entry of each */
	struct tempo_slot **fills; /* slots taken and not yet submitted: TEMPO_STAGE_CHUNK */
	u32 nr_fills;
	u32 nr_read; /* slots taken in all */
};

static int tempo_stage_work_alloc(struct tempo_stage_work *w, u32 nr_ext)
{
	const u32 n = min_t(u32, nr_ext, TEMPO_STAGE_CHUNK);

	w->exts = kvmalloc_array(n, sizeof(*w->exts), GFP_KERNEL);
	w->be = kvmalloc_array(n, sizeof(*w->be), GFP_KERNEL);
	w->fills = kvmalloc_array(n, sizeof(*w->fills), GFP_KERNEL);
	return w->exts && w->be && w->fills ? 0 : -ENOMEM;
}

static void tempo_stage_work_free(struct tempo_stage_work *w)
{
	kvfree(w->exts);
	kvfree(w->be);
	kvfree(w->fills);
}

/* Reads in the slots taken so far. Called without dev->lock. */
static void tempo_stage_submit(struct tempo_dev *dev, struct tempo_stage_work *w)
{
	u32 i;

	for (i = 0; i < w->nr_fills; i++)
		tempo_fill_submit(dev, w->fills[i]);
	w->nr_fills = 0;
}

/*
 * After a whole piece of TEMPO_STAGE_CHUNK extents (of any pass): submits the
 * fills taken and releases dev->lock a moment. A smaller batch never does.
 */
static void tempo_stage_breathe_locked(struct tempo_dev *dev, struct tempo_stage_work *w, u32 n)
{
	lockdep_assert_held(&dev->lock);
	if (n < TEMPO_STAGE_CHUNK)
		return;
	mutex_unlock(&dev->lock);
	tempo_stage_submit(dev, w);
	cond_resched();
	mutex_lock(&dev->lock);
}

/*
 * Attaches extents [first, first + n) of the batch: in the first pass those
 * mapped to a slot (so that the second pass, which evicts, never takes them),
 * in the second (take) the others, to a new slot each. The tier may have
 * changed since the batch was admitted (dev->lock was released between
 * pieces), so the piece is admitted again on its own: 0 or the errno that
 * becomes the batch's status. Caller holds dev->lock.
 */
static int tempo_stage_piece_locked(struct tempo_file *tf, struct tempo_batch *b, u32 first, u32 n,
				    bool pin, bool take, struct tempo_stage_work *w)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_admit a = {};
	u32 nr = 0, i;
	int ret;

	lockdep_assert_held(&dev->lock);
	if (dev->tier_lost)
		return -EIO;
	for (i = first; i < first + n; i++) {
		struct tempo_batch_ext *be = &b->ext[i];

		if (be->slot || (!take && !xa_load(&dev->map, be->ext)))
			continue;
		w->exts[nr] = be->ext;
		w->be[nr++] = be;
	}
	ret = tempo_stage_tally_locked(tf, w->exts, nr, pin, &a);
	if (!ret)
		ret = tempo_stage_fits_locked(tf, &a, pin);
	if (ret)
		return ret;
	ret = take ? tempo_map_reserve_locked(dev, w->exts, nr) : 0;
	if (ret)
		return ret;
	ret = pin ? tempo_file_pin_reserve_locked(tf, w->exts, nr) : 0;
	if (ret) {
		for (i = 0; take && i < nr; i++)
			xa_release(&dev->map, w->exts[i]);
		return ret;
	}
	/* Admitted: pin or touch what is mapped before evicting. */
	for (i = 0; i < nr; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, w->exts[i]);

		if (slot)
			tempo_stage_attach_locked(tf, w->be[i], slot, pin);
	}
	for (i = 0; i < nr; i++) {
		struct tempo_slot *slot;

		if (w->be[i]->slot)
			continue;
		slot = tempo_slot_get_locked(dev, w->exts[i]);
		tempo_stage_attach_locked(tf, w->be[i], slot, pin);
		w->fills[w->nr_fills++] = slot;
		w->nr_read++;
	}
	return 0;
}

/* -EIO once the tier is lost; -EAGAIN past the fd's bounds on batches; else 0. */
static int tempo_stage_room_locked(struct tempo_file *tf, u32 nr_ext)
{
	struct tempo_dev *dev = tf->dev;

	lockdep_assert_held(&dev->lock);
	if (dev->tier_lost)
		return -EIO;
	if (tf->nr_batches >= TEMPO_MAX_BATCHES_PER_FD ||
	    tf->inflight_exts + nr_ext > max_t(u32, dev->nr_slots, TEMPO_MAX_INFLIGHT_EXTS_PER_FD))
		return -EAGAIN;
	return 0;
}

long tempo_ioctl_stage(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_admit admit = {};
	struct tempo_stage_work w = {};
	struct tempo_batch *b;
	struct tempo_stage s;
	u32 nr_ext, i, take;
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
	if (!b->ev || tempo_stage_work_alloc(&w, nr_ext))
		goto out_free_batch;
	b->tf = tf;
	b->nr_ext = nr_ext;
	b->ev->rec.len = sizeof(b->ev->rec);
	b->ev->rec.kind = TEMPO_REC_STAGE;
	b->ev->rec.ticket = s.ticket;
	b->ev->rec.flags = s.flags;
	b->ev->rec.bytes = bytes;
	for (i = 0; i < nr_ext; i++) {
		b->ext[i].ext = exts[i];
		b->ext[i].batch = b;
		INIT_LIST_HEAD(&b->ext[i].wait_node);
	}

	mutex_lock(&dev->lock);
	/*
	 * A batch the tier cannot take is refused now, with nothing done: tallied
	 * TEMPO_STAGE_CHUNK extents per hold of the lock, then judged in one.
	 */
	ret = tempo_stage_room_locked(tf, nr_ext);
	for (i = 0; i < nr_ext && !ret; i += TEMPO_STAGE_CHUNK) {
		u32 n = min_t(u32, TEMPO_STAGE_CHUNK, nr_ext - i);

		ret = tempo_stage_tally_locked(tf, exts + i, n, pin, &admit);
		tempo_stage_breathe_locked(dev, &w, n);
	}
	if (!ret)
		ret = tempo_stage_room_locked(tf, nr_ext);
	if (!ret)
		ret = tempo_stage_fits_locked(tf, &admit, pin);
	if (ret)
		goto out_unlock;

	b->ev->rec.submit_ns = ktime_get_ns();
	kref_get(&tf->ref);
	tf->nr_batches++;
	tf->inflight_exts += nr_ext;
	list_add_tail(&b->node, &tf->inflight);
	dev->stats.stage_batches++;
	dev->stats.inflight_batches++;
	trace_tempo_stage_submit(s.ticket, nr_ext, bytes, 0, 0);
	/* Hold one count until every bio is out, so the batch cannot finish early. */
	b->remaining++;
	for (take = 0; take < 2; take++) {
		for (i = 0; i < nr_ext && !b->ev->rec.status; i += TEMPO_STAGE_CHUNK) {
			u32 n = min_t(u32, TEMPO_STAGE_CHUNK, nr_ext - i);

			ret = tempo_stage_piece_locked(tf, b, i, n, pin, take, &w);
			if (ret)
				b->ev->rec.status = ret;
			tempo_stage_breathe_locked(dev, &w, n);
		}
	}
	b->ev->rec.read_bytes = (u64)w.nr_read * dev->extent_bytes;
	mutex_unlock(&dev->lock);

	tempo_stage_submit(dev, &w);

	mutex_lock(&dev->lock);
	if (!--b->remaining)
		tempo_batch_finish_locked(dev, b);
	mutex_unlock(&dev->lock);
	tempo_stage_work_free(&w);
	kvfree(exts);
	return 0;

out_unlock:
	mutex_unlock(&dev->lock);
out_free_batch:
	tempo_stage_work_free(&w);
	kfree(b->ev);
	kvfree(b);
out_free_exts:
	kvfree(exts);
	return ret;
}
