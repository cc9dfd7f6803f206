/*
 * export.h - GK_EXPORT marks what a library of gpuckpt exports: libgpuckpt.so
 * and libgpuckpt-mpi are built with -fvisibility=hidden, so only what carries
 * this (the API and the interposed entry points) is seen by the program;
 * their version scripts (*.map) list it too.
 */
#ifndef GK_EXPORT_H
#define GK_EXPORT_H

#define GK_EXPORT __attribute__((visibility("default")))

#endif
