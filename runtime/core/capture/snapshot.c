#include "config.h"

#include "core/capture/snapshot.h"
#include "common/error.h"
#include "core/placement/arena.h"
#include "common/clock.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "core/placement/numa.h"
#include "core/state/runtime.h"
#include "common/sizefmt.h"
#include "common/settings_env.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Pinned in steps of this much: a step is a unit of growth (so that a
 * checkpoint waiting for the growth to stop waits for one step at most), and
 * of copying (no copy crosses two). */
#define STEP (256ull << 20)
#define MAX_STEPS 4096

struct step {
	void *p;
	uint64_t size;
	CUcontext pinned_in; /* NULL: unpinned (its context went) */
};

static struct {
	pthread_mutex_t lock;
	struct step steps[MAX_STEPS];
	size_t nsteps;
	uint64_t pinned;
	int stop; /* atomic: stop growing */
	int budget_known;
	uint64_t budget;
	char how[160];
	/* a stream per context the copies run in */
	struct {
		CUcontext ctx;
		CUstream s;
	} streams[GK_MAX_DEVICES];
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- the budget ---- */

/* MemAvailable from /proc/meminfo, in bytes (0 if unknown). */
static uint64_t mem_available(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64];
	unsigned long long n;
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%llu", &n) == 1;
	fclose(f);
	if (!ok)
		return -1; /* "max": no limit */
	*v = n;
	return 0;
}

/* What the job's cgroup (v2) still allows: memory.max - memory.current of
 * the process's own cgroup (Slurm's job or step cgroup); 0 if unlimited or
 * unknown. Pinned memory counts against it like any other. */
static uint64_t cgroup_room(void)
{
	char line[4096], path[4200];
	uint64_t max, cur;
	FILE *f = fopen("/proc/self/cgroup", "re");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			found = 1;
			break;
		}
	fclose(f);
	if (!found)
		return 0;
	snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", line + 3);
	if (read_u64(path, &max) < 0)
		return 0;
	snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.current", line + 3);
	if (read_u64(path, &cur) < 0)
		return 0;
	return max > cur ? max - cur : 1;
}

/* How many tasks of the step run on this node: SLURM_STEP_TASKS_PER_NODE
 * ("2(x3),1": two on each of the first three nodes, one on the fourth) at
 * SLURM_NODEID; 1 outside Slurm. */
static unsigned local_tasks(void)
{
	const char *list = getenv("SLURM_STEP_TASKS_PER_NODE"), *id = getenv("SLURM_NODEID");
	long node = id ? atol(id) : 0;
	const char *p = list;

	if (!list)
		list = p = getenv("SLURM_TASKS_PER_NODE");
	if (!p || node < 0)
		return 1;
	while (*p) {
		char *end;
		unsigned long tasks = strtoul(p, &end, 10), times = 1;

		if (end == p)
			return 1;
		p = end;
		if (!strncmp(p, "(x", 2)) {
			times = strtoul(p + 2, &end, 10);
			if (end == p + 2 || *end != ')')
				return 1;
			p = end + 1;
		}
		if ((unsigned long)node < times)
			return tasks ? (unsigned)tasks : 1;
		node -= (long)times;
		if (*p == ',')
			p++;
		else if (*p)
			return 1;
	}
	return 1;
}

uint64_t gk_snapshot_budget(const char **how)
{
	const struct gk_settings *s = &gk_rt.settings;

	pthread_mutex_lock(&S.lock);
	if (!S.budget_known) {
		uint64_t avail = mem_available(), room = cgroup_room();
		unsigned tasks = local_tasks();
		char a[32], b[32];

		if (room && room < avail)
			avail = room;
		gk_size_format(a, sizeof(a), avail, GK_SIZE_GIB);
		switch (s->snapshot_mode) {
		case GK_SNAPSHOT_OFF:
			S.budget = 0;
			snprintf(S.how, sizeof(S.how), GK_ENV(SNAPSHOT_MEMORY) "=off");
			break;
		case GK_SNAPSHOT_BYTES:
			S.budget = s->snapshot_bytes;
			gk_size_format(b, sizeof(b), S.budget, GK_SIZE_GIB);
			snprintf(S.how, sizeof(S.how), GK_ENV(SNAPSHOT_MEMORY) "=%s", b);
			break;
		case GK_SNAPSHOT_PERCENT:
			S.budget = avail / 100 * s->snapshot_percent;
			gk_size_format(b, sizeof(b), S.budget, GK_SIZE_GIB);
			snprintf(S.how, sizeof(S.how), "%s: %u%% of the %s available",
				 b, s->snapshot_percent, a);
			break;
		default:
			S.budget = avail / 2 / tasks;
			gk_size_format(b, sizeof(b), S.budget, GK_SIZE_GIB);
			snprintf(S.how, sizeof(S.how),
				 "%s: half of the %s available, shared by %u task%s on the node", b,
				 a, tasks, tasks == 1 ? "" : "s");
			break;
		}
		S.budget_known = 1;
	}
	if (how)
		*how = S.how;
	pthread_mutex_unlock(&S.lock);
	return S.budget;
}

uint64_t gk_snapshot_pinned(void)
{
	return __atomic_load_n(&S.pinned, __ATOMIC_ACQUIRE);
}

/* ---- pinning ---- */

static void release_step(struct step *st)
{
	if (st->pinned_in) {
		if (gk_real.cuCtxPushCurrent_v2(st->pinned_in) == CUDA_SUCCESS) {
			gk_real.cuMemHostUnregister(st->p);
			gk_real.cuCtxPopCurrent_v2(NULL);
		}
	}
	munmap(st->p, st->size);
	memset(st, 0, sizeof(*st));
}

int gk_snapshot_grow(uint64_t target, CUcontext ctx)
{
	uint64_t budget = gk_snapshot_budget(NULL), have;
	double t0 = gk_now();
	int ret = 0, grew = 0;
	CUdevice dev;

	if (target > budget)
		target = budget;
	__atomic_store_n(&S.stop, 0, __ATOMIC_RELEASE);
	if (gk_real.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return -EIO;
	/* The pages land where this thread runs: near the GPU. */
	if (gk_real.cuCtxGetDevice(&dev) == CUDA_SUCCESS)
		gk_numa_bind_near(dev);
	for (;;) {
		struct step st = {0};
		CUresult r;

		pthread_mutex_lock(&S.lock);
		have = S.pinned;
		pthread_mutex_unlock(&S.lock);
		if (have >= target || __atomic_load_n(&S.stop, __ATOMIC_ACQUIRE))
			break;
		if (S.nsteps == MAX_STEPS) {
			ret = -ENOSPC;
			break;
		}
		st.size = target - have < STEP ? (target - have + 4095) & ~4095ull : STEP;
		/* MAP_POPULATE: the pages exist before the driver pins them. */
		st.p = mmap(NULL, st.size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (st.p == MAP_FAILED) {
			ret = -ENOMEM;
			break;
		}
		r = gk_real.cuMemHostRegister_v2(st.p, st.size, CU_MEMHOSTREGISTER_PORTABLE);
		if (r != CUDA_SUCCESS) {
			munmap(st.p, st.size);
			gk_warn("checkpoint: cannot pin more host memory for snapshots (%.1f GiB "
				"pinned): %s",
				have / 1073741824.0, gk_cu_name(r));
			ret = r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
			break;
		}
		st.pinned_in = ctx;
		pthread_mutex_lock(&S.lock);
		S.steps[S.nsteps++] = st;
		__atomic_store_n(&S.pinned, S.pinned + st.size, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&S.lock);
		grew = 1;
	}
	if (grew)
		gk_info("checkpoint: %.2f GiB of host memory pinned for snapshots (%.2f s)",
			gk_snapshot_pinned() / 1073741824.0, gk_now() - t0);
	return grew ? 0 : ret;
}

void gk_snapshot_stop_growing(void)
{
	__atomic_store_n(&S.stop, 1, __ATOMIC_RELEASE);
}

/* ---- copying ---- */

static CUstream stream_of(CUcontext ctx)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		if (S.streams[i].ctx == ctx)
			return S.streams[i].s;
		if (!S.streams[i].ctx) {
			CUstream s;

			if (gk_real.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
				return NULL;
			S.streams[i].ctx = ctx;
			S.streams[i].s = s;
			return s;
		}
	}
	return NULL;
}

int gk_snapshot_capture(const struct gk_xfer_item *items, size_t n, uint64_t chunk_size,
			struct gk_xfer_item **out, size_t *nout, gk_error_t *err)
{
	struct gk_xfer_item *o;
	size_t k = 0, step = 0, cap = n + MAX_STEPS;
	uint64_t used = 0;
	CUresult r = CUDA_SUCCESS;
	int ret = 0;

	*out = NULL;
	*nout = 0;
	o = calloc(cap, sizeof(*o));
	if (!o) {
		gk_errprintf(err, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&S.lock);
	for (size_t i = 0; i < n && ret == 0; i++) {
		uint64_t done = 0;

		while (done < items[i].size) {
			struct step *st = step < S.nsteps ? &S.steps[step] : NULL;
			uint64_t left = items[i].size - done, room, take;
			struct gk_xfer_item *piece;

			if (!st || !st->pinned_in || k == cap) {
				gk_errprintf(err, "the snapshot memory is too small");
				ret = -ENOSPC;
				break;
			}
			room = st->size - used;
			/* Whole chunks only where the item goes on in the next step. */
			take = left <= room ? left : room / chunk_size * chunk_size;
			if (take == 0) {
				step++;
				used = 0;
				continue;
			}
			piece = &o[k++];
			*piece = items[i];
			piece->dev_addr += done;
			piece->size = take;
			piece->file_offset += done;
			piece->chunks += done / chunk_size;
			piece->host = (char *)st->p + used;
			if (gk_real.cuCtxPushCurrent_v2(items[i].ctx) == CUDA_SUCCESS) {
				CUstream s = stream_of(items[i].ctx);

				r = s ? gk_real.cuMemcpyDtoHAsync_v2((void *)piece->host,
								    piece->dev_addr, take, s)
				      : CUDA_ERROR_OUT_OF_MEMORY;
				gk_real.cuCtxPopCurrent_v2(NULL);
			} else {
				r = CUDA_ERROR_INVALID_CONTEXT;
			}
			if (r != CUDA_SUCCESS) {
				gk_errprintf(err,
					     "copying allocation %zu (0x%llx) from the device: %s",
					     items[i].index, (unsigned long long)items[i].dev_addr,
					     gk_cu_name(r));
				ret = -EIO;
				break;
			}
			/* The next piece starts aligned, as the file offsets are. */
			used = (used + take + 4095) & ~4095ull;
			done += take;
		}
	}
	for (int i = 0; i < GK_MAX_DEVICES && S.streams[i].ctx; i++) {
		if (gk_real.cuCtxPushCurrent_v2(S.streams[i].ctx) != CUDA_SUCCESS)
			continue;
		r = gk_real.cuStreamSynchronize(S.streams[i].s);
		gk_real.cuCtxPopCurrent_v2(NULL);
		if (r != CUDA_SUCCESS && ret == 0) {
			gk_errprintf(err, "copying from the device: %s", gk_cu_name(r));
			ret = -EIO;
		}
	}
	pthread_mutex_unlock(&S.lock);
	if (ret < 0) {
		free(o);
		return ret;
	}
	*out = o;
	*nout = k;
	return 0;
}

void gk_snapshot_forget(CUcontext ctx)
{
	pthread_mutex_lock(&S.lock);
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (S.streams[i].ctx == ctx) {
			/* Keep the table dense: stream_of stops at the first hole. */
			for (int j = i; j + 1 < GK_MAX_DEVICES; j++)
				S.streams[j] = S.streams[j + 1];
			memset(&S.streams[GK_MAX_DEVICES - 1], 0, sizeof(S.streams[0]));
			i--;
		}
	/* Memory pinned in ctx is pinned no more: it goes, and is pinned again
	 * (in a live context) when a checkpoint needs it. */
	for (size_t i = 0; i < S.nsteps; i++)
		if (S.steps[i].pinned_in == ctx) {
			S.steps[i].pinned_in = NULL;
			S.pinned -= S.steps[i].size;
			release_step(&S.steps[i]);
		}
	for (size_t i = 0, j = 0; i < S.nsteps; i++) {
		if (S.steps[i].p)
			S.steps[j++] = S.steps[i];
		if (i + 1 == S.nsteps)
			S.nsteps = j;
	}
	pthread_mutex_unlock(&S.lock);
}
