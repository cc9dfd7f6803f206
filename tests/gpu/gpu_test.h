/*
 * gpu_test.h - what the GPU test programs (CUDA runtime API, built by nvcc)
 * share: checked CUDA calls, options, the device, the checkpoint points and
 * the output lines tests/gpu/run.sh parses (the same as the heat examples'):
 *
 *	PROG: fresh start: size=N steps=S device=NAME (UUID)
 *	PROG: resumed from step K on device=NAME (UUID)
 *	PROG: step K
 *	PROG: done: steps=S checksum=0x%016llx
 *
 * These are test programs: a failed call prints what failed and exits 1
 * rather than unwinding.
 */
#ifndef GPU_TEST_H
#define GPU_TEST_H

#include <cuda_runtime.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuckpt_optional.h"

/* Set by each program before anything else: the prefix of every line. */
static const char *gt_prog = "gpu-test";

static inline void gt_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "%s: %s failed: %s (%d: %s) at %s:%d\n", gt_prog, call, cudaGetErrorName(e),
		(int)e, cudaGetErrorString(e), file, line);
	exit(1);
}

/* Every CUDA runtime call goes through CK; every kernel launch is followed by CK_LAUNCH. */
#define CK(call) gt_check((call), #call, __FILE__, __LINE__)
#define CK_LAUNCH(what) gt_check(cudaGetLastError(), "launch of " what, __FILE__, __LINE__)

static inline void gt_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void gt_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", gt_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

struct gt_opts {
	long size;
	long steps;
	long report_every;
	long delay_ms;
};

/* What a program's --size means and may be. */
struct gt_size {
	long def, min, max;
	const char *what;
};

static inline long gt_parse_long(const char *opt, const char *text, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (end == text || *end != '\0') {
		fprintf(stderr, "%s: --%s: '%s' is not a whole number\n", gt_prog, opt, text);
		exit(2);
	}
	if (errno == ERANGE || v < min || v > max) {
		fprintf(stderr, "%s: --%s: %s is out of range (%ld..%ld)\n", gt_prog, opt, text,
			min, max);
		exit(2);
	}
	return v;
}

static inline void gt_usage(const char *what_it_does, const struct gt_size *size)
{
	printf("Usage: %s [OPTION]...\n"
	       "%s\n"
	       "A gpuckpt GPU test program: checkpoints when libgpuckpt.so is preloaded.\n"
	       "\n"
	       "  --size N          %s, %ld..%ld (default %ld)\n"
	       "  --steps S         iterations (default 400)\n"
	       "  --report-every K  print \"%s: step K\" every K steps, 0 for never (default 20)\n"
	       "  --delay-ms MS     sleep after each step (default 0)\n"
	       "  --help            print this and exit\n",
	       gt_prog, what_it_does, size->what, size->min, size->max, size->def, gt_prog);
}

/* Exits 0 after --help, 2 after a message naming a bad option. */
static inline void gt_parse(struct gt_opts *o, int argc, char **argv, const char *what_it_does,
			    const struct gt_size *size)
{
	enum { OPT_SIZE = 256, OPT_STEPS, OPT_REPORT, OPT_DELAY, OPT_HELP };
	static const struct option longopts[] = {
	    {"size", required_argument, NULL, OPT_SIZE},
	    {"steps", required_argument, NULL, OPT_STEPS},
	    {"report-every", required_argument, NULL, OPT_REPORT},
	    {"delay-ms", required_argument, NULL, OPT_DELAY},
	    {"help", no_argument, NULL, OPT_HELP},
	    {NULL, 0, NULL, 0},
	};
	int c;

	o->size = size->def;
	o->steps = 400;
	o->report_every = 20;
	o->delay_ms = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SIZE:
			o->size = gt_parse_long("size", optarg, size->min, size->max);
			break;
		case OPT_STEPS:
			o->steps = gt_parse_long("steps", optarg, 0, 1000000000L);
			break;
		case OPT_REPORT:
			o->report_every = gt_parse_long("report-every", optarg, 0, LONG_MAX);
			break;
		case OPT_DELAY:
			o->delay_ms = gt_parse_long("delay-ms", optarg, 0, 3600000L);
			break;
		case OPT_HELP:
			gt_usage(what_it_does, size);
			exit(0);
		case ':':
			fprintf(stderr, "%s: %s needs a value\n", gt_prog, argv[optind - 1]);
			exit(2);
		default:
			fprintf(stderr, "%s: unknown option '%s' (try --help)\n", gt_prog,
				argv[optind - 1]);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", gt_prog,
			argv[optind]);
		exit(2);
	}
}

struct gt_device {
	char name[256];
	char uuid[48]; /* GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi prints it */
};

/* Device 0 of those visible. */
static inline void gt_device_open(struct gt_device *d)
{
	struct cudaDeviceProp prop;
	const unsigned char *b;
	int count = 0;

	CK(cudaGetDeviceCount(&count));
	if (count < 1)
		gt_die("cudaGetDeviceCount: no CUDA device is visible");
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	snprintf(d->name, sizeof(d->name), "%s", prop.name);
	b = (const unsigned char *)prop.uuid.bytes;
	snprintf(d->uuid, sizeof(d->uuid),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/*
 * Register the step counter (it must outlive the loop) and say how this run
 * starts. On a restart the counter itself jumps at the first gt_point(),
 * when the runtime loads the registered regions.
 */
static inline void gt_begin(const struct gt_opts *o, const struct gt_device *d, long *step)
{
	long from = 0;
	int rc;

	rc = ckpt_protect("step", step, sizeof(*step));
	if (rc < 0)
		gt_die("gpuckpt_protect(step): %s", ckpt_strerror(rc));
	rc = ckpt_restarting(&from);
	if (rc < 0)
		gt_die("gpuckpt_restarting: %s", ckpt_strerror(rc));
	if (rc > 0)
		printf("%s: resumed from step %ld on device=%s (%s)\n", gt_prog, from, d->name,
		       d->uuid);
	else
		printf("%s: fresh start: size=%ld steps=%ld device=%s (%s)\n", gt_prog, o->size,
		       o->steps, d->name, d->uuid);
	fflush(stdout);
}

/* The checkpoint point at the top of a step: GPUCKPT_NOTHING, _SAVED or _RESTORED. */
static inline int gt_point(long step)
{
	int rc = ckpt_point(step);

	if (rc < 0)
		gt_die("gpuckpt_point(%ld): %s", step, ckpt_strerror(rc));
	return rc;
}

/* "step K" once the device has finished everything issued before it. */
static inline void gt_report(const struct gt_opts *o, long step)
{
	if (!o->report_every || step % o->report_every)
		return;
	CK(cudaDeviceSynchronize());
	printf("%s: step %ld\n", gt_prog, step);
	fflush(stdout);
}

static inline void gt_delay(const struct gt_opts *o)
{
	struct timespec left;

	if (!o->delay_ms)
		return;
	left.tv_sec = o->delay_ms / 1000;
	left.tv_nsec = (o->delay_ms % 1000) * 1000000L;
	/* SIGUSR1 checkpoints and goes on: finish the sleep. */
	while (nanosleep(&left, &left) == -1 && errno == EINTR)
		;
}

static inline void gt_done(const struct gt_opts *o, uint64_t sum)
{
	ckpt_unprotect("step");
	printf("%s: done: steps=%ld checksum=0x%016llx\n", gt_prog, o->steps,
	       (unsigned long long)sum);
	fflush(stdout);
}

/* FNV-1a, 64 bits, fed piece by piece. */
#define GT_FNV_INIT 0xcbf29ce484222325ULL

static inline uint64_t gt_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;

	for (size_t k = 0; k < len; k++) {
		h ^= p[k];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Copy n bytes of device memory back and add them to the checksum. */
static inline uint64_t gt_fnv1a_device(uint64_t h, const void *dev, size_t n)
{
	void *host = malloc(n);

	if (!host)
		gt_die("checksum: out of host memory (%zu bytes)", n);
	CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
	h = gt_fnv1a(h, host, n);
	free(host);
	return h;
}

/* Threads per block and blocks for a 1-D launch over n elements. */
#define GT_BLOCK 256
static inline unsigned gt_blocks(long n)
{
	return (unsigned)((n + GT_BLOCK - 1) / GT_BLOCK);
}

#endif
