// SPDX-License-Identifier: GPL-2.0
/*
 * PIN, UNPIN and QUERY, and the per-fd pin table that lets close() drop
 * every pin a fd took.
 */
#include <linux/uaccess.h>

#include "tempo.h"

/*
 * The per-fd pin table: extent -> xa_mk_value(own | batch << 32). "own" pins
 * belong to the fd (PIN, and F_PIN batches once complete) and are what UNPIN
 * may drop; "batch" pins are held by this fd's F_PIN batches still in flight
 * and only those batches drop or settle them. Caller holds dev->lock.
 */
#define TEMPO_PIN_BATCH_SHIFT 32

static u64 tempo_file_pin_entry_locked(struct tempo_file *tf, u64 ext)
{
	void *entry;

	lockdep_assert_held(&tf->dev->lock);
	entry = xa_load(&tf->pins, ext);
	return entry ? xa_to_value(entry) : 0;
}

static u32 tempo_file_own_pins_locked(struct tempo_file *tf, u64 ext)
{
	lockdep_assert_held(&tf->dev->lock);
	return lower_32_bits(tempo_file_pin_entry_locked(tf, ext));
}

static u32 tempo_file_all_pins_locked(struct tempo_file *tf, u64 ext)
{
	u64 v = tempo_file_pin_entry_locked(tf, ext);

	lockdep_assert_held(&tf->dev->lock);
	return lower_32_bits(v) + (u32)(v >> TEMPO_PIN_BATCH_SHIFT);
}

/*
 * Checks the per-extent pin caps for one more pin on each extent (at most
 * TEMPO_FD_EXTENT_PINS by one fd on one extent, at most U32_MAX on an extent
 * in all) and adds to *new_exts those this fd does not pin yet.
 */
int tempo_file_pin_count_locked(struct tempo_file *tf, const u64 *exts, u32 nr, u64 *new_exts)
{
	struct tempo_dev *dev = tf->dev;
	u32 i;

	lockdep_assert_held(&dev->lock);
	for (i = 0; i < nr; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, exts[i]);
		u32 n = tempo_file_all_pins_locked(tf, exts[i]);

		if (n >= TEMPO_FD_EXTENT_PINS || (slot && slot->pins == U32_MAX))
			return -EDQUOT;
		if (!n)
			(*new_exts)++;
	}
	return 0;
}

/* At most fd_pin_limit_bytes of distinct extents per fd, new_exts more included. */
int tempo_file_pin_fits_locked(struct tempo_file *tf, u64 new_exts)
{
	struct tempo_dev *dev = tf->dev;

	lockdep_assert_held(&dev->lock);
	return (tf->nr_pinned + new_exts) * dev->extent_bytes > dev->fd_pin_limit_bytes ? -EDQUOT
											: 0;
}

/* Reserves pin-table entries so the adds that follow cannot fail. */
int tempo_file_pin_reserve_locked(struct tempo_file *tf, const u64 *exts, u32 nr)
{
	u32 i;
	int ret;

	lockdep_assert_held(&tf->dev->lock);
	for (i = 0; i < nr; i++) {
		ret = xa_reserve(&tf->pins, exts[i], TEMPO_GFP_FILE);
		if (ret) {
			while (i--)
				xa_release(&tf->pins, exts[i]);
			return ret;
		}
	}
	return 0;
}

static void tempo_file_pin_set_locked(struct tempo_file *tf, u64 ext, u64 old, u64 v)
{
	lockdep_assert_held(&tf->dev->lock);
	if (!old && v)
		tf->nr_pinned++;
	if (v) {
		xa_store(&tf->pins, ext, xa_mk_value(v), TEMPO_GFP_FILE);
	} else {
		xa_erase(&tf->pins, ext);
		tf->nr_pinned--;
	}
}

/* One more pin, the fd's own or a batch's; the entry was reserved. */
void tempo_file_pin_add_locked(struct tempo_file *tf, u64 ext, bool batch)
{
	u64 v = tempo_file_pin_entry_locked(tf, ext);

	lockdep_assert_held(&tf->dev->lock);
	tempo_file_pin_set_locked(tf, ext, v, v + (batch ? 1ULL << TEMPO_PIN_BATCH_SHIFT : 1));
}

void tempo_file_pin_drop_locked(struct tempo_file *tf, u64 ext, bool batch)
{
	u64 v = tempo_file_pin_entry_locked(tf, ext);

	lockdep_assert_held(&tf->dev->lock);
	tempo_file_pin_set_locked(tf, ext, v, v - (batch ? 1ULL << TEMPO_PIN_BATCH_SHIFT : 1));
}

/* A batch completed: its pin on ext becomes the fd's own (no allocation). */
void tempo_file_pin_settle_locked(struct tempo_file *tf, u64 ext)
{
	u64 v = tempo_file_pin_entry_locked(tf, ext);

	lockdep_assert_held(&tf->dev->lock);
	tempo_file_pin_set_locked(tf, ext, v, v - (1ULL << TEMPO_PIN_BATCH_SHIFT) + 1);
}

/* close(), after the fd's batches dropped theirs: drop every own pin. */
void tempo_file_release_pins_locked(struct tempo_file *tf)
{
	struct tempo_dev *dev = tf->dev;
	unsigned long ext;
	void *entry;

	lockdep_assert_held(&dev->lock);
	xa_for_each(&tf->pins, ext, entry)
		tempo_unpin_slot_locked(dev, xa_load(&dev->map, ext),
					lower_32_bits(xa_to_value(entry)));
	xa_destroy(&tf->pins);
	tf->nr_pinned = 0;
}

static int tempo_copy_pin(struct tempo_file *tf, void __user *argp, u64 **exts, u32 *nr_ext)
{
	struct tempo_pin p;
	u64 bytes;

	if (copy_from_user(&p, argp, sizeof(p)))
		return -EFAULT;
	if (p.flags & ~TEMPO_PIN_F_ALL || p.reserved[0] || p.reserved[1])
		return -EINVAL;
	return tempo_copy_ranges(tf->dev, p.ranges, p.nr_ranges, exts, nr_ext, &bytes);
}

long tempo_ioctl_pin(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	u32 nr_ext, new_pins = 0, i;
	u64 *exts, new_exts = 0;
	long ret;

	ret = tempo_copy_pin(tf, argp, &exts, &nr_ext);
	if (ret)
		return ret;

	mutex_lock(&dev->lock);
	for (i = 0; i < nr_ext; i++) {
		struct tempo_slot *slot = xa_load(&dev->map, exts[i]);

		ret = -EAGAIN;
		if (!slot || slot->state != TEMPO_SLOT_RESIDENT)
			goto out_unlock;
		if (!slot->pins)
			new_pins++;
	}
	ret = -EDQUOT;
	if (((u64)dev->nr_pinned + new_pins) * dev->extent_bytes > dev->pin_limit_bytes)
		goto out_unlock;
	ret = tempo_file_pin_count_locked(tf, exts, nr_ext, &new_exts);
	if (!ret)
		ret = tempo_file_pin_fits_locked(tf, new_exts);
	if (ret)
		goto out_unlock;
	ret = tempo_file_pin_reserve_locked(tf, exts, nr_ext);
	if (ret)
		goto out_unlock;
	for (i = 0; i < nr_ext; i++) {
		tempo_pin_slot_locked(dev, xa_load(&dev->map, exts[i]));
		tempo_file_pin_add_locked(tf, exts[i], false);
	}
	dev->stats.pin_calls++;
out_unlock:
	mutex_unlock(&dev->lock);
	kvfree(exts);
	return ret;
}

long tempo_ioctl_unpin(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	u32 nr_ext, i;
	u64 *exts;
	long ret;

	ret = tempo_copy_pin(tf, argp, &exts, &nr_ext);
	if (ret)
		return ret;

	mutex_lock(&dev->lock);
	ret = -EINVAL;
	for (i = 0; i < nr_ext; i++)
		if (!tempo_file_own_pins_locked(tf, exts[i]))
			goto out_unlock;
	for (i = 0; i < nr_ext; i++) {
		tempo_file_pin_drop_locked(tf, exts[i], false);
		tempo_unpin_slot_locked(dev, xa_load(&dev->map, exts[i]), 1);
	}
	dev->stats.unpin_calls++;
	ret = 0;
out_unlock:
	mutex_unlock(&dev->lock);
	kvfree(exts);
	return ret;
}

/* Entries a QUERY walk visits between dropping dev->lock to reschedule. */
#define TEMPO_QUERY_CHUNK 256

/* Every TEMPO_QUERY_CHUNK visits, lets others have dev->lock and the CPU. */
static void tempo_query_breathe_locked(struct tempo_dev *dev, u32 *n)
{
	lockdep_assert_held(&dev->lock);
	if (++*n % TEMPO_QUERY_CHUNK)
		return;
	mutex_unlock(&dev->lock);
	cond_resched();
	mutex_lock(&dev->lock);
}

/* Bytes of extent ext inside [off, end). */
static u64 tempo_clip(const struct tempo_dev *dev, u64 ext, u64 off, u64 end)
{
	return min(end, tempo_ext_offset(dev, ext + 1)) - max(off, tempo_ext_offset(dev, ext));
}

/*
 * Visits only the mapped extents of the range and this fd's pin entries (at
 * most the fast tier's slots each, not the range's extents), dropping
 * dev->lock every TEMPO_QUERY_CHUNK entries. The answer is exact for a quiet
 * device; with concurrent changes each extent is seen at some moment of the
 * call. May sleep.
 */
long tempo_ioctl_query(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	u64 first, last, total, mapped = 0, own = 0, end;
	u32 min_pins = U32_MAX, own_min = U32_MAX, n = 0;
	unsigned long ext;
	struct tempo_range r;
	struct tempo_query q;
	void *entry;
	long ret;

	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	if (q.reserved[0] || q.reserved[1])
		return -EINVAL;
	r.offset = q.offset;
	r.length = q.length;
	ret = tempo_check_range(dev, &r);
	if (ret)
		return ret;

	end = r.offset + r.length;
	first = r.offset >> dev->extent_shift;
	last = (end - 1) >> dev->extent_shift;
	total = last - first + 1;
	q.resident_bytes = 0;
	q.filling_bytes = 0;
	q.pinned_bytes = 0;
	mutex_lock(&dev->lock);
	xa_for_each_range(&dev->map, ext, entry, first, last) {
		struct tempo_slot *slot = entry;
		u64 bytes = tempo_clip(dev, ext, r.offset, end);

		mapped++;
		if (slot->state == TEMPO_SLOT_RESIDENT)
			q.resident_bytes += bytes;
		else
			q.filling_bytes += bytes;
		if (slot->pins)
			q.pinned_bytes += bytes;
		min_pins = min(min_pins, slot->pins);
		tempo_query_breathe_locked(dev, &n);
	}
	xa_for_each_range(&tf->pins, ext, entry, first, last) {
		own++;
		own_min = min(own_min, tempo_file_all_pins_locked(tf, ext));
		tempo_query_breathe_locked(dev, &n);
	}
	mutex_unlock(&dev->lock);
	/* an extent without a map entry (or pin entry) has no pins */
	q.min_pins = mapped == total ? min_pins : 0;
	q.own_min_pins = own == total ? own_min : 0;
	if (copy_to_user(argp, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}
