/*
 * testhook.h - pauses for tests at the points where a race once let a user
 * change what root was about to use (tests/security/). A test arms one point
 * with an option of a root-only program (--test-hook POINT:DIR, never the
 * environment: only root can give it), and acts while the program waits
 * there; so the race is not left to chance. DIR must be a folder only root
 * can change (gk_open_trusted_dir): the program writes DIR/POINT.reached and
 * goes on when root makes DIR/POINT.go (or after two minutes).
 */
#ifndef GK_TESTHOOK_H
#define GK_TESTHOOK_H

#include "common/error.h"

#include <stddef.h>

/* Arm "POINT:DIR" (POINT names have no ':'). -EINVAL or -EPERM with err
 * naming what is wrong. */
int gk_test_hook_arm(const char *spec, gk_error_t *err);

/* Wait at `point` if it is the armed one (once). */
void gk_test_hook(const char *point);

#endif
