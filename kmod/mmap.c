// SPDX-License-Identifier: GPL-2.0
/*
 * mmap of the logical range: the device's plain memory path. A fault on a
 * non-resident page reads its extent from the backing device (evicting the
 * LRU unpinned extent when the fast tier is full) and maps the fast-tier page.
 */
#include <linux/file.h>
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

/*
 * Waits for the slot's fill. When the fault may be retried, the wait happens
 * without mmap_lock (the file is held so the module stays) and the fault
 * returns VM_FAULT_RETRY; otherwise it waits holding it. 0: settled.
 */
static vm_fault_t tempo_fault_wait(struct vm_fault *vmf, struct tempo_slot *slot, u64 ext)
{
	struct tempo_dev *dev = slot->dev;
	struct file *file;

	if (!fault_flag_allow_retry_first(vmf->flags))
		return wait_event_killable(dev->fill_wait, tempo_slot_settled(slot, ext))
			       ? VM_FAULT_SIGBUS
			       : 0;
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return VM_FAULT_RETRY;
	file = get_file(vmf->vma->vm_file);
	tempo_release_fault_lock(vmf);
	wait_event_killable(dev->fill_wait, tempo_slot_settled(slot, ext));
	fput(file);
	return VM_FAULT_RETRY;
}

/*
 * Maps every page of the resident extent that lies inside the VMA (fault
 * around), the faulting one first. Caller holds dev->lock, so eviction cannot
 * run between lookup and insert.
 */
static vm_fault_t tempo_map_extent_locked(struct vm_fault *vmf, struct tempo_slot *slot, u64 ext)
{
	struct tempo_dev *dev = slot->dev;
	struct vm_area_struct *vma = vmf->vma;
	unsigned long first = tempo_ext_offset(dev, ext) >> PAGE_SHIFT;
	unsigned long i, n = dev->extent_bytes >> PAGE_SHIFT;
	vm_fault_t ret;

	lockdep_assert_held(&dev->lock);
	ret = vmf_insert_pfn(vma, vmf->address, slot->pfn + (vmf->pgoff - first));
	for (i = 0; i < n && !(ret & VM_FAULT_ERROR); i++) {
		unsigned long addr;

		if (first + i < vma->vm_pgoff || first + i == vmf->pgoff)
			continue;
		addr = vma->vm_start + ((first + i - vma->vm_pgoff) << PAGE_SHIFT);
		if (addr >= vma->vm_end)
			break;
		vmf_insert_pfn(vma, addr, slot->pfn + i);
	}
	return ret;
}

/* May sleep: runs under mmap_lock (read) and takes dev->lock. */
static vm_fault_t tempo_fault(struct vm_fault *vmf)
{
	struct tempo_file *tf = vmf->vma->vm_file->private_data;
	struct tempo_dev *dev = tf->dev;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	u64 ext = off >> dev->extent_shift;
	u64 start_ns = ktime_get_ns(), filled = 0;
	bool retried = vmf->flags & FAULT_FLAG_TRIED;
	struct tempo_slot *slot;
	unsigned int fills = 0;
	vm_fault_t ret;

	if (off >= dev->size)
		return VM_FAULT_SIGBUS;

	mutex_lock(&dev->lock);
	if (!retried)
		dev->stats.faults++;
	for (;;) {
		/* the DAX range went away: no fill starts, no pfn of it is mapped */
		if (dev->tier_lost) {
			mutex_unlock(&dev->lock);
			return VM_FAULT_SIGBUS;
		}
		slot = xa_load(&dev->map, ext);
		if (slot && slot->state == TEMPO_SLOT_RESIDENT)
			break;
		if (!slot) {
			/*
			 * Our fill may fail, or its extent be evicted again
			 * before we get the lock back; give up after a few.
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
		} else {
			mutex_unlock(&dev->lock);
		}
		ret = tempo_fault_wait(vmf, slot, ext);
		if (ret == VM_FAULT_RETRY)
			trace_tempo_fault(off, filled, ktime_get_ns() - start_ns);
		if (ret)
			return ret;
		mutex_lock(&dev->lock);
	}
	tempo_lru_touch_locked(dev, slot);
	ret = tempo_map_extent_locked(vmf, slot, ext);
	if (!retried || filled)
		trace_tempo_fault(off, filled, ktime_get_ns() - start_ns);
	mutex_unlock(&dev->lock);
	return ret;
}

static const struct vm_operations_struct tempo_vm_ops = {
	.fault = tempo_fault,
};

/* Read-only, non-executable shared or private mappings within the logical range. */
int tempo_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tempo_file *tf = file->private_data;
	u64 len = vma->vm_end - vma->vm_start;

	if (READ_ONCE(tf->dev->tier_lost))
		return -EIO;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	if (vma->vm_pgoff > (tf->dev->size >> PAGE_SHIFT) ||
	    len > tf->dev->size - ((u64)vma->vm_pgoff << PAGE_SHIFT))
		return -EINVAL;
	/* not a COW mapping: pfns are inserted straight from the fast tier */
	tempo_vm_flags_mod(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_IO,
			   VM_MAYWRITE | VM_MAYEXEC);
	vma->vm_ops = &tempo_vm_ops;
	return 0;
}
