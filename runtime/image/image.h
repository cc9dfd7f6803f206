/*
 * image.h - the checkpoint image: what a checkpoint directory holds, how it is
 * written (complete or absent), read, verified and signed. Shared by the
 * runtime (libgpuckpt) and the command-line tool; nothing here touches CUDA.
 *
 * A checkpoint root (GPUCKPT_DIR, one per job task) holds:
 *
 *	ROOT/ckpt.000007/            a committed checkpoint, sequence 7
 *		manifest.json        what is in it (format below)
 *		manifest.sig         Munge credential over the manifest's SHA-256
 *		                     (absent when munged was not reachable)
 *		device0.data         contents of the allocations of device 0
 *		device0.1.data ...   more of them: a device's bytes are spread over
 *		                     several files (see struct gk_part)
 *		host.data            contents of the registered host regions
 *	ROOT/.tmp.ckpt.000008.<host>.<pid>/   being written; never read
 *	ROOT/.trash.ckpt.000005.<pid>/        being deleted; never read
 *
 * A checkpoint is written into a .tmp directory, every file and the directory
 * are fsync'ed, and it is renamed to ckpt.N: the rename is the commit. Older
 * checkpoints are pruned only after that, so the last good one survives any
 * failure (a kill at any point leaves either the old set, or the old set plus
 * the new one). A checkpoint that an increment refers to is kept as long as
 * that increment is.
 *
 * Data files hold each object's bytes at the offset the manifest gives,
 * 4096-aligned; an allocation's may be cut into parts in several files, and
 * in an increment (format 3) some parts lie in earlier checkpoints' files
 * (ROOT/ckpt.N/device0.data ...). An object is checksummed in chunks of
 * manifest.chunk_size bytes (the last chunk may be shorter): XXH3-64 from
 * format 3, XXH64 with seed 0 before.
 */
#ifndef GK_IMAGE_H
#define GK_IMAGE_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract.h" /* GK_ERRLEN, GK_DEFAULT_CHUNK_SIZE (runtime/common) */
#include "image/ckptname.h" /* the folder names, GK_MANIFEST_FILE */

#define GK_FORMAT_NAME "gpuckpt-image"
/* Version 6: the device memory the process had open through gpuckpt's legacy
 * CUDA IPC ("ipc_imports": which open, where, of what), so that a restart
 * whose program opens other memory, or in another order, is refused instead
 * of leaving the program's pointers on the wrong memory; written only by a
 * checkpoint that has such imports.
 * Version 5: a part may be "zero": chunks whose bytes are all zero, recorded
 * with their size and checksums but held by no file (a preallocated pool that
 * is mostly unused costs what it holds); written only by a checkpoint that has
 * such chunks, so that a gpuckpt that would look for them in a file refuses it
 * by its version number.
 * Version 4: a device may list the devices that were granted peer access to
 * its memory ("peer_access"); written only by a checkpoint that has such
 * grants (others stay version 3), so that a gpuckpt that could not grant them
 * again refuses it by its version number instead of restoring it without.
 * Version 3: XXH3-64 chunk checksums ("xxh3"); a checkpoint may be an
 * increment whose parts lie in earlier checkpoints' files ("references");
 * change keys per chunk. Version 2: an allocation's bytes lie in "parts",
 * possibly in several files. Version 1: one "file" and "offset" per
 * allocation. All four are read; a gpuckpt that reads only up to 2 refuses
 * version 3 by its version number. */
#define GK_FORMAT_VERSION 6
/* What a new checkpoint is written in unless it holds peer access. */
#define GK_FORMAT_WRITTEN 3
/* Peer access is recorded as a mask of device ordinals: they stay below this. */
#define GK_PEER_ORDINALS 64
#define GK_SIGNATURE_FILE "manifest.sig"
#define GK_HOST_DATA_FILE "host.data"
/* The shepherd's folder in a transparent checkpoint (runtime/shepherd):
 * root:root 0700, CRIU's images and their seal. Never a data file. */
#define GK_CRIU_DIR "criu"
#define GK_DATA_ALIGN 4096u
#define GK_NAME_MAX 64 /* region names, file names: [A-Za-z0-9_.-], no "..", not empty */

/* ---- checksums (checksum.c) ---- */

/*
 * The per-chunk checksum of checkpoint data (libxxhash): XXH3-64 from format
 * 3 on, XXH64 with seed 0 in formats 1 and 2, so that checkpoints written
 * before the change still verify.
 */
enum gk_sum_algo {
	GK_SUM_XXH64 = 1,
	GK_SUM_XXH3 = 2,
};

/* The checksum of images of format `version`, and its name for messages. */
enum gk_sum_algo gk_sum_algo_of(int version);
const char *gk_sum_name(enum gk_sum_algo algo);

uint64_t gk_sum(enum gk_sum_algo algo, const void *data, size_t len);

/* The same over data that arrives in pieces (a chunk written or read a piece
 * at a time); the digest equals gk_sum of the concatenation. The state is
 * libxxhash's, kept here so that it can live on the stack. */
struct gk_sum_state {
	enum gk_sum_algo algo;
	_Alignas(64) unsigned char opaque[640];
};

void gk_sum_init(struct gk_sum_state *s, enum gk_sum_algo algo);
void gk_sum_update(struct gk_sum_state *s, const void *data, size_t len);
uint64_t gk_sum_digest(const struct gk_sum_state *s);

/* The checksum of `len` zero bytes (what a chunk recorded as zero must
 * carry); the values for the most recent lengths are kept, so that a
 * checkpoint of many zero chunks hashes zeros once per length. */
uint64_t gk_sum_zeros(enum gk_sum_algo algo, uint64_t len);

/* 1 when all `len` bytes at p are zero: a word-wise scan that stops at the
 * first non-zero word (vectorised by the compiler). */
int gk_is_zero(const void *p, size_t len);

/* XXH64 with a seed (transparent mode chains it over CRIU's images). */
uint64_t gk_xxh64(const void *data, size_t len, uint64_t seed);

/* SHA-256 (libcrypto) of a buffer; -ENOMEM (digest zeroed, hex "") when
 * libcrypto could not set up its context. */
int gk_sha256(const void *data, size_t len, uint8_t digest[32]);

/* The same as 64 lowercase hex digits and a NUL. */
int gk_sha256_hex(const void *data, size_t len, char hex[65]);

/* SHA-256 of data that arrives in pieces (files too large to hold in memory:
 * CRIU's images). final writes 64 lowercase hex digits and a NUL, or "" and
 * -ENOMEM when libcrypto failed on the way; it releases the state, and must
 * be called once for every init. */
struct gk_sha256_state {
	void *ctx; /* libcrypto's EVP_MD_CTX; NULL after a failure */
};

void gk_sha256_init(struct gk_sha256_state *s);
void gk_sha256_update(struct gk_sha256_state *s, const void *data, size_t len);
int gk_sha256_final(struct gk_sha256_state *s, char hex[65]);

/* ---- manifest (manifest.c; manifest_write.c, manifest_read.c) ---- */

struct gk_chunk {
	uint64_t sum; /* gk_sum_algo_of(version) of the chunk's bytes */
	uint64_t key; /* its change key (gk_alloc_rec.has_keys) */
};

/*
 * Where some of an allocation's bytes lie: `size` bytes from `start` of the
 * allocation, at `offset` of `file`. An allocation's parts cover it in order,
 * and every part but the last is a whole number of chunks, so that a chunk
 * never straddles two files. Why parts: the copy threads write tmpfs fastest
 * with a file each (write() holds the file's lock), and one large allocation
 * must not put them all on one file.
 */
struct gk_part {
	uint64_t sequence;    /* the checkpoint whose file holds them: 0 for this one,
	                         else one of the manifest's references (format 3) */
	char file[GK_NAME_MAX];
	uint64_t offset;
	uint64_t start;
	uint64_t size;
	/* Format 5: the part's bytes are all zero and lie in no file (file "",
	 * offset 0, sequence 0); its chunks' checksums are those of zeros. */
	int zero;
};

/* One device allocation: where it lives and where its bytes are. */
struct gk_alloc_rec {
	int device;           /* visible device ordinal at checkpoint time */
	uint64_t address;     /* device virtual address; identical after restore */
	uint64_t size;        /* bytes the application asked for */
	uint64_t order;       /* allocation sequence number on its device */
	char kind[16];        /* "alloc", "pitch", "async", "vmm" */
	uint32_t nparts;      /* 0 for size 0 */
	struct gk_part *parts;
	uint32_t nchunks;     /* = ceil(size / chunk_size), 0 for size 0 */
	struct gk_chunk *chunks;
	/* Format 3: every chunk's change key, the runtime's hash of it computed
	 * where the data lives (segment_hash.h), so that a process restored from
	 * this checkpoint can write increments against it. 0: none recorded. */
	int has_keys;
	/* Kind "vmm", memory the program mapped itself (cuMemMap): the
	 * reservation it lies in, which a restart reserves again at the same
	 * address; order is that reservation's number among the process's
	 * reservations. Outside the device's placed range. */
	uint64_t resv_address, resv_size;
};

/* An allocation of memory the program mapped itself. */
#define GK_KIND_VMM "vmm"

/*
 * Format 6: device memory of another process the program had open through
 * gpuckpt's legacy CUDA IPC (core/interpose/ipc.c) when it was checkpointed.
 * The importer saves none of it (the exporter does); a restart's program
 * opens its handles again, and its n-th open must come back at `address`
 * with the same block of its exporter, or the pointers it kept are wrong.
 */
struct gk_import_rec {
	uint64_t ordinal;          /* the process's n-th cuIpcOpenMemHandle, from 0 */
	uint64_t address;          /* where it was mapped */
	uint64_t size;             /* the exported block's size */
	uint64_t exporter_address; /* the block's address in its exporter */
};

/* One registered host region. */
struct gk_region_rec {
	char name[GK_NAME_MAX];
	uint64_t size;
	char file[GK_NAME_MAX];
	uint64_t offset;
	uint32_t nchunks;
	struct gk_chunk *chunks;
};

/* One GPU the process used, as it was at checkpoint time. */
struct gk_device_rec {
	int ordinal;           /* visible ordinal (after CUDA_VISIBLE_DEVICES) */
	char name[256];        /* "NVIDIA H100 80GB HBM3" */
	char uuid[64];         /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	int cc_major, cc_minor;
	uint64_t total_memory; /* bytes */
	uint64_t va_base;      /* the device's slice of the reserved range */
	uint64_t va_size;
	uint64_t next_order;   /* allocation counter when the checkpoint was taken */
	uint64_t mapped_bytes; /* physical memory the allocations need on restore */
	uint64_t peer_access;  /* bit i: device i may read and write this device's
	                          memory (format 4; 0: no peer) */
};

struct gk_file_rec {
	char name[GK_NAME_MAX];
	uint64_t size;
};

#define GK_ID_LEN 32 /* a checkpoint's id: 128 random bits, lowercase hex */

/*
 * Format 3: an earlier checkpoint of the same root whose files hold some of
 * this one's data (an increment's unchanged chunks), found as the sibling
 * folder ckpt.<sequence>. The id must match that checkpoint's own, so that a
 * folder of the same name from another run is never taken for it; the files
 * are those this checkpoint reads there, with their sizes.
 */
struct gk_ref {
	uint64_t sequence;
	char id[GK_ID_LEN + 1];
	size_t nfiles;
	struct gk_file_rec *files;
};

struct gk_manifest {
	int version;                 /* as read (1 to 4); gk_manifest_new: GK_FORMAT_WRITTEN */
	char created[32];            /* ISO 8601 UTC, "2026-11-22T10:00:00Z" */
	int64_t created_unix;
	double write_seconds;        /* how long writing the checkpoint took */
	char hostname[256];
	uid_t uid;                   /* owner, as the runtime saw it */
	pid_t pid;
	int slurm;                   /* 1 when the fields below are set */
	char job_id[32];
	char step_id[32];
	int task;                    /* SLURM_PROCID */
	int restart_count;
	char label[128];             /* "step 500" */
	/* The program that wrote it (/proc/self/exe), so that a restart applies
	 * the checkpoint only to the same program, not to another CUDA process
	 * of the same task. Optional: empty when unknown. */
	char exe[1024];
	int64_t step;
	uint64_t sequence;           /* N of ckpt.N, set by gk_store_commit */
	/* A member of a step's checkpoint set (setfile.h): the set's random id,
	 * the step's task count and this task's index; set_members 0 when the
	 * checkpoint belongs to no set (a step of one task, or independent tasks). */
	uint64_t set_id;
	uint32_t set_members, set_member;
	char set_agreement[16];      /* "mpi", "pmix" */
	uint64_t chunk_size;
	uint64_t va_base, va_size;   /* the whole reserved range */

	size_t ndevices;
	struct gk_device_rec *devices;
	size_t nallocs;
	struct gk_alloc_rec *allocs; /* sorted by (device, address) */
	size_t nregions;
	struct gk_region_rec *regions;
	size_t nfiles;
	struct gk_file_rec *files;
	size_t nimports;             /* format 6, in the order of the opens */
	struct gk_import_rec *imports;

	/* Format 3. id: this checkpoint's; increment: 0 for a checkpoint that
	 * holds all its data, n for the n-th increment since the last one that
	 * did; refs: the checkpoints its parts refer to, older ones only. */
	char id[GK_ID_LEN + 1];
	uint32_t increment;
	size_t nrefs;
	struct gk_ref *refs;
};

/* 1 when `name` may name a data file or a host region (the GK_NAME_MAX rule). */
int gk_name_valid(const char *name);

/* How many checksums an object of `size` bytes has: ceil(size / chunk_size). */
uint32_t gk_chunk_count(uint64_t size, uint64_t chunk_size);

/* Allocate the arrays of a manifest being built (zeroed); gk_manifest_free frees all.
 * gk_manifest_new sets version (GK_FORMAT_WRITTEN), chunk_size
 * (GK_DEFAULT_CHUNK_SIZE) and a fresh random id (NULL when the kernel gives
 * no random bytes); the caller malloc's devices, allocs, regions, files,
 * refs and each object's chunks, which gk_manifest_free releases. */
struct gk_manifest *gk_manifest_new(void);
void gk_manifest_free(struct gk_manifest *m);

/* Serialise to JSON text (malloc'ed, NUL-terminated), in m->version's format
 * (a version 1 manifest as version 2: its one part per allocation; one
 * holding peer access as version 4). */
int gk_manifest_to_json(const struct gk_manifest *m, char **text, size_t *len);

/*
 * Parse and validate manifest text: format name and version, every required
 * field present with the right type, file names safe (no '/', no "..", known
 * files only), allocations of one device not overlapping and inside the
 * device's range, chunk counts matching sizes, data ranges inside their files
 * (a referenced checkpoint's files as the reference lists them).
 * On failure returns -EINVAL (or -ENOMEM) and says what is wrong in err;
 * -EPROTO when the format version is newer than GK_FORMAT_VERSION.
 */
int gk_manifest_parse(const char *text, size_t len, struct gk_manifest **out, gk_error_t *err);

/* ---- signature (sign.c) ---- */

/* Read `size` bytes (what fstat said) of an open file into a new
 * NUL-terminated buffer. -EIO when the file shrank meanwhile, -errno when a
 * read failed, -ENOMEM. */
int gk_read_small(int fd, size_t size, char **out);

/*
 * Sign manifest text: a Munge credential whose payload names the SHA-256 of
 * the text, written to `sigpath`. Returns -EHOSTUNREACH when munged cannot be
 * reached (the checkpoint is then written unsigned, with a warning).
 */
int gk_sign(const char *text, size_t len, const char *sigpath, gk_error_t *err);
/* The same into dirfd/name (never through a link). */
int gk_sign_at(const char *text, size_t len, int dirfd, const char *name, gk_error_t *err);

/*
 * Check the signature beside manifest text. 0: signed by `uid`, unchanged.
 * -ENOENT: no signature file. -EPERM: signed for another user (err says who).
 * -EBADMSG: the manifest was changed after signing, or the credential is
 * invalid. -EHOSTUNREACH: munged cannot be reached to check it.
 * An expired, replayed or rewound credential is accepted: the checkpoint may
 * be restored long after it was signed, and more than once.
 */
int gk_check_signature(const char *text, size_t len, const char *sigpath, uid_t uid,
		       gk_error_t *err);
int gk_check_signature_at(const char *text, size_t len, int dirfd, const char *name, uid_t uid,
			  gk_error_t *err);

/*
 * Root's signature (a transparent checkpoint's criu/SEAL.sig): a Munge
 * credential made by uid 0 over the SHA-256 of text, with a payload of its
 * own kind, so that no other credential passes for it. Always through the
 * node's own munged (GPUCKPT_MUNGE_SOCKET is not read). gk_root_sign_at
 * refuses to run as anyone but root; gk_root_check_at returns 0 only for a
 * credential of uid 0 over this very text (-EPERM for another signer,
 * -EBADMSG, -ENOENT, -EHOSTUNREACH as above).
 */
int gk_root_sign_at(const char *text, size_t len, int dirfd, const char *name, gk_error_t *err);
int gk_root_check_at(const char *text, size_t len, int dirfd, const char *name, gk_error_t *err);

/* ---- loading and verifying (verify.c) ---- */

struct gk_load_opts {
	uid_t uid;             /* whose checkpoint this must be (GK_UID_OF_MANIFEST: held only) */
	int held_by_root;      /* a copy root keeps for uid: its files are root's, not uid's */
	int require_signature; /* refuse unsigned manifests */
	int check_data;        /* read every data chunk and check its checksum */
	/* When set and the manifest records another program (exe), stop there:
	 * -ESRCH, err names that program (a restore does not load another
	 * program's checkpoint, so nothing more needs checking). */
	const char *exe;
	/* When set and it becomes non-zero, the data check stops: -ECANCELED
	 * (the process is ending). */
	const int *cancel;
};

/* With held_by_root: whoever the manifest names (for looking, not restoring). */
#define GK_UID_OF_MANIFEST ((uid_t)-1)

/*
 * Open the checkpoint in `dir`: read and parse the manifest, check that the
 * directory and its files belong to opts->uid and are not writable by others,
 * check the signature, and, with check_data, every chunk checksum. On failure
 * nothing is returned and err names the problem, e.g.
 *	"device0.data: checksum mismatch in allocation 17 (0x200000400000), chunk 3"
 * Returns -ENOENT (no manifest), -EINVAL (malformed), -EPROTO (format version),
 * -EBADMSG (checksum or signature), -EPERM (another user's), -ESRCH (another
 * program's, see opts->exe), -EIO. An increment's references are followed:
 * the checkpoints they name are opened as siblings of dir (owner, id, files),
 * and their chunks checked against this manifest's checksums.
 *
 * held_by_root: the checkpoint is a copy on the shared root, where the staging
 * keeps a job's checkpoints root's own so that no user can change them. The
 * files must then be root's (and writable by no one else), the manifest must
 * name uid as the user who wrote it, and the signature must be uid's. Only
 * the gpuckpt tool looks at such copies; a restore never loads one (it gets
 * the copy staged back to the burst buffer, owned by the job's user).
 */
int gk_image_open(const char *dir, const struct gk_load_opts *opts, struct gk_manifest **out,
		  int *signed_by_munge, gk_error_t *err);

/* The same on an open directory (`dir` names it in messages): the one a
 * root-run caller checked is the one read, whatever happens to its path. */
int gk_image_open_at(int dirfd, const char *dir, const struct gk_load_opts *opts,
		     struct gk_manifest **out, int *signed_by_munge, gk_error_t *err);
/* The same with the checkpoint root given too: an increment's references
 * are opened in rootfd, never through `dir` (gk_image_open_at opens dir's
 * parent by path). What root-run code uses: no path is followed at all. */
int gk_image_open_in(int rootfd, int dirfd, const char *dir, const struct gk_load_opts *opts,
		     struct gk_manifest **out, int *signed_by_munge, gk_error_t *err);

/* ---- increments (chain.c) ---- */

/*
 * Parse ROOT/ckpt.<sequence>/manifest.json, reached through rootfd without
 * following a link anywhere (safe for root-run code: staging, the shared-root
 * flush). Only the manifest is read and validated: no owner, signature or
 * data check (gk_image_open makes those).
 */
int gk_chain_read_manifest(int rootfd, uint64_t sequence, struct gk_manifest **out,
			   gk_error_t *err);

/*
 * What checkpoint `sequence` of the root needs besides its own folder: the
 * checkpoints its data lies in, each with the files of it that are read
 * (*refs, *n; none for a checkpoint that holds all its data, and for formats
 * 1 and 2). A checkpoint refers directly to every one that holds bytes of it,
 * so this set is complete: keeping (staging, flushing) a checkpoint means
 * keeping these too. Free *refs with gk_refs_free.
 */
int gk_chain_needs(int rootfd, uint64_t sequence, struct gk_ref **refs, size_t *n, gk_error_t *err);
void gk_refs_free(struct gk_ref *refs, size_t n);

/* Where a chunk's bytes are. */
struct gk_chunk_loc {
	uint64_t sequence; /* the checkpoint whose file holds them */
	char file[GK_NAME_MAX];
	uint64_t offset;
	int zero; /* all zero, held by no file (format 5): the rest unused */
};

/* Where chunk `chunk` of allocation a of manifest m lies (its sequence is
 * m->sequence for a part of m's own). -ENOENT if no part covers it. */
int gk_chunk_where(const struct gk_manifest *m, const struct gk_alloc_rec *a, uint32_t chunk,
		   struct gk_chunk_loc *loc);

/* Set a's parts from where each of its chunks lies (locs[a->nchunks]):
 * consecutive chunks that follow each other in one file make one part, and
 * so do consecutive zero chunks (a zero part); a location of sequence 0 or
 * own_sequence is in the checkpoint itself. */
int gk_parts_from_chunks(struct gk_alloc_rec *a, uint64_t chunk_size, uint64_t own_sequence,
			 const struct gk_chunk_loc *locs);

/* ---- the checkpoint root (store.c) ---- */

struct gk_store_txn {
	char root[4096];
	char tmpdir[4096];
	uint64_t sequence;
	int dirfd;  /* of tmpdir */
	int rootfd; /* of root: the transaction never goes back to it by path */
};

/* Start a checkpoint: create ROOT (0700) if needed, pick N = newest + 1,
 * create ROOT/.tmp.ckpt.N.<host>.<pid> (0700). */
int gk_store_begin(const char *root, struct gk_store_txn *txn, gk_error_t *err);

/*
 * The same in an open root (rootfd; `root` only names it in messages).
 * Every function taking a path has such a variant (_at): a root-run caller
 * (the shepherd, gpuckpt-stage) opens the folder once, checked (fsafe.h),
 * and never goes back to it by a path its owner could change.
 */
int gk_store_begin_at(int rootfd, const char *root, struct gk_store_txn *txn, gk_error_t *err);

/* The same with N given (0: the next free one): every member of a step's
 * checkpoint set writes the number the tasks agreed on. -EEXIST when ROOT
 * already uses N or a later number. */
int gk_store_begin_seq(const char *root, uint64_t sequence, struct gk_store_txn *txn,
		       gk_error_t *err);

/* The number gk_store_begin would pick now: 1 + the highest in use (1 when
 * ROOT does not exist yet). */
int gk_store_next(const char *root, uint64_t *next, gk_error_t *err);

/* Close a transaction that is over (sealed and published elsewhere, or
 * given up on without removing its folder). */
void gk_store_end(struct gk_store_txn *txn);

/* Close its descriptors but keep it: a process that CRIU is about to dump
 * must hold none. gk_store_abort then finds the folder by its path. */
void gk_store_detach(struct gk_store_txn *txn);

/* Create a data file in the checkpoint being written (0600, must not exist). */
int gk_store_create(struct gk_store_txn *txn, const char *name, int *fd, gk_error_t *err);

/*
 * Commit: set m->sequence, write manifest.json, sign it (unsigned with a
 * warning if munged is unreachable; *signed_out says which), fsync every file
 * and the directory, rename to ROOT/ckpt.N, fsync ROOT, then keep only the
 * newest `keep` committed checkpoints (keep 0: prune nothing). On failure the
 * .tmp directory is removed and the previous checkpoints are untouched.
 *
 * m->files may be left empty (nfiles 0): commit then lists the data files of
 * the directory with their sizes. When given, each must exist with that size.
 * The manifest is parsed back and validated before anything is renamed, so an
 * inconsistent manifest fails the commit instead of producing a bad checkpoint.
 */
int gk_store_commit(struct gk_store_txn *txn, struct gk_manifest *m, unsigned keep, int *signed_out,
		    gk_error_t *err);

/*
 * The two halves of gk_store_commit, for a checkpoint that two parties finish
 * (transparent mode: the runtime seals, the shepherd adds criu/ and publishes).
 *
 * gk_store_seal: everything commit does before the rename (m->sequence, the
 * manifest, its signature, fsync of every file and of the directory). The
 * directory keeps its .tmp name and txn stays open (gk_store_abort still
 * removes it). A criu/ folder in it is not a data file and is left alone. On
 * failure the .tmp directory is removed.
 *
 * gk_store_publish: rename ROOT/<tmpname> (".tmp.ckpt.N.<host>.<pid>", whose
 * N must be `sequence`) to ROOT/ckpt.N, fsync ROOT, then prune to `keep`. On
 * failure nothing is committed; the .tmp directory is left to the caller.
 */
int gk_store_seal(struct gk_store_txn *txn, struct gk_manifest *m, int *signed_out,
		  gk_error_t *err);
int gk_store_publish(const char *root, const char *tmpname, uint64_t sequence, unsigned keep,
		     gk_error_t *err);
int gk_store_publish_at(int rootfd, const char *root, const char *tmpname, uint64_t sequence,
			unsigned keep, gk_error_t *err);

/* Abandon a checkpoint being written: remove its .tmp directory. */
void gk_store_abort(struct gk_store_txn *txn);

struct gk_store_entry {
	char path[4096];
	uint64_t sequence;
	int complete; /* 0 for a .tmp directory left by a killed writer */
	int transparent; /* it holds GK_CRIU_DIR: restored by the shepherd, not the runtime */
	/* For incomplete ones: the writer named in the directory name, and
	 * whether prune would remove it (writer gone, or older than a day). */
	char writer_host[256];
	pid_t writer_pid;
	int stale;
	/* Filled by gk_store_prune_plan. */
	int remove;     /* prune removes it */
	int referenced; /* kept only because a kept checkpoint's data lies in it */
};

/* Committed checkpoints of ROOT, newest first, then incomplete ones
 * (*entries is malloc'ed; free() it). */
/* The name a writer of checkpoint `sequence` in this process uses for its
 * folder until it commits (".tmp.ckpt.N.HOST.PID"): what prune and list
 * know as one in progress, and gk_store_publish_at accepts. */
void gk_store_writer_name(uint64_t sequence, char *buf, size_t len);

int gk_store_list(const char *root, struct gk_store_entry **entries, size_t *n, gk_error_t *err);
int gk_store_list_at(int rootfd, const char *root, struct gk_store_entry **entries, size_t *n,
		     gk_error_t *err);

/*
 * What gk_store_prune removes from a listing of root (gk_store_list's, newest
 * first): committed checkpoints past the newest `keep`, except those that a
 * kept one refers to (gk_chain_needs); incomplete ones whose writer is gone.
 * Sets each entry's `remove` and `referenced`. A kept checkpoint whose
 * references cannot be read keeps every older one (with a warning): whatever
 * it needs stays.
 */
int gk_store_prune_plan(const char *root, struct gk_store_entry *entries, size_t n, unsigned keep,
			gk_error_t *err);
/* The same on an open root (root-run code: staging reads the references
 * through rootfd, never through a path). */
void gk_store_prune_plan_at(int rootfd, struct gk_store_entry *entries, size_t n, unsigned keep);

/* Keep the newest `keep` committed checkpoints and what they refer to; delete
 * the rest (renamed to .trash first so that a half-deleted checkpoint never
 * looks committed), and incomplete ones whose writer is gone. Returns how
 * many were removed.
 * A writer that is not root leaves transparent checkpoints in place with a
 * warning: their criu/ is root's, it could rename them but not delete them,
 * and the shepherd (root) prunes them itself. */
int gk_store_prune(const char *root, unsigned keep, gk_error_t *err);
int gk_store_prune_at(int rootfd, const char *root, unsigned keep, gk_error_t *err);

/* Delete the committed checkpoints numbered from..to (renamed to .trash
 * first, as prune does). Returns how many were removed. For a step's sets: a
 * member withdraws its ckpt.N when the set fell short elsewhere, and drops
 * what is older than the sets it keeps. */
int gk_store_remove(const char *root, uint64_t from, uint64_t to, gk_error_t *err);

#endif
