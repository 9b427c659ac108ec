// SPDX-License-Identifier: GPL-2.0
/*
 * PIN, UNPIN and QUERY, and the per-fd pin table that lets close() drop
 * every pin a fd took.
 */
#include <linux/uaccess.h>

#include "tempo.h"

static u32 tempo_file_pins_locked(struct tempo_file *tf, u64 ext)
{
	void *entry = xa_load(&tf->pins, ext);

	return entry ? xa_to_value(entry) : 0;
}

/* Reserves pin-table entries so the adds that follow cannot fail. */
int tempo_file_pin_reserve_locked(struct tempo_file *tf, const u64 *exts, u32 nr)
{
	u32 i;
	int ret;

	for (i = 0; i < nr; i++) {
		ret = xa_reserve(&tf->pins, exts[i], GFP_KERNEL);
		if (ret) {
			tempo_file_pin_release_reserved_locked(tf, exts, i);
			return ret;
		}
	}
	return 0;
}

void tempo_file_pin_release_reserved_locked(struct tempo_file *tf, const u64 *exts, u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++)
		xa_release(&tf->pins, exts[i]);
}

void tempo_file_pin_add_locked(struct tempo_file *tf, u64 ext)
{
	xa_store(&tf->pins, ext, xa_mk_value(tempo_file_pins_locked(tf, ext) + 1), GFP_KERNEL);
}

void tempo_file_pin_drop_locked(struct tempo_file *tf, u64 ext)
{
	u32 n = tempo_file_pins_locked(tf, ext);

	if (n > 1)
		xa_store(&tf->pins, ext, xa_mk_value(n - 1), GFP_KERNEL);
	else
		xa_erase(&tf->pins, ext);
}

/* close(): drop every pin the fd holds. Caller holds dev->lock. */
void tempo_file_release_pins_locked(struct tempo_file *tf)
{
	struct tempo_dev *dev = tf->dev;
	unsigned long ext;
	void *entry;

	xa_for_each(&tf->pins, ext, entry)
		tempo_unpin_slot_locked(dev, xa_load(&dev->map, ext), xa_to_value(entry));
	xa_destroy(&tf->pins);
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
	u64 *exts;
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
	ret = tempo_file_pin_reserve_locked(tf, exts, nr_ext);
	if (ret)
		goto out_unlock;
	for (i = 0; i < nr_ext; i++) {
		tempo_pin_slot_locked(dev, xa_load(&dev->map, exts[i]));
		tempo_file_pin_add_locked(tf, exts[i]);
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
		if (!tempo_file_pins_locked(tf, exts[i]))
			goto out_unlock;
	for (i = 0; i < nr_ext; i++) {
		tempo_file_pin_drop_locked(tf, exts[i]);
		tempo_unpin_slot_locked(dev, xa_load(&dev->map, exts[i]), 1);
	}
	dev->stats.unpin_calls++;
	ret = 0;
out_unlock:
	mutex_unlock(&dev->lock);
	kvfree(exts);
	return ret;
}

long tempo_ioctl_query(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_range r;
	struct tempo_query q;
	u64 ext, last;
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

	q.resident_bytes = 0;
	q.filling_bytes = 0;
	q.pinned_bytes = 0;
	q.min_pins = U32_MAX;
	q.own_min_pins = U32_MAX;
	last = (r.offset + r.length - 1) >> dev->extent_shift;
	mutex_lock(&dev->lock);
	for (ext = r.offset >> dev->extent_shift; ext <= last; ext++) {
		struct tempo_slot *slot = xa_load(&dev->map, ext);
		u64 start = max(r.offset, tempo_ext_offset(dev, ext));
		u64 end = min(r.offset + r.length, tempo_ext_offset(dev, ext + 1));
		u32 pins = slot ? slot->pins : 0;

		if (slot && slot->state == TEMPO_SLOT_RESIDENT)
			q.resident_bytes += end - start;
		else if (slot)
			q.filling_bytes += end - start;
		if (pins)
			q.pinned_bytes += end - start;
		q.min_pins = min(q.min_pins, pins);
		q.own_min_pins = min(q.own_min_pins, tempo_file_pins_locked(tf, ext));
	}
	mutex_unlock(&dev->lock);
	if (copy_to_user(argp, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}
