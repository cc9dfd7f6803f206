/*
 * seal.h - criu/SEAL, the record gpuckpt-shepherd keeps beside CRIU's images
 * in a transparent checkpoint (GK_CRIU_DIR, image.h): its format, writing
 * it, and checking it (seal.c, which says what a seal must be to be
 * believed). Beside the image format, so that what checks a checkpoint
 * (`gpuckpt verify`, gpuckpt-stage) reads a seal without the shepherd.
 *
 * Every function returns 0 or a negative errno and, where it takes err,
 * says there what failed on what.
 */
#ifndef GK_SEAL_H
#define GK_SEAL_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cuda.h> /* CUuuid */

#define GK_SEAL_MAX_GPUS 64
/* As many as the shepherd handles in a tree (GK_SHEP_MAX_PROCS). */
#define GK_SEAL_MAX_CUDA_PIDS 4096
/* Processes of the task whose runtimes wrote a part (proc.PID beside criu/). */
#define GK_SEAL_MAX_PARTS 64
#define GK_SEAL_FILE "SEAL"
/* root's Munge credential over SEAL (runtime/image/sign.c, gk_root_sign_at) */
#define GK_SEAL_SIG_FILE "SEAL.sig"
/* CRIU's log of a restore from the folder, and its statistics of one (which
 * CRIU writes beside the images when it can, as root): the files of criu/
 * not sealed. CRIU never reads either. */
#define GK_SEAL_RESTORE_LOG "restore.log"
#define GK_SEAL_RESTORE_STATS "stats-restore"

struct gk_gpu {
	char uuid[64]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	char name[256];
};

struct gk_seal {
	uid_t uid;
	gid_t gid;
	char job[32], step[32];
	int task;
	char manifest_sha256[65];
	char stdio[3][4096]; /* readlink of the program's fd 0..2 */
	/* The kind of the task's stdio fd i was (the shepherd's own fd i):
	 * "pipe", "socket", "file", "null", "tty"; "" when it was not the
	 * task's. have_stdio_task 0: a seal from before they were recorded. */
	char stdio_task[3][8];
	int have_stdio_task;
	size_t ngpus;
	struct gk_gpu gpus[GK_SEAL_MAX_GPUS];
	size_t nnode_gpus; /* every GPU of the node (gk_node_gpus); 0 in older seals */
	char node_gpus[GK_SEAL_MAX_GPUS][64];
	char socket[108]; /* GPUCKPT_SHEPHERD of the tree: listened on again after a restore */
	/* How many processes the driver checkpointed: a restore must find
	 * them all checkpointed again after CRIU's; -1 in older seals. */
	int cuda_processes;
	/* Which they were (have_cuda_pids 0: a seal from before they were
	 * recorded). CRIU gives each process its pid back, so a restore asks
	 * the driver about these and no other process of the tree: a process
	 * it never checkpointed (a DataLoader worker forked from one it did)
	 * has no one to answer the driver's restore calls. */
	int have_cuda_pids;
	size_t ncuda_pids;
	pid_t cuda_pids[GK_SEAL_MAX_CUDA_PIDS];
	/* The parts beside criu/ (ckptname.h, GK_CKPT_PART_PREFIX), when the
	 * task ran several processes with the runtime (the shepherd's
	 * proc_parts.c): each folder's name and the SHA-256 of its manifest, which
	 * bind the part to this seal as manifest_sha256 binds the top one.
	 * gk_seal_write fills the digests from the names. 0 in older seals and
	 * for a task with one runtime (its folder is the checkpoint itself). */
	size_t nparts;
	struct gk_seal_part {
		char name[32];
		char manifest_sha256[65];
	} parts[GK_SEAL_MAX_PARTS];
	double criu_seconds, driver_seconds;
	uint64_t image_bytes; /* filled by gk_seal_write and gk_seal_verify */
};

/* Write criu/SEAL in the folder `criufd` (the checkpoint folder is
 * `ckptfd`): s plus the digest of every file of the folder and of each
 * part's manifest (s->parts[].name, in ckptfd), then
 * criu/SEAL.sig, root's Munge credential over it (root only; munged must
 * answer). */
int gk_seal_write(int ckptfd, int criufd, struct gk_seal *s, gk_error_t *err);

/*
 * Verify ckptfd/criu: root:root 0700, not a link; SEAL a root-owned file
 * carrying root's credential (SEAL.sig); files exactly those of the seal
 * (plus a restore's log and statistics), digests match, manifest hash
 * matches, each sealed part's manifest hash matches, seal's uid == uid.
 * Fills *s. On success, *criufd_out (when not NULL) is the descriptor of
 * the very folder that was checked, for CRIU: the caller closes it.
 */
int gk_seal_verify(int ckptfd, uid_t uid, struct gk_seal *s, int *criufd_out, gk_error_t *err);

/* Parse and check the text of a seal on its own (every field, the file
 * list): what gk_seal_verify believes once root's credential is checked.
 * -EINVAL or -EPROTO with err saying what is wrong. (The fuzz target.) */
int gk_seal_parse(const char *text, size_t len, struct gk_seal *s, gk_error_t *err);

/* The SHA-256 of a file under dirfd, not following a link. */
int gk_file_sha256(int dirfd, const char *name, char hex[65], uint64_t *size);
/* "xxh64:<16 hex>", chained over 1 MiB blocks: the CRIU images' digest. */
int gk_file_digest(int dirfd, const char *name, char hex[65], uint64_t *size);

/* A GPU's UUID as the seal (and the driver's restore pairs) spell it:
 * "GPU-" and 32 lower-case hex digits in the 8-4-4-4-12 groups. */
int gk_uuid_format(const CUuuid *u, char out[64]);
int gk_uuid_parse(const char *text, CUuuid *u);

/* 1 when the driver checkpointed pid, as far as the seal says: it is one of
 * cuda_pids, or the seal is older than that list (every pid may be). */
int gk_seal_cuda_pid(const struct gk_seal *s, pid_t pid);

/* 1 when kind is one a seal may record for the task's stdio (stdio_task):
 * "pipe", "socket", "file", "null", "tty" or "" (the shepherd's gk_stdio_record). */
int gk_stdio_kind_ok(const char *kind);

#endif
