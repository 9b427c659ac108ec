/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tempo.ko internals.
 *
 * Locking: dev->lock (a mutex) protects the residency map, every slot's state,
 * pins, the LRU, the per-fd pin tables and the in-flight batch lists. Bio
 * completions only put their slot on dev->fills_done (through slot->copy_work
 * first when a bounce buffer is copied) and queue dev->fills_work, which
 * completes them in batches under dev->lock. A fd's
 * completion queue has its own spinlock (cq_lock), taken inside dev->lock; the
 * device's notice log has one too (notice_lock), taken inside both. Page
 * faults run under mmap_lock and take dev->lock; eviction calls
 * unmap_mapping_range() with dev->lock held (it needs i_mmap_rwsem, never
 * mmap_lock), so the order is mmap_lock -> dev->lock -> i_mmap_rwsem.
 */
#ifndef TEMPO_H
#define TEMPO_H

#include <linux/blkdev.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/memremap.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <uapi/linux/tempo.h>

#include "compat.h"

enum tempo_slot_state {
	TEMPO_SLOT_FREE,
	TEMPO_SLOT_FILLING, /* a bio is reading the extent in */
	TEMPO_SLOT_RESIDENT,
};

/* An extent-sized bounce buffer of single pages (dax_bounce fills). */
struct tempo_bounce {
	struct list_head node; /* on dev->bounce_free while unused */
	struct page **pages;
};

/* Bounce buffers, allocated at load: fills beyond this many wait for one. */
#define TEMPO_BOUNCE_BUFS 8

/*
 * Memory a file's calls allocate for it (its table, pins, batches, records, notice
 * ring): charged to the caller's memory cgroup, and at the group's limit the call fails
 * with -ENOMEM instead of invoking the OOM killer on the group.
 */
#define TEMPO_GFP_FILE (GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)

/* One extent-sized piece of the fast tier. */
struct tempo_slot {
	struct tempo_dev *dev;
	unsigned long pfn; /* first page frame; the slot's pfns are contiguous */
	u64 ext; /* protected by dev->lock: the extent held, when not FREE */
	u8 state; /* protected by dev->lock */
	u32 pins; /* protected by dev->lock: all fds together */
	/* protected by dev->lock: on dev->lru (RESIDENT, pins == 0) or dev->free */
	struct list_head node;
	/* protected by dev->lock: struct tempo_batch_ext waiting on the fill */
	struct list_head waiters;
	bool fault_fill; /* protected by dev->lock: a fault started the fill */
	u64 fill_start_ns;
	struct tempo_bounce *bounce; /* the fill's bounce buffer when dev->dax_bounce */
	atomic_t bios; /* the fill's bios still in flight */
	blk_status_t bio_status; /* written by a failing bio's end_io, read by work */
	struct work_struct copy_work; /* copies the bounce buffer in, then completes */
	struct llist_node done_node; /* on dev->fills_done once its read has ended */
};

struct dev_dax;

struct tempo_dev {
	struct miscdevice misc;
	struct tempo_bdev backing; /* held exclusively while loaded */
	struct block_device *bdev; /* backing.bdev */
	struct inode *inode; /* its mapping holds every mmap of the device */
	struct workqueue_struct *wq;
	struct llist_head fills_done; /* slots whose read ended, for fills_work */
	struct work_struct fills_work; /* completes them: tier.c */

	u64 size; /* logical bytes, a multiple of extent_bytes */
	u64 extent_bytes;
	unsigned int extent_shift;
	u64 pin_limit_bytes;
	u64 fd_pin_limit_bytes; /* most pinned bytes of one fd */
	u32 fast_kind;
	u32 nr_slots;
	struct tempo_slot *slots;
	struct page **page_blocks; /* TEMPO_FAST_PAGES: one block per slot */
	void *dax_kaddr; /* TEMPO_FAST_DAX: kernel mapping of the range used */
	u64 dax_start;
	u64 dax_claimed; /* bytes of the dax device claimed (all of it) */
	u64 dax_used; /* bytes of it used as the fast tier */
	char dax_name[16]; /* the dax device, daxX.Y */
	struct dev_dax *dax_dev; /* while tempo.ko's dax driver is bound to it */
	bool dax_leaving; /* tempo.ko unbinds it (rmmod): not a loss */
	struct dev_pagemap dax_pgmap; /* the struct pages tempo.ko made for the range */
	bool dax_bounce; /* fill DAX slots by CPU copy from a page bounce buffer */
	struct tempo_bounce bounce[TEMPO_BOUNCE_BUFS]; /* with dax_bounce */
	spinlock_t bounce_lock;
	struct list_head bounce_free; /* protected by bounce_lock */
	wait_queue_head_t bounce_wait;

	struct mutex lock;
	/*
	 * Written under lock: the DAX range went away under the module
	 * (tempo_tier_lose()); every access fails from then on.
	 */
	bool tier_lost;
	struct xarray map; /* protected by lock: extent index -> slot */
	struct list_head lru; /* protected by lock: oldest first */
	struct list_head free; /* protected by lock */
	u32 nr_lru; /* protected by lock */
	u32 nr_free; /* protected by lock */
	u32 nr_filling; /* protected by lock */
	u32 nr_pinned; /* protected by lock: slots with pins > 0 */
	u64 pins; /* protected by lock */
	u64 fill_gen; /* protected by lock: bumped on every fill completion */
	wait_queue_head_t fill_wait; /* woken on every fill completion */
	struct tempo_stats stats; /* protected by lock (counters only) */

	/*
	 * The notice log (records.c): every eviction notice, once, for all
	 * subscribers; each fd reads it from its own position. Written under
	 * lock and notice_lock, read under notice_lock.
	 */
	struct tempo_notice *notice_log; /* TEMPO_NOTICE_LOG entries */
	spinlock_t notice_lock;
	u64 notice_head; /* notices ever logged; the next one's place */
	u64 notice_bytes; /* bytes of every notice ever logged */
	wait_queue_head_t notice_wait; /* blocked readers and pollers of every fd */
	struct work_struct notice_wake; /* wakes notice_wait outside lock */
};

/* A STAGE completion record waiting to be read (allocated with its batch). */
struct tempo_event {
	struct list_head node; /* on tf->cq */
	u64 notice_mark; /* dev->notice_head when it was queued: notices before it come first */
	struct tempo_completion rec;
};

/* One entry of the notice log. */
struct tempo_notice {
	u64 offset;
	u64 bytes;
	u64 ns;
	u16 kind; /* TEMPO_REC_EVICT or _RESET */
};

/* Entries of the notice log: a reader this far behind has lost the oldest. */
#define TEMPO_NOTICE_LOG 8192
/* Most unread eviction notices per fd; past it they collapse into one LOST record. */
#define TEMPO_NOTICES_PER_FD 512

/* Per open file. Freed when the fd is closed and no batch refers to it. */
struct tempo_file {
	struct tempo_dev *dev;
	struct kref ref;
	bool closed; /* protected by dev->lock */
	struct xarray pins; /* protected by dev->lock: extent -> xa_mk_value(count) */
	struct list_head inflight; /* protected by dev->lock: struct tempo_batch */
	u32 nr_batches; /* protected by dev->lock: in flight + unread */
	u32 inflight_exts; /* protected by dev->lock: extents of batches in flight */
	u64 nr_pinned; /* protected by dev->lock: extents this fd or its batches pin */
	struct mutex read_lock; /* one reader at a time: records leave in order */
	spinlock_t cq_lock;
	struct list_head cq; /* protected by cq_lock: struct tempo_event */
	/* Its view of the notice log (records.c), protected by cq_lock. */
	u32 events; /* TEMPO_EVENT_* */
	u64 notice_pos; /* the next notice it reads */
	u64 notice_pos_bytes; /* dev->notice_bytes before notice_pos */
	bool lost; /* more than TEMPO_NOTICES_PER_FD were unread: a LOST record at lost_at */
	u64 lost_at;
	wait_queue_head_t cq_wait; /* its STAGE records */
};

struct tempo_batch;

/* One distinct extent of a batch. */
struct tempo_batch_ext {
	u64 ext;
	struct tempo_slot *slot; /* protected by dev->lock: set at submission */
	bool pinned; /* protected by dev->lock: this batch holds a pin on it */
	struct list_head wait_node; /* on slot->waiters while filling */
	struct tempo_batch *batch;
};

struct tempo_batch {
	struct tempo_file *tf; /* holds a reference */
	struct list_head node; /* on tf->inflight */
	u32 remaining; /* protected by dev->lock: extents still filling */
	struct tempo_event *ev; /* its record, queued on tf->cq when the batch ends */
	u32 nr_ext;
	struct tempo_batch_ext ext[];
};

/* Most slots of a fast tier (slot indices and counts are u32). */
#define TEMPO_MAX_SLOTS (U32_MAX / 2)

/* Bounds on per-fd queued batches (in flight + unread completions). */
#define TEMPO_MAX_BATCHES_PER_FD 1024
/* Most extents of one fd's batches in flight (or the fast tier's slots, if more). */
#define TEMPO_MAX_INFLIGHT_EXTS_PER_FD 65536
/* Most pins one fd (with its batches) holds on one extent. */
#define TEMPO_FD_EXTENT_PINS 4096

static inline u64 tempo_ext_offset(const struct tempo_dev *dev, u64 ext)
{
	return ext << dev->extent_shift;
}

/* range.c: validation and extent lists (no locks, may sleep) */
int tempo_check_range(const struct tempo_dev *dev, const struct tempo_range *r);
int tempo_copy_ranges(const struct tempo_dev *dev, u64 uptr, u32 nr, u64 **exts, u32 *nr_exts,
		      u64 *bytes);

/* tier.c: slots, fills, eviction */
int tempo_tier_init(struct tempo_dev *dev, u64 fast_bytes, const char *dax, bool dax_dma);
void tempo_tier_exit(struct tempo_dev *dev);
int tempo_bounce_init(struct tempo_dev *dev);
void tempo_bounce_exit(struct tempo_dev *dev);
struct tempo_slot *tempo_slot_get_locked(struct tempo_dev *dev, u64 ext);
void tempo_fill_submit(struct tempo_dev *dev, struct tempo_slot *slot);
void tempo_lru_touch_locked(struct tempo_dev *dev, struct tempo_slot *slot);
void tempo_pin_slot_locked(struct tempo_dev *dev, struct tempo_slot *slot);
void tempo_unpin_slot_locked(struct tempo_dev *dev, struct tempo_slot *slot, u32 count);
u32 tempo_reset_locked(struct tempo_dev *dev);
void tempo_tier_lose(struct tempo_dev *dev);

/* dax.c: the Device-DAX instance tempo.ko owns and is the driver of (may sleep) */
int tempo_dax_attach(struct tempo_dev *dev, const char *name, u64 use_bytes, u64 *bytes);
void tempo_dax_detach(struct tempo_dev *dev);

/* stage.c: STAGE batches and their completions */
long tempo_ioctl_stage(struct tempo_file *tf, void __user *argp);
void tempo_batch_ext_done_locked(struct tempo_dev *dev, struct tempo_batch_ext *be, int status);
void tempo_file_release_batches_locked(struct tempo_file *tf);
void tempo_file_put(struct tempo_file *tf);

/* records.c: what read() returns: each fd's STAGE records and the device's notice log */
int tempo_records_init(struct tempo_dev *dev);
void tempo_records_exit(struct tempo_dev *dev);
void tempo_records_queue_stage_locked(struct tempo_file *tf, struct tempo_event *ev);
void tempo_records_release(struct tempo_file *tf);
void tempo_notify_locked(struct tempo_dev *dev, u16 kind, u64 offset, u64 bytes);
long tempo_ioctl_set_events(struct tempo_file *tf, void __user *argp);
ssize_t tempo_read(struct file *file, char __user *buf, size_t count, loff_t *ppos);
__poll_t tempo_poll(struct file *file, poll_table *wait);

/* pin.c: PIN, UNPIN, QUERY and the per-fd pin table */
long tempo_ioctl_pin(struct tempo_file *tf, void __user *argp);
long tempo_ioctl_unpin(struct tempo_file *tf, void __user *argp);
long tempo_ioctl_query(struct tempo_file *tf, void __user *argp);
int tempo_file_pin_count_locked(struct tempo_file *tf, const u64 *exts, u32 nr, u64 *new_exts);
int tempo_file_pin_fits_locked(struct tempo_file *tf, u64 new_exts);
int tempo_file_pin_reserve_locked(struct tempo_file *tf, const u64 *exts, u32 nr);
void tempo_file_pin_add_locked(struct tempo_file *tf, u64 ext, bool batch);
void tempo_file_pin_drop_locked(struct tempo_file *tf, u64 ext, bool batch);
void tempo_file_pin_settle_locked(struct tempo_file *tf, u64 ext);
void tempo_file_release_pins_locked(struct tempo_file *tf);

/* mmap.c */
int tempo_mmap(struct file *file, struct vm_area_struct *vma);

#endif /* TEMPO_H */
