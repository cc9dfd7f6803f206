/* dump.h - writing a checkpoint: quiesce, copy out, commit. */
#ifndef GK_DUMP_H
#define GK_DUMP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Take a checkpoint now, labelled with the program's step. Holds every other
 * thread back at the driver, drains every stream of every context in use, writes
 * device memory and the registered host regions, commits. 0 on success; a
 * negative errno when no checkpoint was written (the reason is logged; the
 * previous checkpoints are untouched).
 */
int gk_dump(long step);

/* A member of a step's checkpoint set (runtime/image/setfile.h). */
struct gk_member {
	uint64_t sequence; /* the agreed N */
	uint64_t id;       /* the set's id */
	uint32_t members, member;
	const char *agreement;
};

/* gk_dump as a member of a set: under the agreed number, the set named in
 * the manifest, and nothing pruned: coord.c prunes or withdraws it once every
 * task has said whether it committed. */
int gk_dump_member(long step, const struct gk_member *mem);

struct gk_store_txn;
struct gk_manifest;

/* The parts transparent mode uses: drain every device, and write the image
 * into a new .tmp checkpoint without committing it (see dump.c). */
int gk_dump_drain(void);
int gk_dump_image(long step, int device_data, struct gk_store_txn *txn, struct gk_manifest **mp,
		  uint64_t *bytes, char *err, size_t errlen);

#endif
