// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Shared user-space side of the tempo eBPF tools. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include "tool.h"

#define TRACEFS "/sys/kernel/tracing"
#define TRACEFS_MAGIC_NUMBER 0x74726163
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39
#define NT_STAPSDT 3

static volatile sig_atomic_t exiting;
static bool verbose;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (level == LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int parse_long(const char *s, long min, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return -EINVAL;
	*out = v;
	return 0;
}

int tool_parse(struct tool_opts *o, int argc, char **argv, const char *usage, const char *extra)
{
	char optstring[32];
	long v;
	int c;

	snprintf(optstring, sizeof(optstring), "hjvp:b:%s", extra);
	while ((c = getopt(argc, argv, optstring)) != -1) {
		switch (c) {
		case 'h':
			printf("%s", usage);
			return 1;
		case 'j':
			o->json = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'm':
			o->millis = true;
			break;
		case 'p':
			if (parse_long(optarg, 1, &v) || v > INT_MAX) {
				fprintf(stderr, "%s: invalid PID '%s'\n", o->name, optarg);
				return -EINVAL;
			}
			o->pid = (pid_t)v;
			break;
		case 'b':
			o->path = optarg;
			break;
		default:
			fprintf(stderr, "%s", usage);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		/* bounded: tool_wait counts tenths of a second in a long */
		if (parse_long(argv[optind], 1, &o->interval_s) ||
		    o->interval_s > TOOL_MAX_INTERVAL_S) {
			fprintf(stderr, "%s: invalid interval '%s' (whole seconds, 1 to %d)\n",
				o->name, argv[optind], TOOL_MAX_INTERVAL_S);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		if (parse_long(argv[optind], 1, &o->count)) {
			fprintf(stderr, "%s: invalid count '%s' (>= 1)\n", o->name, argv[optind]);
			return -EINVAL;
		}
		optind++;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n%s", o->name, argv[optind], usage);
		return -EINVAL;
	}
	if (o->pid && kill(o->pid, 0) && errno == ESRCH) {
		fprintf(stderr, "%s: no process with PID %d\n", o->name, o->pid);
		return -ESRCH;
	}
	return 0;
}

static bool has_bpf_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return geteuid() == 0;
	if (data[0].effective & (1u << CAP_SYS_ADMIN))
		return true;
	return (data[1].effective & (1u << (CAP_BPF_BIT - 32))) &&
	       (data[1].effective & (1u << (CAP_PERFMON_BIT - 32)));
}

int tool_check_env(const struct tool_opts *o)
{
	struct statfs st;
	int ret = 0;

	if (!has_bpf_privileges()) {
		fprintf(stderr,
			"%s: missing privileges: loading BPF programs needs root "
			"(CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN); run it with sudo\n",
			o->name);
		ret = -EPERM;
	}
	if (statfs(TRACEFS, &st) || st.f_type != TRACEFS_MAGIC_NUMBER) {
		fprintf(stderr,
			"%s: missing tracefs: it is not mounted at " TRACEFS
			" (needed for the tempo:* tracepoints); mount it with "
			"'mount -t tracefs nodev " TRACEFS "'\n",
			o->name);
		if (!ret)
			ret = -ENOENT;
	}
	return ret;
}

void tool_init(const struct tool_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal};

	verbose = o->verbose;
	libbpf_set_print(libbpf_print);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int tool_tp_prepare(const struct tool_opts *o, struct tool_tp *tps, int n)
{
	char path[PATH_MAX];
	int present = 0;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), TRACEFS "/events/tempo/%s", tps[i].event);
		tps[i].present = access(path, F_OK) == 0;
		present += tps[i].present;
	}
	if (n && !present)
		fprintf(stderr,
			"%s: tempo.ko's tracepoints are absent (no " TRACEFS "/events/tempo/): "
			"kernel staging is not traced; load tempo.ko to trace it\n",
			o->name);
	return present;
}

/* True when the ELF file carries at least one USDT note of provider "tempo". */
static bool has_tempo_probes(const char *path)
{
	size_t shstrndx, addr_size;
	Elf_Scn *scn = NULL;
	bool found = false;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	addr_size = gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		size_t off = 0, next, name_off, desc_off;
		const char *name;
		Elf_Data *data;
		GElf_Shdr sh;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		data = elf_getdata(scn, NULL);
		while (data && !found &&
		       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off))) {
			const char *base = data->d_buf;

			/* desc: pc, base, semaphore addresses, then "provider\0name\0args\0" */
			found = nh.n_type == NT_STAPSDT && nh.n_namesz == 8 &&
				!memcmp(base + name_off, "stapsdt", 8) &&
				nh.n_descsz > 3 * addr_size + 6 &&
				!strcmp(base + desc_off + 3 * addr_size, "tempo");
			off = next;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* Files of the process that may hold the probes: its executable, then its mapped files. */
static int target_files(pid_t pid, char (*files)[PATH_MAX], int max)
{
	char line[PATH_MAX + 128], maps[64];
	ssize_t len;
	FILE *f;
	int n;

	snprintf(maps, sizeof(maps), "/proc/%d/exe", pid);
	len = readlink(maps, files[0], PATH_MAX - 1);
	/* The executable's own path, so that its mapping below is not attached twice. */
	if (len > 0 && len < PATH_MAX - 1) {
		files[0][len] = '\0';
		if (access(files[0], R_OK))
			snprintf(files[0], PATH_MAX, "%s", maps);
	} else {
		snprintf(files[0], PATH_MAX, "%s", maps);
	}
	n = 1;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		bool seen = false;

		if (!path || !strstr(line, " r-xp "))
			continue;
		path[strcspn(path, "\n")] = '\0';
		for (int i = 0; i < n; i++)
			seen |= !strcmp(files[i], path);
		if (!seen)
			snprintf(files[n++], PATH_MAX, "%s", path);
	}
	fclose(f);
	return n;
}

static int attach_usdt_file(const struct tool_opts *o, const char *file, pid_t pid,
			    struct tool_usdt *usdt, int n, struct bpf_link **links, int *n_links,
			    int max_links)
{
	int attached = 0;

	for (int i = 0; i < n && *n_links < max_links; i++) {
		struct bpf_link *l = bpf_program__attach_usdt(usdt[i].prog, pid, file, "tempo",
							      usdt[i].probe, NULL);

		if (!l) {
			int err = -errno;

			/* A build may leave some probes out: only the attached ones count. */
			if (err == -ENOENT)
				continue;
			fprintf(stderr, "%s: attaching tempo:%s in %s failed: %s\n", o->name,
				usdt[i].probe, file, strerror(-err));
			return err;
		}
		links[(*n_links)++] = l;
		attached++;
	}
	return attached;
}

int tool_attach(const struct tool_opts *o, struct tool_usdt *usdt, int n_usdt, struct tool_tp *tps,
		int n_tp, struct bpf_link **links, int max_links)
{
	static char files[64][PATH_MAX];
	int n_files = 0, n_links = 0, usdt_attached = 0, tp_attached = 0;

	elf_version(EV_CURRENT);
	if (o->path) {
		if (!has_tempo_probes(o->path)) {
			fprintf(stderr,
				"%s: %s has no tempo USDT probes (not built with core/probes.h?)\n",
				o->name, o->path);
			return -ENOENT;
		}
		snprintf(files[n_files++], PATH_MAX, "%s", o->path);
	} else if (o->pid) {
		n_files = target_files(o->pid, files, 64);
		if (n_files < 0) {
			fprintf(stderr, "%s: cannot read the mappings of PID %d: %s\n", o->name,
				o->pid, strerror(-n_files));
			return n_files;
		}
	}
	for (int i = 0; i < n_files; i++) {
		int ret;

		if (!has_tempo_probes(files[i]))
			continue;
		ret = attach_usdt_file(o, files[i], o->pid ? o->pid : -1, usdt, n_usdt, links,
				       &n_links, max_links);
		if (ret < 0)
			return ret;
		usdt_attached += ret;
	}
	if (n_files && !usdt_attached) {
		if (o->pid)
			fprintf(stderr,
				"%s: no tempo USDT probes in process %d (is it linked with "
				"libtempo?)\n",
				o->name, o->pid);
		else
			fprintf(stderr, "%s: no tempo USDT probe of this tool in %s\n", o->name,
				o->path);
		return -ENOENT;
	}
	for (int i = 0; i < n_tp && n_links < max_links; i++) {
		struct bpf_link *l;

		if (!tps[i].present)
			continue;
		l = bpf_program__attach_tracepoint(tps[i].prog, "tempo", tps[i].event);
		if (!l) {
			fprintf(stderr, "%s: attaching tracepoint tempo:%s failed: %s\n", o->name,
				tps[i].event, strerror(errno));
			return -errno;
		}
		links[n_links++] = l;
		tp_attached++;
	}
	if (!usdt_attached && !tp_attached) {
		fprintf(stderr,
			"%s: nothing to trace: give -p PID or -b PATH for libtempo's USDT probes "
			"(tempo.ko's tracepoints are absent)\n",
			o->name);
		return -ENOENT;
	}
	return usdt_attached;
}

int tool_start(const struct tool_opts *o, struct tool_usdt *usdt, int n_usdt, struct tool_tp *tps,
	       int n_tp, struct bpf_link **links, int max_links, bool *kernel)
{
	int err;

	*kernel = tool_tp_prepare(o, tps, n_tp) > 0;
	err = tool_attach(o, usdt, n_usdt, tps, n_tp, links, max_links);
	if (err < 0)
		return err;
	if (err)
		fprintf(stderr, "%s: tracing %d tempo USDT probes%s; Ctrl-C to end\n", o->name, err,
			*kernel ? " and tempo.ko's tracepoints" : "");
	else
		fprintf(stderr, "%s: tracing tempo.ko's tracepoints; Ctrl-C to end\n", o->name);
	return err;
}

bool tool_wait(const struct tool_opts *o)
{
	const struct timespec tick = {.tv_nsec = 100 * 1000 * 1000};

	for (long i = 0; i < o->interval_s * 10; i++) {
		if (exiting)
			return false;
		if (o->pid && kill(o->pid, 0) && errno == ESRCH)
			return false;
		nanosleep(&tick, NULL);
	}
	return !exiting;
}

void tool_time(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

void tool_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}
