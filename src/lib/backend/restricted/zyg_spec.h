/* SPDX-License-Identifier: MIT */
/*
 * Warm runs: a run's spec as the host marshals it (rspec_marshal.c) and the run's init and
 * program read it (zyg.c, in the template's interpreter).  Binary, private to one build
 * (the library and the helper it embeds are built together): a fixed header, then
 * records {u32 type, u32 len, len bytes, padding to 8}.  Strings inside a record are
 * NUL-terminated; the reader checks every length against the spec's size before it
 * looks at a byte.  The template itself never reads a spec: only the run's own
 * processes do (template.c).
 */
#ifndef GOVEX_ZYG_SPEC_H
#define GOVEX_ZYG_SPEC_H

#include <stdint.h>

#define ZYG_MAGIC 0x317a7667u /* "gvz1" */
/* a spec larger than this is refused by the reader (code is bounded far below) */
#define ZYG_SPEC_MAX (64u << 20)

struct zyg_hdr {
	uint32_t magic;
	uint32_t size;	       /* the whole spec, header included */
	int32_t nprocs;	       /* cgroup.procs descriptors handed over */
	int32_t has_cpu;       /* a CPU accounting descriptor follows them */
	int32_t has_extra;     /* call mode: the response descriptor (fd 3) follows */
	int32_t cpu_version;   /* 1: cpuacct.usage (ns), 2: cpu.stat usage_usec */
	int64_t cpu_budget_ns; /* -1: none */
	int32_t ncpus;
	int32_t setid; /* root: the run's own ids (uid, gid) */
	uint32_t uid, gid;
	int32_t text;	 /* which of govex's worker texts the code is, -1: a ZR_CODE record */
	int32_t outputs; /* an output directory for the run */
	int32_t notify;	 /* denials answered and counted by the run's init */
	int32_t denials_max;
	/* Landlock: ll_size 0 is none */
	uint64_t ll_fs, ll_net, ll_scoped, ll_file_rights;
	uint32_t ll_size;
	uint32_t report_size;
	/* a spare (template_spare.c): every step taken ahead, up to the seccomp allowlist;
	 * then the run's init waits for the host's go ('g' on the watch socket: a second
	 * spec with the run's own records -- ENV, ARGV, ARGV_CODE, CODE, FILE, REMOUNT --
	 * its text, outputs and has_extra, and the call-mode descriptor when has_extra) */
	int32_t deferred;
	/* a spare's warm-up before its go (zygote.py, _zyg_prewarm): after waiting that
	 * many ms for it, or -1: in full at once (GOVEX_WARM_SPARE=1), -2: never (=bare) */
	int32_t prewarm;
};

enum zyg_record {
	ZR_WORKDIR = 1, /* path */
	ZR_TMPFS,	/* path, options: the run's own writable places */
	ZR_MASK,	/* path: a host-wide proc file masked where proc has no subset=pid */
	ZR_IDENT,	/* path, then the file's bytes (the rest of the record) */
	ZR_RLIMIT,	/* struct zyg_rlimit */
	ZR_LLRULE,	/* u64 access, path */
	ZR_FILE,	/* name: a file in, bound read-only */
	ZR_ENV,		/* "NAME=value" bytes (no NUL) */
	ZR_ARGV,	/* one argv entry's bytes; the code's own entry is ZR_ARGV_CODE */
	ZR_ARGV_CODE,	/* (empty): sys.orig_argv's entry that is the code */
	ZR_CODE,	/* the code's bytes (when text is -1) */
	ZR_REMOUNT,	/* path, options: a go's tmpfs remounted (the workdir's size with the
			 * files in) */
};

struct zyg_rlimit {
	int32_t resource, step;
	uint64_t soft, hard;
};

#endif
