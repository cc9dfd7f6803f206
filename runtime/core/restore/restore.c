#include "config.h"

#include "core/restore/restore.h"
#include "common/error.h"
#include "core/state/eventlog.h"
#include "common/clock.h"
#include "core/state/phase.h"
#include "core/state/regions.h"
#include "core/placement/arena.h"
#include "core/interpose/managed.h"
#include "core/interpose/vmm.h"
#include "core/interpose/ipc.h"
#include "core/control/coord.h"
#include "core/capture/baseline.h"
#include "core/driver/driver.h"
#include "core/control/dump.h"
#include "core/interpose/gate.h"
#include "image/image.h"
#include "common/io.h"
#include "common/log.h"
#include "core/interpose/peer.h"
#include "core/state/runtime.h"
#include "common/sizefmt.h"
#include "core/capture/transfer.h"
#include "image/ckptname.h"
#include "common/settings_env.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum state {
	R_NONE,      /* fresh start */
	R_PENDING,   /* chosen and verified, waiting for the first checkpoint point */
	R_LOADED,    /* this run resumed from it */
	R_ABANDONED, /* refused after setup began; the run goes on from the start */
	R_REFUSED,   /* refused, and the settings say fail */
};

static struct {
	enum state state;
	char dir[4096];
	struct gk_manifest *m;
	int error;
} R;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A member of the step's set the plugin chose (GPUCKPT_RESTORE_SET) must
 * say so itself: the set's id, the step's task count, this task's index. */
int gk_restore_check_set(const struct gk_manifest *m, gk_error_t *err)
{
	const struct gk_settings *s = &gk_rt.settings;

	if (!s->restore_set_given)
		return 0;
	if (!m->set_members) {
		gk_errprintf(err,
			     "it is not a member of a checkpoint set; set %016llx was asked for",
			     (unsigned long long)s->restore_set);
		return -EINVAL;
	}
	if (m->set_id != s->restore_set || m->set_members != s->step_tasks ||
	    m->set_member != s->task) {
		gk_errprintf(
		    err,
		    "it belongs to set %016llx as task %u of %u; this is task %u of %u, and set "
		    "%016llx was asked for",
		    (unsigned long long)m->set_id, m->set_member, m->set_members, s->task,
		    s->step_tasks, (unsigned long long)s->restore_set);
		return -EINVAL;
	}
	return 0;
}

/* The event log's line for this restore: N of the chosen ckpt.N, if any. */
static void log_restore(enum gk_event_result result, uint64_t bytes, double seconds, int err)
{
	const char *base = strrchr(R.dir, '/');
	char *end;
	unsigned long long seq = 0;
	int has = 0;

	base = base ? base + 1 : R.dir;
	if (strncmp(base, GK_CKPT_PREFIX, sizeof(GK_CKPT_PREFIX) - 1) == 0 &&
	    base[sizeof(GK_CKPT_PREFIX) - 1] >= '0' && base[sizeof(GK_CKPT_PREFIX) - 1] <= '9') {
		seq = strtoull(base + sizeof(GK_CKPT_PREFIX) - 1, &end, 10);
		has = *end == '\0';
	}
	gk_eventlog_restore(result, has, seq, bytes, seconds, err);
}


/*
 * The check of every checksum reads the whole checkpoint: started at the
 * first use of CUDA (or of the API), it runs while CUDA starts and the
 * program sets itself up, and is waited for only where its answer is needed
 * (the first allocation, gpuckpt_restarting(), the first checkpoint point).
 */
static struct {
	pthread_t tid;
	int started;  /* a thread is checking */
	int joined;
	int settled;  /* atomic: the answer is applied to R */
	int cancel;   /* atomic: the process is ending; stop */
	int ret;
	char dir[4096];
	struct gk_manifest *m;
	double t0, t1;
} C;

/* Full check of one checkpoint: owner, signature, format, every checksum
 * (unless it is another program's: it will not be loaded then). */
static int try_open(const char *dir, struct gk_manifest **m)
{
	char exe[1024];
	struct gk_load_opts opts = {
		.uid = getuid(),
		.require_signature = gk_rt.settings.require_signature,
		.check_data = 1,
		.exe = exe,
		.cancel = &C.cancel,
	};
	gk_error_t err;
	int is_signed = 0, ret;

	gk_program_exe(exe, sizeof(exe));
	ret = gk_image_open(dir, &opts, m, &is_signed, &err);
	if (ret == -ESRCH) {
		/* Another CUDA process of the task (a preparation step, a tool):
		 * the checkpoint is not its to load, nor to check. */
		gk_info("restore: %s: taken by another program (%s); this process starts fresh",
			dir, err.text);
		return 2;
	}
	if (ret == -ECANCELED)
		return ret;
	if (ret < 0) {
		gk_error("restore: %s: refused: %s", dir, err.text);
		return ret;
	}
	ret = gk_restore_check_set(*m, &err);
	if (ret < 0) {
		gk_error("restore: %s: refused: %s", dir, err.text);
		gk_manifest_free(*m);
		*m = NULL;
		return ret;
	}
	if (!is_signed)
		gk_warn("restore: %s: the checkpoint is not signed (munged was not reachable when "
			"it was written); accepted because it belongs to you",
			dir);
	return 0;
}

static int choose(char *chosen, size_t len, struct gk_manifest **m)
{
	const char *want = gk_rt.settings.restore;
	struct gk_store_entry *e = NULL;
	size_t n = 0;
	gk_error_t err;
	int ret, tried = 0;

	if (strcmp(want, "auto") != 0) {
		snprintf(chosen, len, "%s", want);
		return try_open(want, m);
	}
	if (!gk_rt.settings.dir[0]) {
		gk_error("restore: " GK_ENV(RESTORE) "=auto needs " GK_ENV(DIR));
		return -EINVAL;
	}
	ret = gk_store_list(gk_rt.settings.dir, &e, &n, &err);
	if (ret < 0) {
		if (ret == -ENOENT)
			return 1;
		gk_error("restore: %s: %s", gk_rt.settings.dir, err.text);
		return ret;
	}
	ret = 1; /* nothing committed yet: a first run */
	for (size_t i = 0; i < n; i++) {
		/* A transparent checkpoint is a whole process: the shepherd
		 * restores it, never a fresh run of the program. */
		if (!e[i].complete || e[i].transparent)
			continue;
		if (__atomic_load_n(&C.cancel, __ATOMIC_ACQUIRE))
			break;
		if (tried)
			gk_warn("restore: trying the previous checkpoint, %s", e[i].path);
		tried = 1;
		ret = try_open(e[i].path, m);
		if (ret == 0) {
			snprintf(chosen, len, "%s", e[i].path);
			break;
		}
		if (ret == 2)
			break;
	}
	free(e);
	return ret;
}

static void *check_thread(void *arg)
{
	(void)arg;
	gk_driver_relax();
	C.ret = choose(C.dir, sizeof(C.dir), &C.m);
	C.t1 = gk_now();
	return NULL;
}

static void forget_check_in_child(void)
{
	/* The checking thread did not come along: the child checks itself. */
	if (!__atomic_load_n(&C.settled, __ATOMIC_ACQUIRE)) {
		C.started = 0;
		C.joined = 0;
		C.m = NULL;
	}
	pthread_mutex_init(&lock, NULL);
}

/* A process that ends while its check runs (a wrapper script, a tool, a
 * program that fails early) stops the check and waits for the thread: it
 * must not be inside libcrypto or json-c while exit() tears them down. */
static void stop_check_at_exit(void)
{
	__atomic_store_n(&C.cancel, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&lock);
	if (C.started && !C.joined) {
		pthread_join(C.tid, NULL);
		C.joined = 1;
	}
	pthread_mutex_unlock(&lock);
}

void gk_restore_begin(void)
{
	sigset_t all, old;
	char hex[65];

	if (!gk_rt.settings.restore[0] || C.started)
		return;
	pthread_atfork(NULL, NULL, forget_check_in_child);
	/* libcrypto registers its cleanup with atexit() when it first sets
	 * itself up; atexit handlers run newest first, so it is set up here,
	 * before ours is registered (one digest). */
	gk_sha256_hex("", 0, hex);
	atexit(stop_check_at_exit);
	C.t0 = gk_now();
	/* The runtime's threads never take the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	C.started = pthread_create(&C.tid, NULL, check_thread, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Apply the check's answer (waiting for it, or making it here). */
static void settle_locked(void)
{
	struct gk_manifest *m;
	double waited = gk_now();
	int ret;

	if (__atomic_load_n(&C.settled, __ATOMIC_ACQUIRE) || !gk_rt.settings.restore[0])
		return;
	if (C.started && !C.joined) {
		pthread_join(C.tid, NULL);
		C.joined = 1;
	} else if (!C.started) {
		C.t0 = gk_now();
		C.ret = choose(C.dir, sizeof(C.dir), &C.m);
		C.t1 = gk_now();
	}
	waited = gk_now() - waited;
	ret = C.ret;
	m = C.m;
	C.m = NULL;
	snprintf(R.dir, sizeof(R.dir), "%s", C.dir);
	if (ret == 1) {
		gk_info("restore: %s: no checkpoint yet; starting from the beginning",
			gk_rt.settings.dir);
	} else if ((ret < 0 || ret == 2) && gk_rt.settings.restore_set_given) {
		/* The other tasks of the step restore this set: starting afresh
		 * here would run this task at another step than theirs. */
		gk_error("restore: %s: this task's part of set %016llx cannot be restored; the task "
			 "stops (a fresh start of one task would mix steps; the step's plan was to "
			 "restore the set in every task)",
			 R.dir, (unsigned long long)gk_rt.settings.restore_set);
		fflush(NULL);
		_exit(EXIT_FAILURE);
	} else if (ret == 2) {
		/* Another program's: said by try_open; this one starts fresh. */
	} else if (ret < 0) {
		if (gk_rt.settings.restore_fresh_on_bad) {
			gk_warn("restore: no usable checkpoint; starting from the beginning "
				"(" GK_ENV(ON_BAD_CHECKPOINT) "=fresh)");
		} else {
			gk_error("restore: no usable checkpoint; refusing to start from the "
				 "beginning (" GK_ENV(ON_BAD_CHECKPOINT) "=fail; "
				 "set it to 'fresh' to start over instead)");
			R.state = R_REFUSED;
			R.error = ret;
		}
		log_restore(GK_EV_REFUSED, 0, 0, ret);
	} else {
		R.m = m;
		R.state = R_PENDING;
		__atomic_or_fetch(&gk_rt.due, GK_DUE_RESTORE, __ATOMIC_RELEASE);
		/* Every checksum is checked before the program goes on, so that a
		 * damaged newest checkpoint falls back to the one before rather
		 * than failing half-way through the load. */
		gk_info("restore: %s: verified in %.3f s (step %lld, %zu allocations), the program "
			"waiting %.3f s of it; it will be loaded at the first checkpoint point",
			R.dir, C.t1 - C.t0, (long long)m->step, m->nallocs, waited);
	}
	__atomic_store_n(&C.settled, 1, __ATOMIC_RELEASE);
}

void gk_restore_prepare(void)
{
	if (__atomic_load_n(&C.settled, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&lock);
	settle_locked();
	pthread_mutex_unlock(&lock);
}

int gk_restore_active(long *step)
{
	int active;

	gk_restore_prepare();
	active = R.state == R_PENDING || R.state == R_LOADED;

	if (active && step)
		*step = (long)R.m->step;
	return active;
}

int gk_restore_refused(void)
{
	gk_restore_prepare();
	return R.state == R_REFUSED ? R.error : 0;
}

static const struct gk_device_rec *device_rec(int ordinal)
{
	if (R.state != R_PENDING)
		return NULL;
	for (size_t i = 0; i < R.m->ndevices; i++)
		if (R.m->devices[i].ordinal == ordinal)
			return &R.m->devices[i];
	return NULL;
}

/* The seeder (arena.h) restore hands placement: gk_restore_seed_arenas. */
static int seed_slice(int ordinal, uint64_t *base, uint64_t *size)
{
	const struct gk_device_rec *d;

	gk_restore_prepare();
	d = device_rec(ordinal);

	if (!d)
		return 0;
	*base = d->va_base;
	*size = d->va_size;
	return 1;
}

static enum gk_kind kind_of(const char *kind)
{
	if (!strcmp(kind, "pitch"))
		return GK_KIND_PITCH;
	if (!strcmp(kind, "async"))
		return GK_KIND_ASYNC;
	return GK_KIND_ALLOC;
}

static int seed_populate(struct gk_arena *a)
{
	const struct gk_device_rec *d = device_rec(a->ordinal);
	struct gk_device_info info;
	size_t free_mem = 0, total = 0, n = 0;
	char have[32], need[32];
	uint64_t bytes = 0;
	double t0;

	if (!d)
		return 0;
	gk_device_info(a->dev, &info);
	/* The checkpoint's memory must fit beside what the driver holds already;
	 * better to say so now than to fail half-way through the program's setup. */
	if (gk_real.cuMemGetInfo_v2(&free_mem, &total) == CUDA_SUCCESS &&
	    free_mem < d->mapped_bytes) {
		gk_size_format(have, sizeof(have), free_mem, GK_SIZE_MIB);
		gk_size_format(need, sizeof(need), d->mapped_bytes, GK_SIZE_MIB);
		gk_error("restore: %s: device %d (%s, %s) has %s free; the checkpoint needs %s", R.dir,
			 a->ordinal, info.name, info.uuid, have, need);
		return -ENOMEM;
	}
	if (strcmp(info.uuid, d->uuid) != 0)
		gk_info("restore: device %d is now %s (%s); the checkpoint was taken on %s (%s)",
			a->ordinal, info.name, info.uuid, d->name, d->uuid);
	/* Granted before the memory is mapped, so that arena.c grants it too. */
	if (d->peer_access && gk_peer_restore(a->ordinal, d->peer_access, R.dir) < 0)
		return -EXDEV;
	/* The load's staging buffers are pinned in the background meanwhile. */
	gk_dump_prepare_in(a->ctx);
	t0 = gk_now();
	for (size_t i = 0; i < R.m->nallocs; i++) {
		const struct gk_alloc_rec *r = &R.m->allocs[i];
		int ret;

		/* Mapped by the program itself, which maps it again (vmm.c). */
		if (r->device != a->ordinal || !strcmp(r->kind, GK_KIND_VMM))
			continue;
		ret = gk_arena_recreate(a, r->address, r->size, r->order, kind_of(r->kind));
		if (ret < 0) {
			gk_error("restore: %s: cannot recreate allocation %zu (0x%llx, %llu bytes) on "
				 "device %d: %s",
				 R.dir, i, (unsigned long long)r->address,
				 (unsigned long long)r->size, a->ordinal, strerror(-ret));
			return ret;
		}
		n++;
		bytes += r->size;
	}
	gk_info("restore: device %d: %zu allocations (%.2f GiB) recreated in %.3f s", a->ordinal, n,
		bytes / 1073741824.0, gk_now() - t0);
	return 0;
}

static void abandon_locked(const char *why)
{
	if (R.state != R_PENDING)
		return;
	R.state = R_ABANDONED;
	log_restore(GK_EV_FAILED, 0, 0, ECANCELED);
	__atomic_and_fetch(&gk_rt.due, ~GK_DUE_RESTORE, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&gk_rt.aware, __ATOMIC_ACQUIRE)) {
		/* Not (yet) using the gpuckpt API: maybe not the program that was
		 * checkpointed at all. It must not be stopped for that. */
		gk_info("restore: %s: not restored in this process: %s; it starts from the "
			"beginning",
			R.dir, why);
		return;
	}
	if (gk_rt.settings.restore_fresh_on_bad && !gk_rt.settings.restore_set_given) {
		gk_warn("restore: %s: not restored: %s; the program goes on from the beginning "
			"(" GK_ENV(ON_BAD_CHECKPOINT) "=fresh)",
			R.dir, why);
		return;
	}
	gk_error("restore: %s: not restored: %s; stopping, since the program has started over "
		 "(%s)",
		 R.dir, why,
		 gk_rt.settings.restore_set_given
			 ? "a member of a set never starts afresh alone: the step's other tasks restore it"
			 : GK_ENV(ON_BAD_CHECKPOINT) "=fail");
	fflush(NULL);
	_exit(EXIT_FAILURE);
}

static void seed_abandon(const char *why)
{
	pthread_mutex_lock(&lock);
	settle_locked();
	abandon_locked(why);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (gk_arenas[i])
			gk_arena_drop_unclaimed(gk_arenas[i]);
}

static const struct gk_arena_seeder seeder = {
	.slice = seed_slice,
	.populate = seed_populate,
	.abandon = seed_abandon,
};

/* The restorer (vmm.h): the reservations the program mapped into. */
static const struct gk_manifest *vmm_pending(void)
{
	gk_restore_prepare();
	return R.state == R_PENDING ? R.m : NULL;
}

static const struct gk_vmm_restorer vmm_restorer = {
	.pending = vmm_pending,
	.abandon = seed_abandon,
};

void gk_restore_seed_arenas(void)
{
	gk_arena_set_seeder(&seeder);
	gk_vmm_set_restorer(&vmm_restorer);
	gk_managed_set_restorer(&vmm_restorer);
}

static const struct gk_region *find_region(const char *name)
{
	for (size_t i = 0; i < gk_nregions; i++)
		if (!strcmp(gk_regions[i].name, name))
			return &gk_regions[i];
	return NULL;
}

/* Everything checked before anything is written: the registered regions must
 * be those of the checkpoint, and every device of it in use again. */
int gk_restore_check_ready(const struct gk_manifest *m, char *why, size_t len)
{
	for (size_t i = 0; i < m->nregions; i++) {
		const struct gk_region_rec *r = &m->regions[i];
		const struct gk_region *g = find_region(r->name);

		if (!g && !strncmp(r->name, "gpuckpt.managed.", 16)) {
			snprintf(why, len, "managed allocation %s of the checkpoint (order.address) "
				 "was not made again by this run before its first checkpoint point",
				 r->name + 16);
			return -EINVAL;
		}
		if (!g) {
			snprintf(why, len, "host region '%s' is in the checkpoint but not registered "
				 "by this run (gpuckpt_protect it before the first checkpoint point)",
				 r->name);
			return -EINVAL;
		}
		if (g->size != r->size) {
			snprintf(why, len, "host region '%s' is %zu bytes now and %llu bytes in the "
				 "checkpoint", r->name, g->size, (unsigned long long)r->size);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < m->ndevices; i++) {
		if (m->devices[i].ordinal < 0 || m->devices[i].ordinal >= GK_MAX_DEVICES) {
			snprintf(why, len, "the checkpoint names device %d; gpuckpt handles %d",
				 m->devices[i].ordinal, GK_MAX_DEVICES);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < m->nallocs; i++) {
		int o = m->allocs[i].device;

		/* A device listed without allocations needs nothing loaded. */
		if (o < 0 || o >= GK_MAX_DEVICES || !gk_arenas[o] || !gk_arenas[o]->ctx) {
			snprintf(why, len, "the checkpoint holds memory of device %d, which this run "
				 "has not allocated on before its first checkpoint point", o);
			return -EINVAL;
		}
	}
	if (gk_vmm_check_restored(m, why, len) < 0)
		return -EINVAL;
	return gk_ipc_check_restored(m, why, len);
}

/* Read and check every host region first, then copy them all in. */
static int load_regions(const char *dir, gk_error_t *err)
{
	char path[4200];
	void **bufs;
	int fd = -1, ret = 0;
	uint64_t chunk = R.m->chunk_size;

	if (!R.m->nregions)
		return 0;
	bufs = calloc(R.m->nregions, sizeof(*bufs));
	if (!bufs)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%s", dir, GK_HOST_DATA_FILE);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", GK_HOST_DATA_FILE, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < R.m->nregions; i++) {
		const struct gk_region_rec *r = &R.m->regions[i];

		bufs[i] = malloc(r->size ? r->size : 1);
		if (!bufs[i]) {
			ret = -ENOMEM;
			goto out;
		}
		ret = gk_pread_all(fd, bufs[i], r->size, r->offset);
		if (ret < 0) {
			gk_errprintf(err, "%s: cannot read host region '%s'", GK_HOST_DATA_FILE,
				     r->name);
			goto out;
		}
		for (uint32_t c = 0; c < r->nchunks; c++) {
			uint64_t s = (uint64_t)c * chunk, l = r->size - s < chunk ? r->size - s : chunk;

			if (gk_sum(gk_sum_algo_of(R.m->version), (char *)bufs[i] + s, l) !=
			    r->chunks[c].sum) {
				ret = -EBADMSG;
				gk_errprintf(err, "%s: checksum mismatch in host region '%s'",
					     GK_HOST_DATA_FILE, r->name);
				goto out;
			}
		}
	}
	pthread_mutex_lock(&gk_regions_lock);
	for (size_t i = 0; i < R.m->nregions; i++) {
		const struct gk_region *g = find_region(R.m->regions[i].name);

		memcpy(g->addr, bufs[i], R.m->regions[i].size);
	}
	pthread_mutex_unlock(&gk_regions_lock);
out:
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < R.m->nregions; i++)
		free(bufs[i]);
	free(bufs);
	return ret;
}

/* How many data files the load of m opens: its own and its references'. */
static size_t file_count(const struct gk_manifest *m)
{
	size_t n = m->nfiles;

	for (size_t i = 0; i < m->nrefs; i++)
		n += m->refs[i].nfiles;
	return n;
}

/* The slot of (sequence, name) in the file table: m's own files first, then
 * each reference's in order; -1 if not listed. */
static long file_slot(const struct gk_manifest *m, uint64_t sequence, const char *name)
{
	size_t base = m->nfiles;

	if (!sequence) {
		for (size_t f = 0; f < m->nfiles; f++)
			if (!strcmp(m->files[f].name, name))
				return (long)f;
		return -1;
	}
	for (size_t r = 0; r < m->nrefs; r++) {
		if (m->refs[r].sequence == sequence)
			for (size_t f = 0; f < m->refs[r].nfiles; f++)
				if (!strcmp(m->refs[r].files[f].name, name))
					return (long)(base + f);
		base += m->refs[r].nfiles;
	}
	return -1;
}

/* dir/name, or for a part in another checkpoint ROOT/ckpt.N/name (ROOT being
 * the folder that holds dir). */
static void part_path(char *path, size_t len, const char *dir, uint64_t sequence, const char *name)
{
	const char *slash;
	size_t n = strlen(dir);

	if (!sequence) {
		snprintf(path, len, "%s/%s", dir, name);
		return;
	}
	while (n > 1 && dir[n - 1] == '/')
		n--;
	slash = memrchr(dir, '/', n);
	if (!slash)
		snprintf(path, len, GK_CKPT_FMT "/%s", (uint64_t)sequence, name);
	else
		snprintf(path, len, "%.*s/" GK_CKPT_FMT "/%s", (int)(slash - dir), dir,
			 (uint64_t)sequence, name);
}

int gk_restore_items(const char *dir, const struct gk_manifest *m, struct gk_xfer_item **out,
		     size_t *nitems, int **fds_out, uint64_t *bytes, gk_error_t *err)
{
	char path[8400];
	struct gk_xfer_item *items;
	size_t n = 0, k = 0, nfds = file_count(m);
	int *fds = malloc((nfds ? nfds : 1) * sizeof(*fds));
	int ret = 0;

	for (size_t i = 0; i < m->nallocs; i++)
		n += m->allocs[i].nparts;
	items = calloc(n ? n : 1, sizeof(*items));
	*out = NULL;
	*nitems = 0;
	*fds_out = NULL;
	if (!items || !fds) {
		gk_errprintf(err, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (size_t f = 0; f < nfds; f++)
		fds[f] = -1;
	for (size_t i = 0; i < m->nallocs; i++) {
		const struct gk_alloc_rec *r = &m->allocs[i];

		for (uint32_t p = 0; p < r->nparts; p++) {
			const struct gk_part *part = &r->parts[p];
			long f;

			if (part->zero) {
				/* Held by no file: set to zero on the device. */
				items[k++] = (struct gk_xfer_item){
				    .ctx = gk_arenas[r->device]->ctx,
				    .dev_addr = r->address + part->start,
				    .size = part->size,
				    .fd = -1,
				    .chunks = r->chunks + part->start / m->chunk_size,
				    .file = "(zeros)",
				    .index = i,
				    .algo = gk_sum_algo_of(m->version),
				    .zero = 1,
				};
				continue;
			}
			f = file_slot(m, part->sequence, part->file);
			if (f < 0) {
				gk_errprintf(err, "allocation %zu: its file %s is not listed", i,
					     part->file);
				ret = -EBADMSG;
				goto out;
			}
			if (fds[f] < 0) {
				part_path(path, sizeof(path), dir, part->sequence, part->file);
				fds[f] = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
				if (fds[f] < 0) {
					ret = -errno;
					gk_errprintf(err, "%s: %s", path, strerror(-ret));
					goto out;
				}
			}
			items[k++] = (struct gk_xfer_item){
			    .ctx = gk_arenas[r->device]->ctx,
			    .dev_addr = r->address + part->start,
			    .size = part->size,
			    .fd = fds[f],
			    .file_offset = part->offset,
			    .chunks = r->chunks + part->start / m->chunk_size,
			    .file = part->file,
			    .index = i,
			    .algo = gk_sum_algo_of(m->version),
			};
		}
		*bytes += r->size;
	}
out:
	if (ret < 0) {
		gk_restore_items_free(m, items, fds);
		return ret;
	}
	*out = items;
	*nitems = k;
	*fds_out = fds;
	return 0;
}

void gk_restore_items_free(const struct gk_manifest *m, struct gk_xfer_item *items, int *fds)
{
	size_t nfds = file_count(m);

	for (size_t f = 0; fds && f < nfds; f++)
		if (fds[f] >= 0)
			close(fds[f]);
	free(fds);
	free(items);
}

int gk_restore_load(void)
{
	char why[1024];
	gk_error_t err;
	struct gk_xfer_item *items = NULL;
	size_t nitems = 0;
	int *fds = NULL, ret;
	uint64_t bytes = 0;
	double t0 = gk_now();

	pthread_mutex_lock(&lock);
	settle_locked();
	if (R.state != R_PENDING) {
		pthread_mutex_unlock(&lock);
		return -ENOENT;
	}
	pthread_mutex_lock(&gk_regions_lock);
	ret = gk_restore_check_ready(R.m, why, sizeof(why));
	pthread_mutex_unlock(&gk_regions_lock);
	/* The concerns that keep state of their own (opencl.c) check theirs. */
	if (ret == 0)
		ret = gk_phase_restore_check(R.dir, R.m, why, sizeof(why));
	if (ret < 0) {
		abandon_locked(why);
		pthread_mutex_unlock(&lock);
		for (int i = 0; i < GK_MAX_DEVICES; i++)
			if (gk_arenas[i])
				gk_arena_drop_unclaimed(gk_arenas[i]);
		return ret;
	}
	ret = gk_restore_items(R.dir, R.m, &items, &nitems, &fds, &bytes, &err);
	if (ret == -ENOMEM) {
		pthread_mutex_unlock(&lock);
		return ret;
	}
	if (ret < 0)
		goto fatal;
	if (gk_gate_close(NULL, NULL))
		gk_warn("restore: %s: a CUDA stream capture of the program stayed open; loading "
			"device memory now invalidates it",
			R.dir);
	for (size_t i = 0; i < R.m->ndevices; i++) {
		struct gk_arena *a = gk_arenas[R.m->devices[i].ordinal];

		if (!a || !a->ctx)
			continue;
		if (gk_real.cuCtxPushCurrent_v2(a->ctx) == CUDA_SUCCESS) {
			gk_real.cuCtxSynchronize();
			gk_real.cuCtxPopCurrent_v2(NULL);
		}
	}
	ret = gk_xfer_load(items, nitems, R.m->chunk_size, gk_rt.settings.writers, &err);
	if (ret == 0)
		ret = load_regions(R.dir, &err);
	if (ret == 0 && gk_phase_restored(why, sizeof(why)) < 0) {
		gk_errprintf(&err, "%s", why);
		ret = -EIO;
	}
	gk_gate_open();
	if (ret < 0)
		goto fatal;
	for (size_t i = 0; i < R.m->ndevices; i++)
		if (gk_arenas[R.m->devices[i].ordinal])
			gk_arena_restore_done(gk_arenas[R.m->devices[i].ordinal],
					      R.m->devices[i].next_order);
	for (size_t i = 0; i < R.m->nregions; i++)
		bytes += R.m->regions[i].size;
	R.state = R_LOADED;
	gk_coord_restored_from(R.m);
	/* The memory now holds exactly this checkpoint: the next one can be an
	 * increment of it. */
	gk_baseline_restored(R.dir, R.m->sequence);
	if (R.m->ndevices && gk_arenas[R.m->devices[0].ordinal]) {
		struct gk_device_info info;

		gk_device_info(gk_arenas[R.m->devices[0].ordinal]->dev, &info);
		gk_notice("restore: %s: loaded %llu bytes in %.3f s; resuming at step %lld on device "
			"%d (%s, %s)",
			R.dir, (unsigned long long)bytes, gk_now() - t0, (long long)R.m->step,
			R.m->devices[0].ordinal, info.name, info.uuid);
	} else {
		gk_notice("restore: %s: loaded %llu bytes of host state; resuming at step %lld",
			R.dir, (unsigned long long)bytes, (long long)R.m->step);
	}
	gk_restore_items_free(R.m, items, fds);
	log_restore(GK_EV_OK, bytes, gk_now() - t0, 0);
	pthread_mutex_unlock(&lock);
	return 0;
fatal:
	/* Some of the device memory may already hold checkpoint data and the rest
	 * the program's setup: a state that exists in neither run. Never go on. */
	gk_error("restore: %s: loading failed half-way: %s; stopping the program rather than "
		 "letting it run on half-restored state",
		 R.dir, err.text);
	log_restore(GK_EV_FAILED, 0, 0, ret < 0 ? ret : -EIO);
	fflush(NULL);
	_exit(EXIT_FAILURE);
}
