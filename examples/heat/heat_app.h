/*
 * heat_app.h - what the two heat programs (heat-drv.c, C; heat-rt.cu, C++
 * through nvcc) share apart from the kernels: options, the initial
 * condition, the checksum and the output lines other tools parse. Static
 * inline so that each program compiles it with its own compiler and nothing
 * has to be linked across the C/CUDA boundary.
 *
 * Output contract (tests/gpu/run.sh, tests/gpu/standin.sh and the Slurm
 * demo parse it):
 *	PROG: fresh start: size=N steps=S device=NAME (UUID)
 *	PROG: resumed from step K on device=NAME (UUID)
 *	PROG: step K
 *	PROG: done: steps=S checksum=0x%016llx
 */
#ifndef HEAT_APP_H
#define HEAT_APP_H

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEAT_SIZE_MIN 3L
#define HEAT_SIZE_MAX 32768L
#define HEAT_STEPS_MAX 1000000000L
#define HEAT_DELAY_MAX 3600000L

struct heat_opts {
	long size;
	long steps;
	long report_every;
	long delay_ms;
	const char *module; /* --module, heat-drv only; NULL: the default */
};

/* "GPU-" + the 36 characters of a UUID + NUL, as nvidia-smi prints it. */
#define HEAT_UUID_LEN 41

static inline void heat_usage(FILE *out, const char *prog, int with_module)
{
	fprintf(out,
		"Usage: %s [OPTION]...\n"
		"Solve 2-D heat diffusion on an N x N grid on the GPU (%s) and print a\n"
		"checksum of the result. With libgpuckpt.so preloaded it checkpoints on\n"
		"SIGTERM (then exits) and SIGUSR1 (then goes on), and resumes from a\n"
		"checkpoint when GPUCKPT_RESTORE is set. Without the runtime it just runs.\n"
		"\n"
		"  --size N          grid edge, %ld..%ld (default 512)\n"
		"  --steps S         time steps, 0..%ld (default 2000)\n"
		"  --report-every K  print \"%s: step K\" every K steps, 0 for never\n"
		"                    (default 100)\n"
		"  --delay-ms MS     sleep MS milliseconds after each step, 0..%ld\n"
		"                    (default 0; lets tests signal a run half-way)\n",
		prog, with_module ? "CUDA driver API" : "CUDA runtime API", HEAT_SIZE_MIN,
		HEAT_SIZE_MAX, HEAT_STEPS_MAX, prog, HEAT_DELAY_MAX);
	if (with_module)
		fprintf(out,
			"  --module PATH     the kernels to load (default: $HEAT_MODULE, else\n"
			"                    heat_kernels.cubin beside the program)\n");
	fprintf(out, "  --help            print this and exit\n"
		     "\n"
		     "The runtime reads GPUCKPT_DIR (where checkpoints go), GPUCKPT_RESTORE (a\n"
		     "checkpoint directory, or \"auto\") and GPUCKPT_LOG_LEVEL.\n"
		     "Exit status: 0 done, 1 a CUDA or checkpoint call failed, 2 bad usage.\n");
}

/* Parse the value of option `opt` as a whole number in [min, max]. */
static inline int heat_parse_long(const char *prog, const char *opt, const char *text, long min,
				  long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (end == text || *end != '\0') {
		fprintf(stderr, "%s: --%s: '%s' is not a whole number\n", prog, opt, text);
		return -EINVAL;
	}
	if (errno == ERANGE || v < min || v > max) {
		fprintf(stderr, "%s: --%s: %s is out of range (%ld..%ld)\n", prog, opt, text, min,
			max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/*
 * Fill o from the command line. Returns 0 to run, 1 when --help was printed,
 * -EINVAL after a message on stderr naming the bad option.
 */
static inline int heat_parse_opts(struct heat_opts *o, const char *prog, int with_module, int argc,
				  char **argv)
{
	enum { OPT_SIZE = 256, OPT_STEPS, OPT_REPORT, OPT_DELAY, OPT_MODULE, OPT_HELP };
	static const struct option longopts[] = {
	    {"size", required_argument, NULL, OPT_SIZE},
	    {"steps", required_argument, NULL, OPT_STEPS},
	    {"report-every", required_argument, NULL, OPT_REPORT},
	    {"delay-ms", required_argument, NULL, OPT_DELAY},
	    {"module", required_argument, NULL, OPT_MODULE},
	    {"help", no_argument, NULL, OPT_HELP},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	o->size = 512;
	o->steps = 2000;
	o->report_every = 100;
	o->delay_ms = 0;
	o->module = NULL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SIZE:
			rc = heat_parse_long(prog, "size", optarg, HEAT_SIZE_MIN, HEAT_SIZE_MAX,
					     &o->size);
			break;
		case OPT_STEPS:
			rc = heat_parse_long(prog, "steps", optarg, 0, HEAT_STEPS_MAX, &o->steps);
			break;
		case OPT_REPORT:
			rc = heat_parse_long(prog, "report-every", optarg, 0, LONG_MAX,
					     &o->report_every);
			break;
		case OPT_DELAY:
			rc = heat_parse_long(prog, "delay-ms", optarg, 0, HEAT_DELAY_MAX,
					     &o->delay_ms);
			break;
		case OPT_MODULE:
			if (!with_module) {
				fprintf(stderr, "%s: unknown option '--module' (try --help)\n",
					prog);
				rc = -EINVAL;
			} else if (optarg[0] == '\0') {
				fprintf(stderr, "%s: --module: the path is empty\n", prog);
				rc = -EINVAL;
			}
			o->module = optarg;
			break;
		case OPT_HELP:
			heat_usage(stdout, prog, with_module);
			return 1;
		case ':':
			fprintf(stderr, "%s: %s needs a value\n", prog, argv[optind - 1]);
			rc = -EINVAL;
			break;
		default:
			fprintf(stderr, "%s: unknown option '%s' (try --help)\n", prog,
				argv[optind - 1]);
			rc = -EINVAL;
			break;
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", prog, argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/*
 * The initial temperature of cell (i, j) of an n x n grid: a hot top edge and
 * three hot discs, from integer arithmetic only, so that every run of every
 * variant starts from the same bytes.
 */
static inline float heat_initial(long i, long j, long n)
{
	static const struct {
		long ci, cj, r; /* centre and radius in tenths of the edge */
		float t;
	} spots[] = {{3, 3, 1, 80.0f}, {6, 7, 2, 60.0f}, {7, 2, 1, 40.0f}};
	float t = i == 0 ? 100.0f : 0.0f;

	for (size_t s = 0; s < sizeof(spots) / sizeof(spots[0]); s++) {
		long di = 10 * i - spots[s].ci * n, dj = 10 * j - spots[s].cj * n;
		long r = spots[s].r * n;

		if (di * di + dj * dj <= r * r)
			t += spots[s].t;
	}
	return t;
}

static inline void heat_fill_initial(float *grid, long n)
{
	for (long i = 0; i < n; i++)
		for (long j = 0; j < n; j++)
			grid[i * n + j] = heat_initial(i, j, n);
}

/* FNV-1a, 64 bits, over the bytes of the final grid. */
static inline uint64_t heat_fnv1a(const void *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t k = 0; k < len; k++) {
		h ^= p[k];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static inline void heat_format_uuid(const unsigned char b[16], char out[HEAT_UUID_LEN])
{
	snprintf(out, HEAT_UUID_LEN,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/* Sleep ms milliseconds; a signal (SIGUSR1 checkpoints) must not cut it short. */
static inline void heat_sleep_ms(long ms)
{
	struct timespec left;

	left.tv_sec = ms / 1000;
	left.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&left, &left) == -1 && errno == EINTR)
		;
}

#endif
