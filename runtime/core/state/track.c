/*
 * track.c - the registry of what the runtime cannot checkpoint (track.h):
 * counts and pointers, fed by the interposed entry points of track_hooks.c
 * and by placement (arena.c), read when a checkpoint is due.
 */
#include "config.h"

#include "core/state/track.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "core/state/phase.h"
#include "common/shepherd_protocol.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long live[GK_UNSUP_COUNT];
static const char *const what[GK_UNSUP_COUNT] = {
#define X(name, text) text,
	GK_UNSUPPORTED_LIST(X)
#undef X
};

/* Pointers of tracked kinds, so that a free can be matched to its kind.
 * These are rare objects; a short list is enough. */
struct tracked_ptr {
	enum gk_unsupported kind;
	unsigned long long ptr;
};
static struct tracked_ptr *ptrs;
static size_t nptrs, cap;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int nccl_made;

void gk_track_nccl_made(void)
{
	__atomic_store_n(&nccl_made, 1, __ATOMIC_RELAXED);
}

void gk_track(enum gk_unsupported kind, long delta)
{
	static int said[GK_UNSUP_COUNT];
	long now = __atomic_add_fetch(&live[kind], delta, __ATOMIC_RELAXED);

	/* Once per process: NCCL imports and releases memory with every
	 * communicator it makes, again after each checkpoint. */
	if (delta > 0 && now == delta && __atomic_exchange_n(&said[kind], 1, __ATOMIC_RELAXED))
		;
	else if (delta > 0 && now == delta && gk_track_nccl_kind(kind) &&
		 __atomic_load_n(&nccl_made, __ATOMIC_RELAXED))
		/* Not a warning: every DDP job would show one, and its
		 * checkpoints are not refused for it. A checkpoint that finds
		 * such memory left after the cut still refuses, naming it. */
		gk_info("track: this process now holds %s, as its NCCL communicators do: a "
			"transparent checkpoint takes them down first",
			what[kind]);
	else if (delta > 0 && now == delta && gk_track_app_ok(kind))
		gk_notice("track: this process now holds %s: transparent checkpoints will be "
			  "refused while it does",
			  what[kind]);
	else if (delta > 0 && now == delta)
		gk_warn("track: this process now holds %s: checkpoints will be refused while it "
			"does",
			what[kind]);
	if (now < 0)
		__atomic_store_n(&live[kind], 0, __ATOMIC_RELAXED);
}

void gk_track_multi_context(int device)
{
	static int seen[GK_MAX_DEVICES];

	if (device >= 0 && device < GK_MAX_DEVICES &&
	    !__atomic_exchange_n(&seen[device], 1, __ATOMIC_RELAXED))
		gk_track(GK_UNSUP_MULTI_CONTEXT, 1);
}

int gk_track_report(char *buf, size_t len)
{
	int n = 0;
	size_t used = 0;

	buf[0] = 0;
	for (int k = 0; k < GK_UNSUP_COUNT; k++) {
		long c = __atomic_load_n(&live[k], __ATOMIC_RELAXED);

		if (c <= 0 || gk_track_app_ok(k))
			continue;
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s (%ld)",
					 n ? "; " : "", what[k], c);
		n++;
		if (used >= len)
			break;
	}
	return n;
}

long gk_track_live(enum gk_unsupported kind)
{
	return __atomic_load_n(&live[kind], __ATOMIC_RELAXED);
}

int gk_track_driver_cannot(const char **word, char *buf, size_t len)
{
	static const struct {
		enum gk_unsupported kind;
		const char *word;
	} cannot[] = {
	    {GK_UNSUP_MANAGED, GK_PROTO_REFUSE_MANAGED},
	    {GK_UNSUP_MANAGED_VAR, GK_PROTO_REFUSE_MANAGED},
	    {GK_UNSUP_IPC_OPEN, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_IPC_EXPORT, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_IPC_IMPORT, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_POOL_IPC, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_VMM_IMPORT, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_VMM_EXPORT, GK_PROTO_REFUSE_IPC},
	};

	for (size_t i = 0; i < sizeof(cannot) / sizeof(cannot[0]); i++) {
		long c = gk_track_live(cannot[i].kind);

		if (c > 0) {
			*word = cannot[i].word;
			snprintf(buf, len, "%s (%ld)", what[cannot[i].kind], c);
			return 1;
		}
	}
	*word = NULL;
	buf[0] = 0;
	return 0;
}

void gk_track_ptr_add(enum gk_unsupported kind, unsigned long long ptr)
{
	pthread_mutex_lock(&lock);
	if (nptrs == cap) {
		size_t ncap = cap ? cap * 2 : 16;
		struct tracked_ptr *p = realloc(ptrs, ncap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&lock);
			gk_track(kind, 1); /* counted, never forgotten: safe side */
			return;
		}
		ptrs = p;
		cap = ncap;
	}
	ptrs[nptrs++] = (struct tracked_ptr){kind, ptr};
	pthread_mutex_unlock(&lock);
	gk_track(kind, 1);
}

int gk_track_ptr_remove(enum gk_unsupported kind, unsigned long long ptr)
{
	int found = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nptrs; i++) {
		if (ptrs[i].kind == kind && ptrs[i].ptr == ptr) {
			ptrs[i] = ptrs[--nptrs];
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (found)
		gk_track(kind, -1);
	return found;
}

/*
 * Tracking's part in a checkpoint (phase.h): refuse what cannot be saved -
 * by gpuckpt (application and set-member checkpoints) or by the driver's
 * checkpoint (transparent) - and, for a transparent checkpoint, say what
 * the runtime's own dump cannot hold, so that the driver copies device
 * memory instead.
 */
static int track_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	if (phase == GK_PHASE_REFUSE && kind == GK_CKPT_TRANSPARENT)
		return gk_track_driver_cannot(&v->word, v->why, sizeof(v->why)) ? -ENOTSUP : 0;
	if (phase == GK_PHASE_REFUSE || phase == GK_PHASE_HOLD)
		return gk_track_report(v->why, sizeof(v->why)) ? -ENOTSUP : 0;
	return 0;
}

static const struct gk_phase_hooks track_hooks = {
	.name = "track",
	.order = 30,
	.before = track_before,
};
GK_PHASE_HOOKS(track_hooks)
