// SPDX-License-Identifier: GPL-2.0
/*
 * Range validation and the sorted, de-duplicated extent list a call acts on.
 * Nothing here takes a lock; everything may sleep.
 */
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>

#include "tempo.h"

/* 0, or the errno a bad range gets; the order of checks is part of the uapi. */
int tempo_check_range(const struct tempo_dev *dev, const struct tempo_range *r)
{
	u64 end;

	if (!r->length)
		return -EINVAL;
	if (!PAGE_ALIGNED(r->offset) || !PAGE_ALIGNED(r->length))
		return -EINVAL;
	if (check_add_overflow(r->offset, r->length, &end))
		return -EOVERFLOW;
	if (end > dev->size)
		return -ERANGE;
	return 0;
}

static int tempo_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Copies nr ranges from user memory, validates each, and returns the distinct
 * extents they touch (sorted, kvfree() them) and the sum of their lengths.
 * A call may touch at most as many extents as the fast tier holds (-E2BIG).
 */
int tempo_copy_ranges(const struct tempo_dev *dev, u64 uptr, u32 nr, u64 **exts, u32 *nr_exts,
		      u64 *bytes)
{
	struct tempo_range *ranges;
	u64 total = 0, sum = 0, *list;
	u32 i, n = 0;
	int ret;

	if (!nr)
		return -EINVAL;
	if (nr > TEMPO_MAX_RANGES)
		return -E2BIG;
	ranges = memdup_user(u64_to_user_ptr(uptr), array_size(nr, sizeof(*ranges)));
	if (IS_ERR(ranges))
		return PTR_ERR(ranges);

	for (i = 0; i < nr; i++) {
		ret = tempo_check_range(dev, &ranges[i]);
		if (ret)
			goto out_free_ranges;
		sum += ranges[i].length;
		total += ((ranges[i].offset + ranges[i].length - 1) >> dev->extent_shift) -
			 (ranges[i].offset >> dev->extent_shift) + 1;
		/* checked per range so the sum cannot wrap */
		ret = -E2BIG;
		if (total > dev->nr_slots)
			goto out_free_ranges;
	}

	ret = -ENOMEM;
	list = kvmalloc_array(total, sizeof(*list), GFP_KERNEL);
	if (!list)
		goto out_free_ranges;
	for (i = 0; i < nr; i++) {
		u64 e = ranges[i].offset >> dev->extent_shift;
		u64 last = (ranges[i].offset + ranges[i].length - 1) >> dev->extent_shift;

		for (; e <= last; e++)
			list[n++] = e;
	}
	sort(list, n, sizeof(*list), tempo_cmp_u64, NULL);
	total = n;
	for (i = 1, n = 1; i < total; i++)
		if (list[i] != list[n - 1])
			list[n++] = list[i];

	*exts = list;
	*nr_exts = n;
	*bytes = sum;
	ret = 0;
out_free_ranges:
	kfree(ranges);
	return ret;
}
