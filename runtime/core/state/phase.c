/*
 * phase.c - the table of the concerns' phase hooks (phase.h).
 *
 * Filled at load time, before any thread of the runtime runs, and read by
 * whatever thread checkpoints: no lock.
 */
#include "config.h"

#include "core/state/phase.h"

#include <errno.h>
#include <string.h>

#define HOOKS_MAX 16

static struct {
	const struct gk_phase_hooks *h[HOOKS_MAX];
	unsigned n;
} T;

int gk_phase_register(const struct gk_phase_hooks *h)
{
	unsigned i;

	if (T.n == HOOKS_MAX)
		return -ENOSPC;
	for (i = T.n; i > 0 && T.h[i - 1]->order > h->order; i--)
		T.h[i] = T.h[i - 1];
	T.h[i] = h;
	T.n++;
	return 0;
}

void gk_phase_unregister(const struct gk_phase_hooks *h)
{
	for (unsigned i = 0; i < T.n; i++)
		if (T.h[i] == h) {
			memmove(&T.h[i], &T.h[i + 1], (T.n - i - 1) * sizeof(T.h[0]));
			T.n--;
			return;
		}
}

int gk_phase_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	v->why[0] = 0;
	v->word = NULL;
	for (unsigned i = 0; i < T.n; i++) {
		int ret;

		if (!T.h[i]->before)
			continue;
		ret = T.h[i]->before(phase, kind, v);
		if (ret < 0)
			return ret;
		v->why[0] = 0;
		v->word = NULL;
	}
	return 0;
}

void gk_phase_committed(void)
{
	for (unsigned i = 0; i < T.n; i++)
		if (T.h[i]->committed)
			T.h[i]->committed();
}

int gk_phase_restore_check(const char *dir, const struct gk_manifest *m, char *why, size_t len)
{
	for (unsigned i = 0; i < T.n; i++) {
		int ret;

		if (!T.h[i]->restore_check)
			continue;
		ret = T.h[i]->restore_check(dir, m, why, len);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int gk_phase_restored(char *why, size_t len)
{
	for (unsigned i = 0; i < T.n; i++) {
		int ret;

		if (!T.h[i]->restored)
			continue;
		ret = T.h[i]->restored(why, len);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void gk_phase_resumed(const char *ckpt)
{
	for (unsigned i = 0; i < T.n; i++)
		if (T.h[i]->resumed)
			T.h[i]->resumed(ckpt);
}

const char *gk_phase_name(enum gk_phase phase)
{
	static const char *const names[GK_PHASE_COUNT] = {
	    [GK_PHASE_ADMIT] = "admit",	      [GK_PHASE_FOLDER] = "folder",
	    [GK_PHASE_WRITER] = "writer",     [GK_PHASE_REFUSE] = "refuse",
	    [GK_PHASE_DRAIN] = "drain",	      [GK_PHASE_HOLD] = "hold",
	    [GK_PHASE_DESCRIBE] = "describe", [GK_PHASE_CHANGES] = "changes",
	    [GK_PHASE_LAYOUT] = "layout",     [GK_PHASE_SNAPSHOT] = "snapshot",
	    [GK_PHASE_WRITE] = "write",	      [GK_PHASE_COMMIT] = "commit",
	};

	return (unsigned)phase < GK_PHASE_COUNT ? names[phase] : "?";
}
