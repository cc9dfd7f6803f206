/*
 * flush.h - copying committed checkpoints to shared storage while the
 * program runs (flush.c says how and why).
 */
#ifndef GK_FLUSH_H
#define GK_FLUSH_H

/* A checkpoint was committed in GPUCKPT_DIR: wake the flush thread (started
 * on the first call) when GPUCKPT_FLUSH_DIR is set. Never blocks on I/O. */
void gk_flush_kick(void);

#endif
