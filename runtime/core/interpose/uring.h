/*
 * uring.h - io_uring_setup answered with ENOSYS in processes a transparent
 * checkpoint may dump (uring.c says why).
 */
#ifndef GK_URING_H
#define GK_URING_H

/* From now on, io_uring_setup through syscall() fails with ENOSYS. */
void gk_uring_refuse(void);

#endif
