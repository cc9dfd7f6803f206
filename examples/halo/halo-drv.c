/*
 * halo-drv - 2-D heat diffusion over MPI ranks, one GPU each (CUDA driver
 * API), checkpointed by all ranks together through gpuckpt_mpi.h.
 *
 * The n x n grid is cut into bands of rows, one per rank. Every step each
 * rank swaps its edge rows with its neighbours (MPI_Sendrecv), takes one
 * explicit step on its GPU, and the ranks add up the grid's heat
 * (MPI_Allreduce), which sets the temperature of the hot edge for the next
 * step. So every rank's result depends on every other rank's state at the
 * same step: ranks resumed from different steps would give another result.
 * The heat is summed in integers (order does not matter), so the result is the
 * same for any number of ranks, and the final checksum of the whole grid
 * (gathered on rank 0) can be compared between a restarted run and an
 * uninterrupted one, with any number of ranks.
 *
 * Output (rank 0 unless noted; tests parse it):
 *	halo: fresh start: ranks=P size=N steps=S host=H device=NAME (UUID)   every rank
 *	halo: resumed from step K on host=H device=NAME (UUID)                every rank
 *	halo: step K
 *	halo: done: ranks=P steps=S checksum=0x%016llx
 *
 * It runs on a GPU with halo_kernels.cubin, and without one on the
 * host-memory driver stand-in (tests/cuda-standin) with halo_kernels_host.so.
 */
#include <cuda.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuckpt_mpi.h"
#include "gpuckpt_optional.h"
#include "heat_app.h"
#include "halo_kernels.h"

#define PROG "halo"
#define MODULE_NAME "halo_kernels.cubin"

struct opts {
	long size, steps, report_every, delay_ms;
	const char *module;
};

struct halo {
	int rank, nranks;
	long n, rows, row0; /* this rank's band: global rows row0 .. row0 + rows - 1 */
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction step_fn, heat_fn;
	CUdeviceptr grid[2]; /* (rows + 2) x n: ghost, the band, ghost */
	CUdeviceptr heat;    /* unsigned long long */
	float *edge;         /* pinned: 4 rows (2 to send, 2 received) */
	unsigned long long *heat_host;
	char name[256], uuid[HEAT_UUID_LEN];
};

static int cu_failed(int rank, CUresult r, const char *call)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = "CUDA error";
	fprintf(stderr, "%s: rank %d: %s failed: %s (%d)\n", PROG, rank, call, name, (int)r);
	return -EIO;
}

#define CU(call) cu_failed(h->rank, (call), #call)

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: srun --mpi=pmix -n P %s [OPTION]...\n"
		"Solve 2-D heat diffusion on an N x N grid cut into bands of rows over P MPI\n"
		"ranks, one GPU each; print a checksum of the whole result. With libgpuckpt.so\n"
		"preloaded (the Slurm plugin does it) the ranks checkpoint together on SIGTERM,\n"
		"SIGUSR1 or the periodic interval (gpuckpt_mpi.h), and resume together.\n"
		"\n"
		"  --size N          grid edge, at least the number of ranks (default 256)\n"
		"  --steps S         time steps (default 1000)\n"
		"  --report-every K  rank 0 prints \"%s: step K\" every K steps, 0 never (default 100)\n"
		"  --delay-ms MS     sleep MS milliseconds after each step (default 0)\n"
		"  --module PATH     the kernels (default: $HALO_MODULE, else %s beside the\n"
		"                    program)\n"
		"  --help            print this and exit\n"
		"\n"
		"Exit status: 0 done, 1 a CUDA, MPI or checkpoint call failed, 2 bad usage.\n",
		PROG, PROG, MODULE_NAME);
}

static int parse(struct opts *o, int argc, char **argv)
{
	enum { O_SIZE = 256, O_STEPS, O_REPORT, O_DELAY, O_MODULE, O_HELP };
	static const struct option longopts[] = {
	    {"size", required_argument, NULL, O_SIZE},
	    {"steps", required_argument, NULL, O_STEPS},
	    {"report-every", required_argument, NULL, O_REPORT},
	    {"delay-ms", required_argument, NULL, O_DELAY},
	    {"module", required_argument, NULL, O_MODULE},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	*o = (struct opts){256, 1000, 100, 0, NULL};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1 && !rc) {
		switch (c) {
		case O_SIZE:
			rc = heat_parse_long(PROG, "size", optarg, HEAT_SIZE_MIN, 16384, &o->size);
			break;
		case O_STEPS:
			rc = heat_parse_long(PROG, "steps", optarg, 0, HEAT_STEPS_MAX, &o->steps);
			break;
		case O_REPORT:
			rc = heat_parse_long(PROG, "report-every", optarg, 0, LONG_MAX,
					     &o->report_every);
			break;
		case O_DELAY:
			rc = heat_parse_long(PROG, "delay-ms", optarg, 0, HEAT_DELAY_MAX,
					     &o->delay_ms);
			break;
		case O_MODULE:
			o->module = optarg;
			break;
		case O_HELP:
			return 1;
		default:
			fprintf(stderr, "%s: bad option '%s' (try --help)\n", PROG, argv[optind - 1]);
			rc = -EINVAL;
		}
	}
	if (!rc && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", PROG, argv[optind]);
		rc = -EINVAL;
	}
	return rc;
}

static int module_path(const struct opts *o, char *buf, size_t len)
{
	const char *env = getenv("HALO_MODULE");
	char exe[PATH_MAX], *slash;
	ssize_t got;

	if (o->module || (env && *env))
		return snprintf(buf, len, "%s", o->module ? o->module : env) < (int)len ? 0 : -1;
	got = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (got < 0)
		return -1;
	exe[got] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		slash[1] = 0;
	return snprintf(buf, len, "%s%s", exe, MODULE_NAME) < (int)len ? 0 : -1;
}

/* Visible device 0: each task sees the GPUs Slurm gave it, and a restart
 * may land on another node, so the rank's place on the node is no guide. */
static int gpu_open(struct halo *h, const char *module)
{
	CUuuid uuid;
	CUresult r;

	if (CU(cuInit(0)) || CU(cuDeviceGet(&h->dev, 0)) ||
	    CU(cuDeviceGetName(h->name, (int)sizeof(h->name), h->dev)) ||
	    CU(cuDeviceGetUuid(&uuid, h->dev)))
		return -EIO;
	heat_format_uuid((const unsigned char *)uuid.bytes, h->uuid);
	if (CU(cuDevicePrimaryCtxRetain(&h->ctx, h->dev)) || CU(cuCtxSetCurrent(h->ctx)))
		return -EIO;
	r = cuModuleLoad(&h->mod, module);
	if (r != CUDA_SUCCESS) {
		cu_failed(h->rank, r, module);
		fprintf(stderr, "%s: build the kernels with nvcc, or pass --module PATH\n", PROG);
		return -EIO;
	}
	if (CU(cuModuleGetFunction(&h->step_fn, h->mod, HALO_KERNEL_STEP)) ||
	    CU(cuModuleGetFunction(&h->heat_fn, h->mod, HALO_KERNEL_HEAT)) ||
	    CU(cuMemAllocHost((void **)&h->edge, 4 * (size_t)h->n * sizeof(float))) ||
	    CU(cuMemAllocHost((void **)&h->heat_host, sizeof(*h->heat_host))))
		return -EIO;
	return 0;
}

/* Always in this order: a restart gets each allocation back at its address. */
static int grids_alloc(struct halo *h)
{
	size_t bytes = (size_t)(h->rows + 2) * (size_t)h->n * sizeof(float);
	float *init = calloc(1, bytes);
	int rc = -EIO;

	if (!init)
		return -ENOMEM;
	for (long i = 0; i < h->rows; i++)
		for (long j = 0; j < h->n; j++)
			init[(i + 1) * h->n + j] = heat_initial(h->row0 + i, j, h->n);
	if (!CU(cuMemAlloc(&h->grid[0], bytes)) && !CU(cuMemAlloc(&h->grid[1], bytes)) &&
	    !CU(cuMemAlloc(&h->heat, sizeof(unsigned long long))) &&
	    !CU(cuMemcpyHtoD(h->grid[0], init, bytes)) && !CU(cuMemcpyHtoD(h->grid[1], init, bytes)))
		rc = 0;
	free(init);
	return rc;
}

/* The neighbours' edge rows into this band's ghost rows. */
static int exchange(struct halo *h, CUdeviceptr g)
{
	size_t row = (size_t)h->n * sizeof(float);
	float *send_first = h->edge, *send_last = h->edge + h->n;
	float *recv_above = h->edge + 2 * h->n, *recv_below = h->edge + 3 * h->n;
	int up = h->rank > 0 ? h->rank - 1 : MPI_PROC_NULL;
	int down = h->rank < h->nranks - 1 ? h->rank + 1 : MPI_PROC_NULL;

	if (CU(cuMemcpyDtoH(send_first, g + row, row)) ||
	    CU(cuMemcpyDtoH(send_last, g + (size_t)h->rows * row, row)))
		return -EIO;
	if (MPI_Sendrecv(send_last, (int)h->n, MPI_FLOAT, down, 1, recv_above, (int)h->n, MPI_FLOAT,
			 up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
	    MPI_Sendrecv(send_first, (int)h->n, MPI_FLOAT, up, 2, recv_below, (int)h->n, MPI_FLOAT,
			 down, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return -EIO;
	if (up != MPI_PROC_NULL && CU(cuMemcpyHtoD(g, recv_above, row)))
		return -EIO;
	if (down != MPI_PROC_NULL && CU(cuMemcpyHtoD(g + (size_t)(h->rows + 1) * row, recv_below, row)))
		return -EIO;
	return 0;
}

/* One step from grid s % 2 into the other; returns the global heat. */
static int step_once(struct halo *h, long s, float top, unsigned long long *global)
{
	CUdeviceptr src = h->grid[s & 1], dst = h->grid[(s + 1) & 1];
	int rows = (int)h->rows, n = (int)h->n, row0 = (int)h->row0;
	float alpha = HALO_ALPHA;
	unsigned bx = (unsigned)((n + HALO_BLOCK - 1) / HALO_BLOCK);
	unsigned by = (unsigned)((rows + HALO_BLOCK - 1) / HALO_BLOCK);
	void *step_args[] = {&src, &dst, &rows, &n, &row0, &alpha, &top};
	void *heat_args[] = {&dst, &rows, &n, &h->heat};

	if (exchange(h, src))
		return -EIO;
	if (CU(cuLaunchKernel(h->step_fn, bx, by, 1, HALO_BLOCK, HALO_BLOCK, 1, 0, NULL, step_args,
			      NULL)) ||
	    CU(cuMemsetD8(h->heat, 0, sizeof(unsigned long long))) ||
	    CU(cuLaunchKernel(h->heat_fn, bx, by, 1, HALO_BLOCK, HALO_BLOCK, 1, 0, NULL, heat_args,
			      NULL)) ||
	    CU(cuMemcpyDtoH(h->heat_host, h->heat, sizeof(*h->heat_host))))
		return -EIO;
	if (MPI_Allreduce(h->heat_host, global, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
			  MPI_COMM_WORLD) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

/* The whole grid on rank 0, and its FNV-1a. */
static int checksum(struct halo *h, long steps, uint64_t *sum)
{
	size_t row = (size_t)h->n * sizeof(float), band = (size_t)h->rows * row;
	float *mine = malloc(band ? band : 1), *all = NULL;
	int *counts = NULL, *displs = NULL, rc = -ENOMEM;

	if (!mine)
		return rc;
	if (h->rank == 0) {
		all = malloc((size_t)h->n * row);
		counts = malloc(sizeof(int) * (size_t)h->nranks);
		displs = malloc(sizeof(int) * (size_t)h->nranks);
		if (!all || !counts || !displs)
			goto out;
		for (int r = 0, at = 0; r < h->nranks; r++) {
			long rows = h->n / h->nranks + (r < h->n % h->nranks);

			counts[r] = (int)(rows * h->n);
			displs[r] = at;
			at += counts[r];
		}
	}
	rc = -EIO;
	if (CU(cuMemcpyDtoH(mine, h->grid[steps & 1] + row, band)))
		goto out;
	if (MPI_Gatherv(mine, (int)(h->rows * h->n), MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0,
			MPI_COMM_WORLD) != MPI_SUCCESS)
		goto out;
	if (h->rank == 0)
		*sum = heat_fnv1a(all, (size_t)h->n * row);
	rc = 0;
out:
	free(mine);
	free(all);
	free(counts);
	free(displs);
	return rc;
}

static int run(struct halo *h, const struct opts *o)
{
	long step = 0, from = 0;
	float top = 100.0f;
	unsigned long long heat = 0;
	uint64_t sum = 0;
	char host[256] = "";
	int rc;

	gethostname(host, sizeof(host) - 1);
	if ((rc = ckpt_protect("step", &step, sizeof(step))) < 0 ||
	    (rc = ckpt_protect("top", &top, sizeof(top))) < 0) {
		fprintf(stderr, "%s: rank %d: gpuckpt_protect: %s\n", PROG, h->rank,
			ckpt_strerror(rc));
		return rc;
	}
	rc = ckpt_restarting(&from);
	if (rc < 0) {
		fprintf(stderr, "%s: rank %d: gpuckpt_restarting: %s\n", PROG, h->rank,
			ckpt_strerror(rc));
		return rc;
	}
	if (rc > 0)
		printf("%s: resumed from step %ld on host=%s device=%s (%s)\n", PROG, from, host,
		       h->name, h->uuid);
	else
		printf("%s: fresh start: ranks=%d size=%ld steps=%ld host=%s device=%s (%s)\n", PROG,
		       h->nranks, o->size, o->steps, host, h->name, h->uuid);
	fflush(stdout);
	for (; step < o->steps; step++) {
		rc = gpuckpt_mpi_point(step);
		/* No checkpoint this time (this rank's part failed, the set fell
		 * short elsewhere, the ranks stopped answering): the computation is
		 * fine, and every rank must go on calling the collective point. */
		if (rc < 0 && h->rank == 0)
			fprintf(stderr, "%s: rank %d: gpuckpt_mpi_point(%ld): %s; going on\n", PROG,
				h->rank, step, ckpt_strerror(rc));
		if (h->rank == 0 && o->report_every && step % o->report_every == 0) {
			printf("%s: step %ld\n", PROG, step);
			fflush(stdout);
		}
		rc = step_once(h, step, top, &heat);
		if (rc)
			return rc;
		top = 100.0f + (float)(heat % 64) * 0.25f;
		if (o->delay_ms)
			heat_sleep_ms(o->delay_ms);
	}
	rc = checksum(h, o->steps, &sum);
	if (rc)
		return rc;
	if (h->rank == 0) {
		printf("%s: done: ranks=%d steps=%ld checksum=0x%016llx\n", PROG, h->nranks, o->steps,
		       (unsigned long long)sum);
		fflush(stdout);
	}
	ckpt_unprotect("top");
	ckpt_unprotect("step");
	return 0;
}

int main(int argc, char **argv)
{
	struct halo hs, *h = &hs;
	struct opts o;
	char module[PATH_MAX];
	int rc, all;

	memset(h, 0, sizeof(*h));
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &h->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &h->nranks);
	rc = parse(&o, argc, argv);
	if (rc == 0 && o.size < h->nranks) {
		fprintf(stderr, "%s: --size %ld: fewer rows than the %d ranks\n", PROG, o.size,
			h->nranks);
		rc = -EINVAL;
	}
	if (rc) {
		if (rc > 0 && h->rank == 0)
			usage(stdout);
		MPI_Finalize();
		return rc > 0 ? 0 : 2;
	}
	h->n = o.size;
	h->rows = o.size / h->nranks + (h->rank < o.size % h->nranks);
	h->row0 = h->rank * (o.size / h->nranks) +
		  (h->rank < o.size % h->nranks ? h->rank : o.size % h->nranks);
	/* Not fatal: without agreement the runtime refuses checkpoints, and says why. */
	rc = gpuckpt_mpi_init(MPI_COMM_WORLD);
	if (rc < 0 && h->rank == 0)
		fprintf(stderr, "%s: gpuckpt_mpi_init: %s; no checkpoints in this run\n", PROG,
			ckpt_strerror(rc));
	rc = module_path(&o, module, sizeof(module));
	if (rc == 0)
		rc = gpu_open(h, module);
	if (rc == 0)
		rc = grids_alloc(h);
	/* Every rank learns that one failed, rather than wait for it forever. */
	MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (all == 0)
		rc = run(h, &o);
	else if (rc == 0)
		rc = -EIO;
	gpuckpt_mpi_finalize();
	if (rc)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Finalize();
	return 0;
}
