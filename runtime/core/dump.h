/* dump.h - writing a checkpoint: quiesce, copy out, commit. */
#ifndef GK_DUMP_H
#define GK_DUMP_H

/*
 * Take a checkpoint now, labelled with the program's step. Holds every other
 * thread back at the driver, drains every stream of every context in use, writes
 * device memory and the registered host regions, commits. 0 on success; a
 * negative errno when no checkpoint was written (the reason is logged; the
 * previous checkpoints are untouched).
 */
int gk_dump(long step);

#endif
