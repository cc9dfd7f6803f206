/*
 * fork_maps.h - keep the driver's device mappings out of forked children
 * (fork_maps.c), in transparent mode.
 */
#ifndef GK_FORK_MAPS_H
#define GK_FORK_MAPS_H

/* Registers, once, a fork handler that marks every mapping of a /dev/nvidia*
 * file MADV_DONTFORK before the process forks. */
void gk_fork_maps_guard(void);

#endif
