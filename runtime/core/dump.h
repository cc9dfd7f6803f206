/* dump.h - writing a checkpoint: quiesce, copy out, commit. */
#ifndef GK_DUMP_H
#define GK_DUMP_H

#include <cuda.h>
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

struct gk_store_txn;
struct gk_manifest;

/* The parts transparent mode uses: drain every device, and write the image
 * into a new .tmp checkpoint without committing it (see dump.c).
 * gk_dump_drain returns -ENOTRECOVERABLE, with the error in *broken and
 * nothing logged, when a context has a sticky error (gk_cu_broken): the
 * caller says so in its own words. */
int gk_dump_drain(CUresult *broken);
int gk_dump_image(long step, int device_data, struct gk_store_txn *txn, struct gk_manifest **mp,
		  uint64_t *bytes, char *err, size_t errlen);

#endif
