/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What tempostat and tempomargin share in user space: options, checks, attaching, timing. */
#ifndef TEMPO_EBPF_TOOL_H
#define TEMPO_EBPF_TOOL_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <bpf/libbpf.h>

/* The longest interval (about 3 years; tempomargin's default: report at exit only). */
#define TOOL_MAX_INTERVAL_S 99999999

struct tool_opts {
	const char *name; /* program name, for messages */
	pid_t pid;	  /* -p: one process, 0 = none */
	const char *path; /* -b: binary or library holding the probes */
	long interval_s;  /* seconds between reports */
	long count;	  /* reports before exiting, 0 = until interrupted */
	bool json;	  /* -j: one JSON object per line */
	bool millis;	  /* -m: histograms in milliseconds (tempomargin) */
	bool verbose;	  /* -v: libbpf debug output */
};

/* A USDT program and the probe of provider `tempo` it handles. */
struct tool_usdt {
	struct bpf_program *prog;
	const char *probe;
};

/* A tracepoint program of tempo.ko (category `tempo`). */
struct tool_tp {
	struct bpf_program *prog;
	const char *event;
	bool present; /* set by tool_tp_prepare() */
};

/*
 * Parses argv; `extra` lists the tool's own flags ("m" for -m). Returns 0, 1 after -h
 * (usage printed, exit 0), or -EINVAL (message printed).
 */
int tool_parse(struct tool_opts *o, int argc, char **argv, const char *usage, const char *extra);

/* Checks for the privileges and tracefs the tools need; prints what is missing. */
int tool_check_env(const struct tool_opts *o);

/* Sets up libbpf logging (quiet unless -v) and SIGINT/SIGTERM handling. */
void tool_init(const struct tool_opts *o);

/*
 * Marks which tempo.ko tracepoints tracefs lists (only those get attached; the programs load
 * either way) and says so when none does. Returns how many exist.
 */
int tool_tp_prepare(const struct tool_opts *o, struct tool_tp *tps, int n);

/*
 * Attaches the USDT programs (to -p's process, or to -b's file for all processes) and the
 * present tracepoints. Returns the number of USDT probes attached, or a negative errno with
 * a message when nothing can be traced.
 */
int tool_attach(const struct tool_opts *o, struct tool_usdt *usdt, int n_usdt, struct tool_tp *tps,
		int n_tp, struct bpf_link **links, int max_links);

/*
 * tool_tp_prepare() + tool_attach(), then the banner on stderr saying what is traced. Sets
 * *kernel when tempo.ko's tracepoints are present. Returns what tool_attach() returns.
 */
int tool_start(const struct tool_opts *o, struct tool_usdt *usdt, int n_usdt, struct tool_tp *tps,
	       int n_tp, struct bpf_link **links, int max_links, bool *kernel);

/* Sleeps one interval; false once interrupted, or once -p's process has exited. */
bool tool_wait(const struct tool_opts *o);

/* Wall-clock time as HH:MM:SS into buf (9 bytes). */
void tool_time(char *buf, size_t len);

/* Prints a JSON string value with the characters JSON needs escaped. */
void tool_json_string(FILE *f, const char *s);

#endif
