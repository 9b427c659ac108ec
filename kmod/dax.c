// SPDX-License-Identifier: GPL-2.0
/*
 * The DAX fast tier is a Device-DAX instance tempo.ko owns: named by the
 * operator (dax=daxX.Y), bound to tempo.ko's own driver on the dax bus, its
 * range claimed in the iomem tree and given struct pages by this module. A
 * dax device bound to another driver (device_dax, kmem) is refused; while
 * tempo.ko holds it, no other driver can bind it and its binding cannot be
 * undone from sysfs (daxctl disable-device and reconfigure-device fail).
 *
 * The device can still go away under the module: disabling or destroying its
 * namespace or region removes it, and the kernel lets no driver refuse that.
 * Being its driver, tempo.ko is told first (tempo_dax_remove(), before the
 * region's decoders are reset): it fails every later access (tier.c,
 * tempo_tier_lose()), waits for fills into the range, then lets the range go.
 * A range that intersects System RAM is refused. Everything here may sleep.
 */
#include <linux/device.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ioport.h>
#include <linux/kernel.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>

#include "tempo.h"

/*
 * The dax bus's driver, as drivers/dax/bus.h (not in the kernel headers)
 * declares it, unchanged from 6.1 to 7.3 but for the third member's meaning
 * (compat.h: TEMPO_DAX_MATCH_NONE).
 */
struct dev_dax;
struct dax_device_driver {
	struct device_driver drv;
	struct list_head ids;
	int type;
	int (*probe)(struct dev_dax *dev);
	void (*remove)(struct dev_dax *dev);
};

/* drivers/dax/bus.c, looked up at attach (dax.ko needs to be loaded only for a DAX tier) */
int __dax_driver_register(struct dax_device_driver *dax_drv, struct module *module,
			  const char *mod_name);
void dax_driver_unregister(struct dax_device_driver *dax_drv);

static int tempo_dax_probe(struct dev_dax *dd);
static void tempo_dax_remove(struct dev_dax *dd);

static struct dax_device_driver tempo_dax_driver = {
	.drv.suppress_bind_attrs = true,
	.type = TEMPO_DAX_MATCH_NONE,
	.probe = tempo_dax_probe,
	.remove = tempo_dax_remove,
};

/* protected by the dax device's lock (probe and remove run under it) */
static struct tempo_dev *tempo_dax_binding; /* while tempo_dax_attach() binds */
static struct tempo_dev *tempo_dax_owner; /* once bound */

/* Reads one number from /sys/bus/dax/devices/NAME/ATTR. */
static int tempo_dax_attr(const char *name, const char *attr, u64 *val)
{
	char path[96], buf[32];
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/dax/devices/%s/%s", name, attr);
	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	fput(f);
	if (n <= 0)
		return n ? n : -EINVAL;
	buf[n] = '\0';
	return kstrtoull(strim(buf), 0, val);
}

/* "daxX.Y" and nothing else: the name becomes a sysfs path. */
static bool tempo_dax_name_ok(const char *name)
{
	unsigned int region, id;
	int len = 0;

	return sscanf(name, "dax%u.%u%n", &region, &id, &len) == 2 && len == strlen(name);
}

/* Bound to the device tempo_dax_attach() names: claims and maps the range it found. */
static int tempo_dax_probe(struct dev_dax *dd)
{
	struct tempo_dev *dev = tempo_dax_binding;
	void *addr;

	/* a device named to the driver by new_id, or bound twice */
	if (!dev || tempo_dax_owner)
		return -ENODEV;
	if (!request_mem_region(dev->dax_start, dev->dax_claimed, "tempo"))
		return -EBUSY;
	dev->dax_pgmap.type = MEMORY_DEVICE_GENERIC;
	dev->dax_pgmap.range = (struct range){ .start = dev->dax_start,
					       .end = dev->dax_start + dev->dax_used - 1 };
	dev->dax_pgmap.nr_range = 1;
	addr = memremap_pages(&dev->dax_pgmap, NUMA_NO_NODE);
	if (IS_ERR(addr)) {
		pr_err("tempo: %s: cannot create its struct pages: %ld\n", dev->dax_name,
		       PTR_ERR(addr));
		release_mem_region(dev->dax_start, dev->dax_claimed);
		return PTR_ERR(addr);
	}
	dev->dax_kaddr = addr;
	dev->dax_dev = dd;
	tempo_dax_owner = dev;
	return 0;
}

/* Unmaps the range and gives it back. */
static void tempo_dax_release(struct tempo_dev *dev)
{
	memunmap_pages(&dev->dax_pgmap);
	release_mem_region(dev->dax_start, dev->dax_claimed);
	dev->dax_kaddr = NULL;
	dev->dax_dev = NULL;
	tempo_dax_owner = NULL;
}

/* The device leaves its driver: at rmmod, or because it is going away (above). */
static void tempo_dax_remove(struct dev_dax *dd)
{
	struct tempo_dev *dev = tempo_dax_owner;

	if (!dev || dd != dev->dax_dev)
		return;
	if (!dev->dax_leaving) {
		tempo_tier_lose(dev);
		pr_err("tempo: %s is going away (its namespace or region is being disabled or "
		       "destroyed): every access to /dev/tempo0 now fails with EIO; rmmod tempo\n",
		       dev->dax_name);
	}
	tempo_dax_release(dev);
}

/*
 * Binds dax device name to tempo.ko and maps its first use_bytes (0: all of
 * it, rounded down to 2 MiB) as the fast tier: dev->dax_start, dev->dax_kaddr,
 * *bytes.
 */
int tempo_dax_attach(struct tempo_dev *dev, const char *name, u64 use_bytes, u64 *bytes)
{
	int (*reg)(struct dax_device_driver *, struct module *, const char *);
	struct device *ddev;
	u64 start, size;
	int ret;

	if (!tempo_dax_name_ok(name)) {
		pr_err("tempo: dax=%s is not a dax device name (daxX.Y)\n", name);
		return -EINVAL;
	}
	ret = tempo_dax_attr(name, "resource", &start);
	if (!ret)
		ret = tempo_dax_attr(name, "size", &size);
	if (ret) {
		pr_err("tempo: no dax device %s (/sys/bus/dax/devices/%s): %d\n", name, name, ret);
		return ret;
	}
	if (!size || !IS_ALIGNED(start, SZ_2M)) {
		pr_err("tempo: %s: range %#llx+%#llx is empty or not 2 MiB aligned\n", name, start,
		       size);
		return -EINVAL;
	}
	if (region_intersects(start, size, IORESOURCE_SYSTEM_RAM, IORES_DESC_NONE) !=
	    REGION_DISJOINT) {
		pr_err("tempo: %s: range %#llx+%#llx intersects System RAM: refused\n", name, start,
		       size);
		return -EINVAL;
	}
	dev->dax_used = round_down(use_bytes ? min(use_bytes, size) : size, SZ_2M);
	if (!dev->dax_used) {
		pr_err("tempo: %s: less than 2 MiB to use\n", name);
		return -EINVAL;
	}
	dev->dax_start = start;
	dev->dax_claimed = size;
	strscpy(dev->dax_name, name, sizeof(dev->dax_name));

	/* the reference keeps dax.ko loaded while tempo.ko's driver is on its bus */
	reg = symbol_get(__dax_driver_register);
	if (!reg) {
		pr_err("tempo: %s: the dax bus (dax.ko) is not loaded\n", name);
		return -ENODEV;
	}
	ret = reg(&tempo_dax_driver, THIS_MODULE, KBUILD_MODNAME);
	if (ret) {
		symbol_put(__dax_driver_register);
		pr_err("tempo: %s: cannot register on the dax bus: %d\n", name, ret);
		return ret;
	}
	ret = -ENODEV;
	ddev = bus_find_device_by_name(tempo_dax_driver.drv.bus, NULL, name);
	if (ddev) {
		tempo_dax_binding = dev;
		ret = device_driver_attach(&tempo_dax_driver.drv, ddev);
		tempo_dax_binding = NULL;
		put_device(ddev);
	}
	if (ret) {
		if (ret == -EBUSY)
			pr_err("tempo: %s is in use (bound to a driver or claimed): `daxctl "
			       "disable-device %s` first, and only if nothing uses it\n",
			       name, name);
		else
			pr_err("tempo: cannot bind dax device %s: %d\n", name, ret);
		tempo_dax_detach(dev);
		return ret;
	}
	*bytes = dev->dax_used;
	return 0;
}

/*
 * rmmod, or a failed load, after the last fill into the range: unbinds the
 * device (if it is still there) and leaves the dax bus.
 */
void tempo_dax_detach(struct tempo_dev *dev)
{
	/* found: tempo_dax_attach() holds dax.ko */
	void (*unreg)(struct dax_device_driver *) = symbol_get(dax_driver_unregister);

	dev->dax_leaving = true;
	unreg(&tempo_dax_driver);
	symbol_put(dax_driver_unregister);
	symbol_put(__dax_driver_register);
}
