// SPDX-License-Identifier: GPL-2.0
/*
 * mmap of the logical range: the device's plain memory path. A fault on a
 * non-resident page reads its extent from the backing device (evicting the
 * LRU unpinned extent when the fast tier is full) and maps the fast-tier page.
 */
#include <linux/mm.h>
#include <linux/sched/signal.h>

#include "tempo.h"
#include "trace.h"

#define TEMPO_FAULT_FILL_TRIES 3

static bool tempo_slot_settled(struct tempo_slot *slot, u64 ext)
{
	return READ_ONCE(slot->state) != TEMPO_SLOT_FILLING || READ_ONCE(slot->ext) != ext;
}

/* Waits for the next fill completion after gen. Called without dev->lock. */
static bool tempo_wait_fill_gen(struct tempo_dev *dev, u64 gen)
{
	return !wait_event_killable(dev->fill_wait, READ_ONCE(dev->fill_gen) != gen);
}

/* May sleep: runs under mmap_lock (read) and takes dev->lock. */
static vm_fault_t tempo_fault(struct vm_fault *vmf)
{
	struct tempo_file *tf = vmf->vma->vm_file->private_data;
	struct tempo_dev *dev = tf->dev;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	u64 ext = off >> dev->extent_shift;
	u64 start_ns = ktime_get_ns(), filled = 0;
	struct tempo_slot *slot;
	unsigned int fills = 0;
	vm_fault_t ret;

	if (off >= dev->size)
		return VM_FAULT_SIGBUS;

	mutex_lock(&dev->lock);
	dev->stats.faults++;
	for (;;) {
		slot = xa_load(&dev->map, ext);
		if (slot && slot->state == TEMPO_SLOT_RESIDENT)
			break;
		if (slot) {
			mutex_unlock(&dev->lock);
			if (wait_event_killable(dev->fill_wait, tempo_slot_settled(slot, ext)))
				return VM_FAULT_SIGBUS;
			mutex_lock(&dev->lock);
			continue;
		}
		/*
		 * Our fill may fail, or its extent be evicted again before we
		 * get the lock back; give up after a few rounds.
		 */
		if (fills == TEMPO_FAULT_FILL_TRIES) {
			mutex_unlock(&dev->lock);
			return VM_FAULT_SIGBUS;
		}
		if (xa_reserve(&dev->map, ext, GFP_KERNEL)) {
			mutex_unlock(&dev->lock);
			return VM_FAULT_OOM;
		}
		slot = tempo_slot_get_locked(dev, ext);
		if (!slot) {
			u64 gen = dev->fill_gen;
			bool filling = dev->nr_filling;

			xa_release(&dev->map, ext);
			mutex_unlock(&dev->lock);
			/* every slot pinned: nothing will free up */
			if (!filling || !tempo_wait_fill_gen(dev, gen))
				return VM_FAULT_SIGBUS;
			mutex_lock(&dev->lock);
			continue;
		}
		slot->fault_fill = true;
		fills++;
		filled += dev->extent_bytes;
		mutex_unlock(&dev->lock);
		tempo_fill_submit(dev, slot);
		if (wait_event_killable(dev->fill_wait, tempo_slot_settled(slot, ext)))
			return VM_FAULT_SIGBUS;
		mutex_lock(&dev->lock);
	}
	tempo_lru_touch_locked(dev, slot);
	/* Inserted under dev->lock: eviction cannot run between lookup and insert. */
	ret = vmf_insert_pfn(vmf->vma, vmf->address,
			     slot->pfn + ((off - tempo_ext_offset(dev, ext)) >> PAGE_SHIFT));
	trace_tempo_fault(off, filled, ktime_get_ns() - start_ns);
	mutex_unlock(&dev->lock);
	return ret;
}

static const struct vm_operations_struct tempo_vm_ops = {
	.fault = tempo_fault,
};

/* Read-only shared or private mappings within the logical range. */
int tempo_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tempo_file *tf = file->private_data;
	u64 len = vma->vm_end - vma->vm_start;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (vma->vm_pgoff > (tf->dev->size >> PAGE_SHIFT) ||
	    len > tf->dev->size - ((u64)vma->vm_pgoff << PAGE_SHIFT))
		return -EINVAL;
	/* not a COW mapping: pfns are inserted straight from the fast tier */
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_IO;
	vma->vm_ops = &tempo_vm_ops;
	return 0;
}
