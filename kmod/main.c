// SPDX-License-Identifier: GPL-2.0
/*
 * tempo.ko: a memory-semantic flash device (/dev/tempo0). Module parameters
 * name the backing block device and size the fast tier; the char device
 * offers mmap, STAGE/PIN/UNPIN/QUERY/INFO/FEATURES/STATS/RESET/SET_EVENTS
 * ioctls and read()/poll() of records (records.c). See Documentation/kmod.md.
 */
#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/poll.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "tempo.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static char *backing;
module_param(backing, charp, 0444);
MODULE_PARM_DESC(backing, "backing block device, e.g. /dev/nvme0n1 (required)");

static unsigned int fast_mb;
module_param(fast_mb, uint, 0444);
MODULE_PARM_DESC(fast_mb,
		 "fast-tier MiB (default 0: 64 MiB of kernel pages, or all of the dax device)");

static unsigned int extent_kb = 64;
module_param(extent_kb, uint, 0444);
MODULE_PARM_DESC(extent_kb,
		 "residency granularity in KiB, a power of two >= the page size (default 64)");

static unsigned int pin_limit_mb;
module_param(pin_limit_mb, uint, 0444);
MODULE_PARM_DESC(pin_limit_mb,
		 "most MiB pinned at once (default 0: three quarters of the fast tier)");

static unsigned int fd_pin_limit_mb;
module_param(fd_pin_limit_mb, uint, 0444);
MODULE_PARM_DESC(fd_pin_limit_mb,
		 "most MiB one fd (with its batches) pins at once (default 0: the pin limit)");

static char *dax;
module_param(dax, charp, 0444);
MODULE_PARM_DESC(dax, "a Device-DAX instance (daxX.Y, bound to no driver) to own as the fast tier");

/* The dax device named, or NULL for a kernel-page tier. */
static const char *tempo_dax_name(void)
{
	return dax && *dax ? dax : NULL;
}

static bool dax_dma = true;
module_param(dax_dma, bool, 0444);
MODULE_PARM_DESC(dax_dma, "fill the DAX range by DMA (default); N: read into pages and copy");

#define TEMPO_FS_MAGIC 0x74656d70
#define TEMPO_DEFAULT_FAST_MB 64
/* An extent of the page tier is one page allocation. */
#define TEMPO_MAX_EXTENT_KB ((PAGE_SIZE << TEMPO_MAX_PAGE_ORDER) / 1024)

static struct tempo_dev *tempo_dev;
static struct vfsmount *tempo_mnt;

static int tempo_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, TEMPO_FS_MAGIC) ? 0 : -ENOMEM;
}

/* Holds the inode whose mapping every mmap of the device shares. */
static struct file_system_type tempo_fs_type = {
	.name = "tempo",
	.init_fs_context = tempo_init_fs_context,
	.kill_sb = kill_anon_super,
};

static int tempo_open(struct inode *inode, struct file *file)
{
	struct tempo_dev *dev = container_of(file->private_data, struct tempo_dev, misc);
	struct tempo_file *tf;

	if (READ_ONCE(dev->tier_lost))
		return -EIO;
	tf = kzalloc(sizeof(*tf), TEMPO_GFP_FILE);
	if (!tf)
		return -ENOMEM;
	tf->dev = dev;
	kref_init(&tf->ref);
	xa_init(&tf->pins);
	INIT_LIST_HEAD(&tf->inflight);
	mutex_init(&tf->read_lock);
	INIT_LIST_HEAD(&tf->cq);
	spin_lock_init(&tf->cq_lock);
	init_waitqueue_head(&tf->cq_wait);
	file->private_data = tf;
	file->f_mapping = dev->inode->i_mapping;
	return stream_open(inode, file);
}

/* The last reference to the fd is gone: drop its pins and unread records. */
static int tempo_release(struct inode *inode, struct file *file)
{
	struct tempo_file *tf = file->private_data;
	struct tempo_dev *dev = tf->dev;

	mutex_lock(&dev->lock);
	tempo_file_release_batches_locked(tf);
	tempo_file_release_pins_locked(tf);
	mutex_unlock(&dev->lock);
	tempo_records_release(tf);
	tempo_file_put(tf);
	return 0;
}

static long tempo_ioctl_info(struct tempo_dev *dev, void __user *argp)
{
	struct tempo_info info = {
		.size = dev->size,
		.fast_bytes = (u64)dev->nr_slots * dev->extent_bytes,
		.extent_bytes = dev->extent_bytes,
		.pin_limit_bytes = dev->pin_limit_bytes,
		.backing_dev = new_encode_dev(dev->bdev->bd_dev),
		.fast_kind = dev->fast_kind,
		.max_ranges = TEMPO_MAX_RANGES,
		.record_bytes = sizeof(struct tempo_completion),
	};

	return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
}

static long tempo_ioctl_features(void __user *argp)
{
	struct tempo_features f = {
		.stage_flags = TEMPO_STAGE_F_ALL,
		.pin_flags = TEMPO_PIN_F_ALL,
		.event_mask = TEMPO_EVENT_ALL,
	};

	return copy_to_user(argp, &f, sizeof(f)) ? -EFAULT : 0;
}

static long tempo_ioctl_stats(struct tempo_dev *dev, void __user *argp)
{
	struct tempo_stats st;

	mutex_lock(&dev->lock);
	st = dev->stats;
	st.resident_bytes =
		(u64)(dev->nr_slots - dev->nr_free - dev->nr_filling) * dev->extent_bytes;
	st.filling_bytes = (u64)dev->nr_filling * dev->extent_bytes;
	st.pinned_bytes = (u64)dev->nr_pinned * dev->extent_bytes;
	st.pins = dev->pins;
	mutex_unlock(&dev->lock);
	return copy_to_user(argp, &st, sizeof(st)) ? -EFAULT : 0;
}

static long tempo_ioctl_reset(struct tempo_dev *dev, unsigned long arg)
{
	if (arg)
		return -EINVAL;
	mutex_lock(&dev->lock);
	tempo_reset_locked(dev);
	dev->stats.resets++;
	mutex_unlock(&dev->lock);
	return 0;
}

static long tempo_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct tempo_file *tf = file->private_data;
	void __user *argp = (void __user *)arg;

	if (READ_ONCE(tf->dev->tier_lost))
		return -EIO;
	/*
	 * Staging, pins and RESET change what the fast tier holds for everyone: only a file
	 * opened for writing may ask (a daemon hands its clients read-only files to map).
	 */
	switch (cmd) {
	case TEMPO_IOC_STAGE:
	case TEMPO_IOC_PIN:
	case TEMPO_IOC_UNPIN:
	case TEMPO_IOC_RESET:
		if (!(file->f_mode & FMODE_WRITE))
			return -EBADF;
		break;
	}

	switch (cmd) {
	case TEMPO_IOC_GET_INFO:
		return tempo_ioctl_info(tf->dev, argp);
	case TEMPO_IOC_GET_FEATURES:
		return tempo_ioctl_features(argp);
	case TEMPO_IOC_STAGE:
		return tempo_ioctl_stage(tf, argp);
	case TEMPO_IOC_PIN:
		return tempo_ioctl_pin(tf, argp);
	case TEMPO_IOC_UNPIN:
		return tempo_ioctl_unpin(tf, argp);
	case TEMPO_IOC_QUERY:
		return tempo_ioctl_query(tf, argp);
	case TEMPO_IOC_STATS:
		return tempo_ioctl_stats(tf->dev, argp);
	case TEMPO_IOC_RESET:
		return tempo_ioctl_reset(tf->dev, arg);
	case TEMPO_IOC_SET_EVENTS:
		return tempo_ioctl_set_events(tf, argp);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations tempo_fops = {
	.owner = THIS_MODULE,
	.open = tempo_open,
	.release = tempo_release,
	.read = tempo_read,
	.poll = tempo_poll,
	.mmap = tempo_mmap,
	.unlocked_ioctl = tempo_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* The uapi layout is fixed: no implicit padding, the same on 32- and 64-bit userspace. */
static void tempo_check_uapi(void)
{
	BUILD_BUG_ON(sizeof(struct tempo_range) != 16);
	BUILD_BUG_ON(sizeof(struct tempo_stage) != 40);
	BUILD_BUG_ON(sizeof(struct tempo_completion) != 96);
	BUILD_BUG_ON(sizeof(struct tempo_events) != 32);
	BUILD_BUG_ON(sizeof(struct tempo_pin) != 32);
	BUILD_BUG_ON(sizeof(struct tempo_query) != 64);
	BUILD_BUG_ON(sizeof(struct tempo_info) != 80);
	BUILD_BUG_ON(sizeof(struct tempo_features) != 64);
	BUILD_BUG_ON(sizeof(struct tempo_stats) != 192);
}

static int tempo_check_params(void)
{
	if (!backing || !*backing) {
		pr_err("tempo: backing=<block device> is required\n");
		return -EINVAL;
	}
	if (!is_power_of_2(extent_kb) || extent_kb * 1024UL < PAGE_SIZE ||
	    extent_kb > TEMPO_MAX_EXTENT_KB) {
		pr_err("tempo: extent_kb=%u must be a power of two from %lu to %lu\n", extent_kb,
		       PAGE_SIZE / 1024, TEMPO_MAX_EXTENT_KB);
		return -EINVAL;
	}
	/* the kernel-page tier is unmovable memory: at most half of RAM */
	if (!tempo_dax_name() && (u64)fast_mb << 20 > ((u64)totalram_pages() << PAGE_SHIFT) / 2) {
		pr_err("tempo: fast_mb=%u is more than half of memory (%llu MiB)\n", fast_mb,
		       ((u64)totalram_pages() << PAGE_SHIFT) >> 20);
		return -EINVAL;
	}
	if ((((u64)fast_mb << 20) / ((u64)extent_kb << 10)) > TEMPO_MAX_SLOTS) {
		pr_err("tempo: the fast tier holds more than %u extents of %u KiB\n",
		       TEMPO_MAX_SLOTS, extent_kb);
		return -EINVAL;
	}
	return 0;
}

static int __init tempo_init(void)
{
	struct tempo_dev *dev;
	u64 fast;
	int ret;

	tempo_check_uapi();
	ret = tempo_check_params();
	if (ret)
		return ret;

	ret = -ENOMEM;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		goto out;
	mutex_init(&dev->lock);
	xa_init(&dev->map);
	init_waitqueue_head(&dev->fill_wait);
	dev->extent_bytes = (u64)extent_kb * 1024;
	dev->extent_shift = ilog2(dev->extent_bytes);
	ret = tempo_records_init(dev);
	if (ret)
		goto out_records_exit;

	ret = tempo_bdev_open(&dev->backing, backing, dev);
	if (ret) {
		pr_err("tempo: cannot open %s exclusively: %d\n", backing, ret);
		goto out_records_exit;
	}
	dev->bdev = dev->backing.bdev;
	dev->size = round_down(bdev_nr_bytes(dev->bdev), dev->extent_bytes);
	ret = -EINVAL;
	if (!dev->size) {
		pr_err("tempo: %s is smaller than one extent\n", backing);
		goto out_put_bdev;
	}

	/* before the tier: a DAX tier can be lost (tempo_tier_lose()) as soon as it is bound */
	ret = -ENOMEM;
	dev->wq = alloc_workqueue("tempo", WQ_MEM_RECLAIM, 0);
	if (!dev->wq)
		goto out_put_bdev;
	tempo_mnt = kern_mount(&tempo_fs_type);
	if (IS_ERR(tempo_mnt)) {
		ret = PTR_ERR(tempo_mnt);
		goto out_destroy_wq;
	}
	dev->inode = alloc_anon_inode(tempo_mnt->mnt_sb);
	if (IS_ERR(dev->inode)) {
		ret = PTR_ERR(dev->inode);
		goto out_unmount;
	}

	ret = tempo_tier_init(dev,
			      (u64)(fast_mb
					    ?: tempo_dax_name() ? 0
								: TEMPO_DEFAULT_FAST_MB)
				      << 20,
			      tempo_dax_name(), dax_dma);
	if (ret) {
		pr_err("tempo: fast tier setup failed: %d\n", ret);
		goto out_put_inode;
	}
	fast = (u64)dev->nr_slots * dev->extent_bytes;
	dev->pin_limit_bytes =
		pin_limit_mb ? min_t(u64, (u64)pin_limit_mb << 20, fast) : fast / 4 * 3;
	dev->fd_pin_limit_bytes =
		fd_pin_limit_mb ? min_t(u64, (u64)fd_pin_limit_mb << 20, dev->pin_limit_bytes)
				: dev->pin_limit_bytes;

	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = "tempo0";
	dev->misc.fops = &tempo_fops;
	dev->misc.mode = 0600;
	ret = misc_register(&dev->misc);
	if (ret)
		goto out_tier_exit;

	tempo_dev = dev;
	pr_info("tempo: tempo0 on %s: size %llu fast %llu (%s) extent %llu pin_limit %llu\n",
		backing, dev->size, fast, dev->fast_kind == TEMPO_FAST_DAX ? "dax" : "pages",
		dev->extent_bytes, dev->pin_limit_bytes);
	return 0;

out_tier_exit:
	tempo_tier_exit(dev);
out_put_inode:
	iput(dev->inode);
out_unmount:
	kern_unmount(tempo_mnt);
out_destroy_wq:
	destroy_workqueue(dev->wq);
out_put_bdev:
	tempo_bdev_close(&dev->backing, dev);
out_records_exit:
	tempo_records_exit(dev);
	kfree(dev);
out:
	return ret;
}

static void __exit tempo_exit(void)
{
	struct tempo_dev *dev = tempo_dev;

	misc_deregister(&dev->misc);
	/* no fill is in flight (each holds the module); the last one's work may still return */
	destroy_workqueue(dev->wq);
	tempo_tier_exit(dev);
	iput(dev->inode);
	kern_unmount(tempo_mnt);
	tempo_bdev_close(&dev->backing, dev);
	tempo_records_exit(dev);
	kfree(dev);
}

module_init(tempo_init);
module_exit(tempo_exit);
MODULE_DESCRIPTION("TempoKV memory-semantic flash device");
MODULE_LICENSE("GPL");
