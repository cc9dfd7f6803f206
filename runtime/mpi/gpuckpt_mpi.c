/*
 * gpuckpt_mpi.c - libgpuckpt-mpi: the collective checkpoint point of
 * gpuckpt_mpi.h, over the runtime's gpuckpt_coord.h.
 *
 * The ranks agree at every K-th point, pipelined: agreement point a waits for
 * the all-reduce that the agreement point before it started (the ranks'
 * "checkpoint due" and "exiting" flags, and each rank's proposal for K), and
 * starts the next. Since every rank counts the same points, every rank learns
 * the same answer at the same point, and checkpoints there. K is agreed too
 * (the smallest proposal): each rank proposes as many points as it runs in
 * GPUCKPT_AGREE_PERIOD_MS (10 ms), so a program with a thousand points a
 * second agrees a hundred times a second, and a checkpoint asked for on any
 * rank is taken within two such periods. A rank may run one period ahead of
 * the slowest before it waits, which absorbs the jitter of the ranks'
 * schedules. Waiting cannot deadlock a program whose iterations only talk
 * between consecutive points: a rank still before the previous agreement
 * point needs nothing from this rank but what it has already sent.
 *
 * Deciding the set, and learning that every rank committed, use collectives
 * with a time limit (GPUCKPT_AGREE_TIMEOUT): a rank that died half-way must
 * not hold the others forever. A rank that gives up leaves its part as it is
 * (neither pruned nor withdrawn: it cannot know whether rank 0 recorded the
 * set) and agrees on no further checkpoint.
 *
 * The runtime is referenced weakly, so that a program linked with this
 * library runs without gpuckpt too: every call then does nothing.
 */
#include "config.h"

#include "include/gpuckpt_mpi.h"
/* The runtime's side, present when libgpuckpt is loaded. */
#define GPUCKPT_COORD_WEAK
#include "include/gpuckpt_coord.h"
#include "common/export.h"
#include "common/settings_env.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define STALE_MAX 16

/* Also the runtime's. */
#pragma weak gpuckpt_point

static struct {
	int on;     /* the ranks agree through this layer */
	int broken; /* a collective of the layer timed out: no more checkpoints */
	int first;  /* the next point is the first: check what every rank restored */
	MPI_Comm comm;
	int rank, size;
	double timeout;
	int64_t period_ns;  /* GPUCKPT_AGREE_PERIOD_MS */
	/* Points counted since init; the next agreement point; K. */
	long index, next_agree, every;
	int64_t last_agree_ns;
	long last_agree_index;
	/* The all-reduce started at the previous agreement point: checkpoint
	 * due, exiting, -(proposed K), reduced by MPI_MAX. */
	MPI_Request due_req;
	int due_pending, due_done, due_send[3], due_recv[3];
	/* The buffers of a checkpoint's collectives; they must outlive a
	 * request given up on, which is completed later. */
	unsigned long long set_send[2], set_recv[2];
	int ok_send, ok_recv, recorded;
	MPI_Request stale[STALE_MAX];
	int nstale;
} M;

static int runtime_present(void)
{
	return gpuckpt_coord_attach && gpuckpt_coord_detach && gpuckpt_coord_poll &&
	       gpuckpt_coord_next && gpuckpt_coord_write && gpuckpt_coord_record &&
	       gpuckpt_coord_settle && gpuckpt_coord_finish && gpuckpt_coord_restored;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpuckpt: mpi: rank %d: %s\n", M.rank, line);
	fflush(stderr);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double now(void)
{
	return (double)now_ns() * 1e-9;
}

/* A whole number of a variable, or the default when unset or not valid. */
static long setting(enum gk_env_id id, long dflt, long max)
{
	const char *v = gk_env_get(id);
	char *end;
	long s;

	if (!v || !*v)
		return dflt;
	s = strtol(v, &end, 10);
	return *end || s <= 0 || s > max ? dflt : s;
}

/*
 * Complete a request of the layer within the time limit, progressing MPI
 * meanwhile. On timeout the request is kept to be completed later (a
 * collective cannot be cancelled) and the layer stops agreeing.
 */
static int wait_for(MPI_Request *req, const char *what)
{
	double t0 = now();
	struct timespec pause = {0, 200000};
	int done = 0;

	for (unsigned spins = 0;; spins++) {
		MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (done)
			return 0;
		if (now() - t0 > M.timeout)
			break;
		/* Spin briefly (the others are usually right there), then yield. */
		if (spins > 1000)
			nanosleep(&pause, NULL);
	}
	say("the other ranks did not %s within %.0f s (" GK_ENV(AGREE_TIMEOUT) "); no more "
	    "checkpoints are agreed in this run",
	    what, M.timeout);
	if (M.nstale < STALE_MAX)
		M.stale[M.nstale++] = *req;
	M.broken = 1;
	return -ETIMEDOUT;
}

GK_EXPORT int gpuckpt_mpi_init(MPI_Comm comm)
{
	int rc = -ENOTSUP, ok, all, mine;

	memset(&M, 0, sizeof(M));
	MPI_Comm_rank(comm, &M.rank);
	MPI_Comm_size(comm, &M.size);
	/* Collective on every rank, with or without the runtime: a rank that
	 * skipped it would leave the others waiting. */
	if (MPI_Comm_dup(comm, &M.comm) != MPI_SUCCESS)
		return -ENOMEM;
	if (runtime_present())
		rc = gpuckpt_coord_attach("mpi", M.size, M.rank);
	/* On or off everywhere: one rank agreeing alone would wait forever. */
	ok = rc == 0;
	mine = rc == -EINVAL;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, M.comm);
	if (all) {
		M.on = 1;
		M.first = 1;
		M.timeout = (double)setting(GK_ENV_ID_AGREE_TIMEOUT, 300, 86400);
		M.period_ns = setting(GK_ENV_ID_AGREE_PERIOD_MS, 10, 60000) * 1000000;
		M.every = 1;
		return 0;
	}
	if (ok)
		gpuckpt_coord_detach(); /* another rank cannot: nobody agrees */
	MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, M.comm);
	MPI_Comm_free(&M.comm);
	if (all && M.rank == 0)
		say("the ranks cannot agree on checkpoints (see the runtime's message above); "
		    "this run takes none");
	return all ? -EINVAL : 0;
}

/* The first point: every rank must have restored the same set, or none. */
static void check_restored(void)
{
	unsigned long long id = 0, seq = 0, v[4], w[4];

	if (!gpuckpt_coord_restored(&id, &seq))
		id = seq = 0;
	v[0] = id;
	v[1] = seq;
	v[2] = ~id;
	v[3] = ~seq;
	MPI_Allreduce(v, w, 4, MPI_UNSIGNED_LONG_LONG, MPI_MAX, M.comm);
	if (w[0] == id && ~w[2] == id && w[1] == seq && ~w[3] == seq)
		return;
	say("the ranks did not all restore the same checkpoint set (this rank: %s %llu, id "
	    "%016llx; others from set %llu to %llu): stopping the job rather than running on mixed "
	    "steps",
	    seq ? "set" : "no set", seq, id, ~w[3], w[1]);
	MPI_Abort(M.comm, 1);
}

static unsigned long long random_id(void)
{
	unsigned long long id = 0;

	while (!id) {
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			id = ((unsigned long long)time(NULL) << 20) ^ (unsigned long long)getpid() ^
			     (unsigned long long)(now() * 1e9);
	}
	return id;
}

/* Every rank, at the same point: write the set, learn whether it counts. */
static int take(long step, int agreed)
{
	struct gpuckpt_set set;
	unsigned long long next = 0;
	int ret;

	if (gpuckpt_coord_next(&next) < 0)
		next = 0; /* still takes part; its "not committed" vote sinks the set */
	M.set_send[0] = next;
	M.set_send[1] = M.rank == 0 ? random_id() : 0;
	MPI_Iallreduce(M.set_send, M.set_recv, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, M.comm,
		       &M.due_req);
	if (wait_for(&M.due_req, "agree on a checkpoint number") < 0)
		return -ETIMEDOUT;
	set.sequence = M.set_recv[0];
	set.id = M.set_recv[1];
	set.step = step;
	ret = next ? gpuckpt_coord_write(step, &set) : -EIO;
	M.ok_send = ret == 0;
	MPI_Iallreduce(&M.ok_send, &M.ok_recv, 1, MPI_INT, MPI_MIN, M.comm, &M.due_req);
	if (wait_for(&M.due_req, "say whether they committed their part") < 0)
		goto out_finish;
	M.recorded = 0;
	if (M.rank == 0 && M.ok_recv)
		M.recorded = gpuckpt_coord_record(&set) == 0;
	MPI_Ibcast(&M.recorded, 1, MPI_INT, 0, M.comm, &M.due_req);
	if (wait_for(&M.due_req, "learn whether rank 0 recorded the set") < 0)
		goto out_finish;
	gpuckpt_coord_settle(&set, M.recorded);
	if (ret == 0 && !M.recorded)
		ret = -ECANCELED;
out_finish:
	/* Ends the process when it (or another rank) was asked to end. */
	gpuckpt_coord_finish(agreed);
	if (M.broken)
		return ret < 0 ? ret : -ETIMEDOUT;
	return ret < 0 ? ret : GPUCKPT_SAVED;
}

/* How many points this rank runs in one agreement period, from the last window. */
static int propose(long i)
{
	int64_t t = now_ns(), per;
	long k = 1;

	if (M.last_agree_ns && i > M.last_agree_index) {
		per = (t - M.last_agree_ns) / (i - M.last_agree_index);
		k = per > 0 ? (long)(M.period_ns / per) : 1000000;
	}
	M.last_agree_ns = t;
	M.last_agree_index = i;
	return k < 1 ? 1 : k > 1000000 ? 1000000 : (int)k;
}

GK_EXPORT int gpuckpt_mpi_point(long step)
{
	int rc, due = 0, agreed = 0, ret;
	long i;

	if (!M.on)
		return gpuckpt_point ? gpuckpt_point(step) : GPUCKPT_NOTHING;
	rc = gpuckpt_coord_poll(step, &due);
	if (M.broken) {
		if (due)
			say("a checkpoint is due, but the ranks lost contact earlier; none is taken");
		gpuckpt_coord_finish(due);
		return rc;
	}
	if (M.first) {
		M.first = 0;
		check_restored();
	}
	/* Between agreement points: the local poll above, and a test of the
	 * all-reduce in flight until it completes. Without an MPI call here
	 * its rounds would only progress at the next agreement point, making
	 * every rank wait there for the last one to arrive. */
	i = M.index++;
	if (i != M.next_agree) {
		if (M.due_pending && !M.due_done)
			MPI_Test(&M.due_req, &M.due_done, MPI_STATUS_IGNORE);
		return rc;
	}
	if (M.due_pending) {
		if (!M.due_done)
			MPI_Wait(&M.due_req, MPI_STATUS_IGNORE);
		M.due_pending = 0;
		M.due_done = 0;
		agreed = (M.due_recv[0] ? GPUCKPT_DUE_CHECKPOINT : 0) |
			 (M.due_recv[1] ? GPUCKPT_DUE_EXIT : 0);
		M.every = -M.due_recv[2];
	}
	if (agreed & GPUCKPT_DUE_CHECKPOINT) {
		ret = take(step, agreed);
		if (M.broken)
			return ret;
		rc = ret;
		/* A request that came while the set was written: next time. */
		if (gpuckpt_coord_poll(step, &due) < 0)
			due = 0;
	}
	M.due_send[0] = !!(due & GPUCKPT_DUE_CHECKPOINT);
	M.due_send[1] = !!(due & GPUCKPT_DUE_EXIT);
	M.due_send[2] = -propose(i);
	MPI_Iallreduce(M.due_send, M.due_recv, 3, MPI_INT, MPI_MAX, M.comm, &M.due_req);
	M.due_pending = 1;
	M.next_agree = i + M.every;
	return rc;
}

GK_EXPORT int gpuckpt_mpi_finalize(void)
{
	if (!M.on)
		return 0;
	if (M.due_pending && !M.due_done)
		MPI_Wait(&M.due_req, MPI_STATUS_IGNORE);
	/* Requests given up on belong to ranks that are gone or stuck; waiting
	 * for them could hang the finalize. */
	if (!M.broken)
		MPI_Comm_free(&M.comm);
	gpuckpt_coord_detach();
	M.on = 0;
	return 0;
}
