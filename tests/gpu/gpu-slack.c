/*
 * gpu-slack - a CUDA program (driver API) that reads a little outside its
 * allocations, as Rodinia's srad_v2 does: natively such reads land on a
 * neighbouring allocation and are harmless, and under gpuckpt they must be
 * too, through a checkpoint and a restore (runtime/core/placement/layout.h: every block
 * has mapped guards). It allocates three images (--size floats each, 16 MiB by
 * default; first, like srad's) and three small arrays, then every step
 * updates each in place with a kernel that also reads --slack bytes before
 * and after it. The output lines are those of the heat examples
 * (examples/heat/heat_app.h), so tests/gpu/scenario.sh runs it.
 *
 * Which edges are read (--edges):
 *  native  under the runtime, before every image (srad reads before its first)
 *          and between the images: the runtime's guards make these reads
 *          harmless. Without the runtime, only between two images that this run
 *          found packed next to each other: on the H100 the driver put the
 *          first image alone (a read before it faulted) and packed the other
 *          two. The reads' values are never used, so the checksum is the same
 *          either way, and on a GPU the native run is the reference.
 *  all     before and after every array, the first and last ones included:
 *          for the driver stand-in, whose kernels ask before they read
 *          (slack_kernels_host.c), so a read of unmapped memory faults there
 *          exactly as on a GPU.
 *
 * --keep-going makes it a program that does not check its CUDA calls (srad
 * does not): after a failure it prints one line and carries on, so that a
 * broken context (a read beyond any guard) meets the checkpoint.
 *
 * Exit status: 0 done, 1 a CUDA or checkpoint call failed, 2 bad usage.
 */
#include <cuda.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuckpt_optional.h"
#include "heat_app.h"

#define PROG "gpu-slack"
#define NIMG 3
#define NSMALL 3
#define NBUF (NIMG + NSMALL)
#define BLOCK 256

/* The small arrays, in floats: 4096, 4000 and 256 bytes. */
static const long small_floats[NSMALL] = {1024, 1000, 64};

struct opts {
	const char *module;
	long size, steps, report_every, delay_ms, slack;
	int all_edges, keep_going;
};

struct buf {
	CUdeviceptr p;
	long n;
	long before, after; /* bytes read outside it each step */
};

static int keep_going, failed_once;

static int cu_failed(CUresult r, const char *call)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = "CUDA error";
	if (keep_going) {
		/* An unchecked program: say it once, go on as if nothing happened. */
		if (!failed_once++)
			fprintf(stderr, "%s: %s failed: %s; going on (--keep-going)\n", PROG, call,
				name);
		return 0;
	}
	fprintf(stderr, "%s: %s failed: %s (%d)\n", PROG, call, name, (int)r);
	return -EIO;
}

#define CU(call) cu_failed((call), #call)

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: %s --module PATH [OPTION]...\n"
		"Update three images and three small arrays on the GPU, reading a little\n"
		"outside each every step (as Rodinia's srad_v2 does), and print a checksum.\n"
		"With libgpuckpt.so preloaded it checkpoints on SIGTERM and SIGUSR1.\n"
		"\n"
		"  --module PATH     the kernels: slack_kernels.cubin (GPU) or\n"
		"                    slack_kernels_host.so (driver stand-in)\n"
		"  --size N          floats per image, 1024..%ld (default 4194304: 16 MiB)\n"
		"  --steps S         steps, 0..%ld (default 400)\n"
		"  --report-every K  print \"%s: step K\" every K steps (default 20)\n"
		"  --delay-ms MS     sleep after each step (default 0)\n"
		"  --slack BYTES     read this far before and after, 0..67108864, a multiple\n"
		"                    of 4 (default 512)\n"
		"  --edges WHICH     native (default) or all (see the source)\n"
		"  --keep-going      do not stop when a CUDA call fails\n"
		"  --help            print this and exit\n"
		"Exit status: 0 done, 1 a CUDA or checkpoint call failed, 2 bad usage.\n",
		PROG, 1L << 28, HEAT_STEPS_MAX, PROG);
}

static int parse(int argc, char **argv, struct opts *o)
{
	enum {
		O_MODULE = 256,
		O_SIZE,
		O_STEPS,
		O_REPORT,
		O_DELAY,
		O_SLACK,
		O_EDGES,
		O_KEEP,
		O_HELP
	};
	static const struct option longopts[] = {
	    {"module", required_argument, NULL, O_MODULE},
	    {"size", required_argument, NULL, O_SIZE},
	    {"steps", required_argument, NULL, O_STEPS},
	    {"report-every", required_argument, NULL, O_REPORT},
	    {"delay-ms", required_argument, NULL, O_DELAY},
	    {"slack", required_argument, NULL, O_SLACK},
	    {"edges", required_argument, NULL, O_EDGES},
	    {"keep-going", no_argument, NULL, O_KEEP},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	*o = (struct opts){NULL, 4194304, 400, 20, 0, 512, 0, 0};
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case O_MODULE:
			o->module = optarg;
			break;
		case O_SIZE:
			rc = heat_parse_long(PROG, "size", optarg, 1024, 1L << 28, &o->size);
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
		case O_SLACK:
			rc = heat_parse_long(PROG, "slack", optarg, 0, 64L << 20, &o->slack);
			if (rc == 0 && o->slack % 4) {
				fprintf(stderr, "%s: --slack: %s is not a multiple of 4\n", PROG,
					optarg);
				rc = -EINVAL;
			}
			break;
		case O_EDGES:
			if (!strcmp(optarg, "all") || !strcmp(optarg, "native")) {
				o->all_edges = !strcmp(optarg, "all");
			} else {
				fprintf(stderr, "%s: --edges: '%s' is not native or all\n", PROG,
					optarg);
				rc = -EINVAL;
			}
			break;
		case O_KEEP:
			o->keep_going = 1;
			break;
		case O_HELP:
			usage(stdout);
			return 1;
		case ':':
			fprintf(stderr, "%s: %s needs a value\n", PROG, argv[optind - 1]);
			rc = -EINVAL;
			break;
		default:
			fprintf(stderr, "%s: unknown option '%s' (try --help)\n", PROG,
				argv[optind - 1]);
			rc = -EINVAL;
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", PROG, argv[optind]);
		rc = -EINVAL;
	}
	if (rc == 0 && !o->module) {
		fprintf(stderr, "%s: --module PATH is required (try --help)\n", PROG);
		rc = -EINVAL;
	}
	return rc;
}

/* Whether the driver put b right after a, so a read across their edge lands in
 * memory this process owns. */
static int packed(const struct buf *a, const struct buf *b)
{
	return a->p + (CUdeviceptr)a->n * sizeof(float) == b->p;
}

/* What each array reads outside itself (see the top of this file). */
static void plan_edges(struct buf *b, const struct opts *o)
{
	for (int k = 0; k < NBUF; k++) {
		int img = k < NIMG;

		if (o->all_edges) {
			b[k].before = b[k].after = o->slack;
		} else if (ckpt_present()) {
			b[k].before = img ? o->slack : 0;
			b[k].after = img && k < NIMG - 1 ? o->slack : 0;
		} else {
			b[k].before = img && k > 0 && packed(&b[k - 1], &b[k]) ? o->slack : 0;
			b[k].after = img && k < NIMG - 1 && packed(&b[k], &b[k + 1]) ? o->slack : 0;
		}
	}
}

static uint64_t checksum(const struct buf *b)
{
	uint64_t h = 0;

	for (int k = 0; k < NBUF; k++) {
		size_t bytes = (size_t)b[k].n * sizeof(float);
		float *host = malloc(bytes);

		if (!host || CU(cuMemcpyDtoH(host, b[k].p, bytes))) {
			free(host);
			return 0;
		}
		h = h * 31 + heat_fnv1a(host, bytes);
		free(host);
	}
	return h;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct buf b[NBUF];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUuuid uuid;
	char name[256], uuid_text[HEAT_UUID_LEN];
	long step = 0, from = 0;
	int rc;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc > 0 ? 0 : 2;
	/* Images first, before the module: srad's order, whose first image has
	 * driver memory before it natively. */
	if (CU(cuInit(0)) || CU(cuDeviceGet(&dev, 0)) || CU(cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    CU(cuCtxSetCurrent(ctx)))
		return 1;
	keep_going = o.keep_going;
	for (int k = 0; k < NBUF; k++) {
		b[k].n = k < NIMG ? o.size : small_floats[k - NIMG];
		if (CU(cuMemAlloc(&b[k].p, (size_t)b[k].n * sizeof(float))))
			return 1;
		printf("%s: alloc %s%d 0x%llx %zu bytes\n", PROG, k < NIMG ? "image" : "small",
		       k < NIMG ? k : k - NIMG, (unsigned long long)b[k].p,
		       (size_t)b[k].n * sizeof(float));
	}
	plan_edges(b, &o);
	if (CU(cuModuleLoad(&mod, o.module)) || CU(cuModuleGetFunction(&fn, mod, "slack_step")))
		return 1;
	for (int k = 0; k < NBUF; k++) {
		size_t bytes = (size_t)b[k].n * sizeof(float);
		float *host = malloc(bytes);

		if (!host)
			return 1;
		for (long i = 0; i < b[k].n; i++)
			host[i] = (float)((i * 13 + k) % 97) * 0.5f;
		rc = CU(cuMemcpyHtoD(b[k].p, host, bytes));
		free(host);
		if (rc)
			return 1;
	}
	if (CU(cuDeviceGetName(name, sizeof(name), dev)) || CU(cuDeviceGetUuid(&uuid, dev)))
		return 1;
	heat_format_uuid((const unsigned char *)uuid.bytes, uuid_text);

	rc = ckpt_protect("step", &step, sizeof(step));
	if (rc == 0)
		rc = ckpt_restarting(&from);
	if (rc < 0) {
		fprintf(stderr, "%s: gpuckpt: %s\n", PROG, ckpt_strerror(rc));
		return 1;
	}
	if (rc > 0)
		printf("%s: resumed from step %ld on device=%s (%s)\n", PROG, from, name,
		       uuid_text);
	else
		printf("%s: fresh start: size=%ld steps=%ld device=%s (%s)\n", PROG, o.size,
		       o.steps, name, uuid_text);
	fflush(stdout);
	for (; step < o.steps; step++) {
		rc = ckpt_point(step);
		if (rc < 0) {
			fprintf(stderr, "%s: gpuckpt_point(%ld): %s\n", PROG, step,
				ckpt_strerror(rc));
			return 1;
		}
		if (o.report_every && step % o.report_every == 0) {
			printf("%s: step %ld\n", PROG, step);
			fflush(stdout);
		}
		for (int k = 0; k < NBUF; k++) {
			int s = (int)step;
			void *args[] = {&b[k].p, &b[k].n, &b[k].before, &b[k].after, &s};
			unsigned grid = (unsigned)((b[k].n + BLOCK - 1) / BLOCK);

			if (CU(cuLaunchKernel(fn, grid, 1, 1, BLOCK, 1, 1, 0, NULL, args, NULL)))
				return 1;
		}
		if (CU(cuCtxSynchronize()))
			return 1;
		if (o.delay_ms)
			heat_sleep_ms(o.delay_ms);
	}
	printf("%s: done: steps=%ld checksum=0x%016llx\n", PROG, o.steps,
	       (unsigned long long)checksum(b));
	fflush(stdout);
	return failed_once ? 1 : 0;
}
