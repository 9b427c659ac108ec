/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place tempo.ko differs by kernel release. Built and tested against
 * Debian 12's 6.1; make kmod compile-checks it against 6.5, 6.8, 6.12, 7.2
 * and 7.3, which between them take every branch below (Documentation/kmod.md,
 * the kernel-headers matrix). dax.c also mirrors a struct of drivers/dax/bus.h,
 * which the headers do not ship.
 */
#ifndef TEMPO_COMPAT_H
#define TEMPO_COMPAT_H

#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/version.h>

/* The largest order one page allocation may have (inclusive). */
#if defined(MAX_PAGE_ORDER)
#define TEMPO_MAX_PAGE_ORDER MAX_PAGE_ORDER
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define TEMPO_MAX_PAGE_ORDER MAX_ORDER
#else
#define TEMPO_MAX_PAGE_ORDER (MAX_ORDER - 1)
#endif

/* The backing device, opened read-only and exclusively (holder: the tempo_dev). */
struct tempo_bdev {
	struct block_device *bdev;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	struct file *file;
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	struct bdev_handle *handle;
#endif
};

/* 0 or a negative errno (-EBUSY: someone else holds it exclusively). May sleep. */
static inline int tempo_bdev_open(struct tempo_bdev *b, const char *path, void *holder)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	b->file = bdev_file_open_by_path(path, BLK_OPEN_READ, holder, NULL);
	if (IS_ERR(b->file))
		return PTR_ERR(b->file);
	b->bdev = file_bdev(b->file);
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	b->handle = bdev_open_by_path(path, BLK_OPEN_READ, holder, NULL);
	if (IS_ERR(b->handle))
		return PTR_ERR(b->handle);
	b->bdev = b->handle->bdev;
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	b->bdev = blkdev_get_by_path(path, BLK_OPEN_READ, holder, NULL);
	if (IS_ERR(b->bdev))
		return PTR_ERR(b->bdev);
#else
	b->bdev = blkdev_get_by_path(path, FMODE_READ | FMODE_EXCL, holder);
	if (IS_ERR(b->bdev))
		return PTR_ERR(b->bdev);
#endif
	return 0;
}

static inline void tempo_bdev_close(struct tempo_bdev *b, void *holder)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	bdev_fput(b->file);
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	bdev_release(b->handle);
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	blkdev_put(b->bdev, holder);
#else
	blkdev_put(b->bdev, FMODE_READ | FMODE_EXCL);
#endif
}

/* vm_flags became read-only behind helpers in 6.3. */
static inline void tempo_vm_flags_mod(struct vm_area_struct *vma, vm_flags_t set, vm_flags_t clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/*
 * Drops the lock a fault runs under (mmap_lock, or the VMA lock since 6.4).
 * release_fault_lock() is in 6.8's headers but not in 6.5's: before 6.7 its
 * body is spelled out.
 */
static inline void tempo_release_fault_lock(struct vm_fault *vmf)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	release_fault_lock(vmf);
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	if (vmf->flags & FAULT_FLAG_VMA_LOCK)
		vma_end_read(vmf->vma);
	else
		mmap_read_unlock(vmf->vma->vm_mm);
#else
	mmap_read_unlock(vmf->vma->vm_mm);
#endif
}

/*
 * The third member of the dax bus's driver (dax.c): whether it binds every
 * device before 6.3 (match_always: 0, no), the type of device it binds since
 * (enum dax_driver_type: none of them).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define TEMPO_DAX_MATCH_NONE (-1)
#else
#define TEMPO_DAX_MATCH_NONE 0
#endif

#endif /* TEMPO_COMPAT_H */
