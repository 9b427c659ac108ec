// SPDX-License-Identifier: GPL-2.0
/*
 * The DAX fast tier is a Device-DAX instance tempo.ko owns: named by the
 * operator (dax=daxX.Y), its range read from the dax bus, claimed in the
 * iomem tree and given struct pages by this module. A dax device bound to a
 * driver (device_dax, kmem) holds its range busy, so it is refused; while
 * tempo.ko holds the range, no driver can bind it (daxctl enable-device and
 * reconfigure-device fail with -EBUSY). A range that intersects System RAM
 * is refused. Everything here may sleep.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ioport.h>
#include <linux/kernel.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/sizes.h>

#include "tempo.h"

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

/*
 * Claims dax device name and maps its first use_bytes (0: all of it, rounded
 * down to 2 MiB) as the fast tier: dev->dax_start, dev->dax_kaddr, *bytes.
 */
int tempo_dax_attach(struct tempo_dev *dev, const char *name, u64 use_bytes, u64 *bytes)
{
	u64 start, size, use;
	void *addr;
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
	if (!request_mem_region(start, size, "tempo")) {
		pr_err("tempo: %s is in use (bound to a driver or claimed): `daxctl disable-device "
		       "%s` first, and only if nothing uses it\n",
		       name, name);
		return -EBUSY;
	}
	use = round_down(use_bytes ? min(use_bytes, size) : size, SZ_2M);
	ret = -EINVAL;
	if (!use) {
		pr_err("tempo: %s: less than 2 MiB to use\n", name);
		goto out_release;
	}
	dev->dax_pgmap.type = MEMORY_DEVICE_GENERIC;
	dev->dax_pgmap.range = (struct range){ .start = start, .end = start + use - 1 };
	dev->dax_pgmap.nr_range = 1;
	addr = memremap_pages(&dev->dax_pgmap, NUMA_NO_NODE);
	if (IS_ERR(addr)) {
		ret = PTR_ERR(addr);
		pr_err("tempo: %s: cannot create its struct pages: %d\n", name, ret);
		goto out_release;
	}
	dev->dax_kaddr = addr;
	dev->dax_start = start;
	dev->dax_claimed = size;
	*bytes = use;
	return 0;

out_release:
	release_mem_region(start, size);
	return ret;
}

/* After the last fill into the range has completed. */
void tempo_dax_detach(struct tempo_dev *dev)
{
	memunmap_pages(&dev->dax_pgmap);
	release_mem_region(dev->dax_start, dev->dax_claimed);
	dev->dax_kaddr = NULL;
}
