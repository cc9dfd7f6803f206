/*
 * gpu-tables - a mostly static device state, for incremental and background
 * checkpoints: large tables that are read far more than written (a few 1 MiB
 * blocks rewritten per step) and a small state rewritten every step. Plain C
 * over the CUDA driver API, no kernels: copies and memsets are the device
 * writes, so the same program runs on a GPU and on the driver stand-in.
 *
 * The content of every block is a function of the step that last wrote it
 * (kept in a host table registered with gpuckpt_protect), so the checksum
 * at the end depends only on the number of steps: a run restored from any
 * checkpoint must end with the checksum of an uninterrupted run.
 *
 * --scribble: right after a checkpoint point that took a checkpoint, the
 * whole of the tables is overwritten with garbage and then written back: a
 * checkpoint still being written in the background must contain none of it.
 *
 * --devices N: the tables spread over the first N devices (table t on device
 * t mod N), each with its primary context: a checkpoint then copies from
 * several contexts. The checksum does not depend on N.
 *
 * --pool MIB: besides, a preallocated pool as a framework keeps one (JAX's
 * 75 %): MIB of device memory of which only the first sixteenth is used
 * (written at the start, one block of it rewritten per step), the rest zero.
 * A restored run's setup fills the pool with garbage before the checkpoint is
 * loaded, so that only a restore that sets the zero chunks ends with the
 * uninterrupted run's checksum. The checksum covers the whole pool.
 *
 * Output (tests/gpu/scenario.sh parses it, as heat_app.h's):
 *	gpu-tables: fresh start: size=N steps=S device=NAME (UUID)
 *	gpu-tables: resumed from step K on device=NAME (UUID)
 *	gpu-tables: step K
 *	gpu-tables: checkpoint at step K
 *	gpu-tables: done: steps=S checksum=0x%016llx
 */
#include <cuda.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuckpt_optional.h"

#define PROG "gpu-tables"
#include "gpu_drv.h"
#define BLOCK (1u << 20)
#define NTABLES 4
#define STATE_BYTES (64u << 10)

#define MAX_DEVICES 8

struct opts {
	long size_mib, steps, report_every, delay_ms, updates, devices, pool_mib;
	int scribble;
};


static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PROG " [OPTION]...\n"
		"Keep large tables in device memory and rewrite a few 1 MiB blocks of them,\n"
		"and a small state, each step; print a checksum of everything at the end.\n"
		"With libgpuckpt.so preloaded it checkpoints on SIGTERM (then exits) and\n"
		"SIGUSR1 (then goes on), and resumes when GPUCKPT_RESTORE is set.\n"
		"\n"
		"  --size MIB        tables in MiB, 4..1048576 (default 64)\n"
		"  --steps S         steps, 0..1000000000 (default 400)\n"
		"  --report-every K  print \"" PROG ": step K\" every K steps, 0 never (100)\n"
		"  --delay-ms MS     sleep after each step, 0..3600000 (default 0)\n"
		"  --updates N       blocks rewritten per step, 0..1024 (default 1)\n"
		"  --scribble        after each checkpoint, overwrite the tables with garbage\n"
		"                    and write them back\n"
		"  --devices N       spread the tables over the first N devices, 1..8 (1)\n"
		"  --pool MIB        also a pool of MIB, 16..1048576, a sixteenth of it used,\n"
		"                    the rest zero (default none)\n"
		"  --help            print this and exit\n"
		"Exit status: 0 done, 1 a CUDA or checkpoint call failed, 2 bad usage.\n");
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	enum {
		O_SIZE = 256,
		O_STEPS,
		O_REPORT,
		O_DELAY,
		O_UPDATES,
		O_SCRIBBLE,
		O_DEVICES,
		O_POOL,
		O_HELP
	};
	static const struct option longopts[] = {
	    {"size", required_argument, NULL, O_SIZE},
	    {"steps", required_argument, NULL, O_STEPS},
	    {"report-every", required_argument, NULL, O_REPORT},
	    {"delay-ms", required_argument, NULL, O_DELAY},
	    {"updates", required_argument, NULL, O_UPDATES},
	    {"scribble", no_argument, NULL, O_SCRIBBLE},
	    {"devices", required_argument, NULL, O_DEVICES},
	    {"pool", required_argument, NULL, O_POOL},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	*o = (struct opts){64, 400, 100, 0, 1, 1, 0, 0};
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case O_SIZE:
			rc = parse_long("size", optarg, 4, 1048576, &o->size_mib);
			break;
		case O_STEPS:
			rc = parse_long("steps", optarg, 0, 1000000000, &o->steps);
			break;
		case O_REPORT:
			rc = parse_long("report-every", optarg, 0, LONG_MAX, &o->report_every);
			break;
		case O_DELAY:
			rc = parse_long("delay-ms", optarg, 0, 3600000, &o->delay_ms);
			break;
		case O_UPDATES:
			rc = parse_long("updates", optarg, 0, 1024, &o->updates);
			break;
		case O_SCRIBBLE:
			o->scribble = 1;
			break;
		case O_DEVICES:
			rc = parse_long("devices", optarg, 1, MAX_DEVICES, &o->devices);
			break;
		case O_POOL:
			rc = parse_long("pool", optarg, 16, 1048576, &o->pool_mib);
			break;
		case O_HELP:
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, PROG ": unknown option or missing value: '%s' (try --help)\n",
				argv[optind - 1]);
			rc = -1;
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s' (try --help)\n", argv[optind]);
		rc = -1;
	}
	return rc;
}

struct dev_state {
	CUcontext ctx[MAX_DEVICES]; /* table t lives in ctx[t % ndev], the state in ctx[0] */
	int ndev;
	CUdeviceptr tables[NTABLES];
	size_t table_bytes;
	size_t nblocks; /* over all tables */
	CUdeviceptr state;
	CUdeviceptr pool; /* --pool: on the first device; 0 when none */
	size_t pool_blocks, pool_used;
	uint64_t *gens; /* per block: the step that wrote it last (registered) */
	uint64_t *buf;  /* host staging, one block */
};

/* The address of block b; its device's context made current. */
static CUdeviceptr block_addr(const struct dev_state *s, size_t b)
{
	size_t per = s->table_bytes / BLOCK;

	CK(cuCtxSetCurrent(s->ctx[(b / per) % (size_t)s->ndev]));
	return s->tables[b / per] + (b % per) * (size_t)BLOCK;
}

static void write_block(struct dev_state *s, size_t b)
{
	CUdeviceptr at = block_addr(s, b);

	fill_block(s->buf, BLOCK / 8, b, s->gens[b]);
	CK(cuMemcpyHtoD(at, s->buf, BLOCK));
}

/* Every device's work finished; the first device's context current. */
static void sync_all(const struct dev_state *s)
{
	for (int d = s->ndev - 1; d >= 0; d--) {
		CK(cuCtxSetCurrent(s->ctx[d]));
		CK(cuCtxSynchronize());
	}
}

/* The blocks a step rewrites: spread over the tables, the same in every run. */
static size_t block_of_step(const struct dev_state *s, long step, long i, long updates)
{
	return (size_t)(mix((uint64_t)step * (uint64_t)updates + (uint64_t)i) % s->nblocks);
}

static uint64_t checksum(struct dev_state *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t b = 0; b < s->nblocks; b++) {
		CUdeviceptr at = block_addr(s, b);

		CK(cuMemcpyDtoH(s->buf, at, BLOCK));
		for (size_t i = 0; i < BLOCK / 8; i += 7)
			h = mix(h ^ s->buf[i]);
	}
	CK(cuCtxSetCurrent(s->ctx[0]));
	CK(cuMemcpyDtoH(s->buf, s->state, STATE_BYTES));
	for (size_t i = 0; i < STATE_BYTES / 8; i++)
		h = mix(h ^ s->buf[i]);
	/* Every word of the pool: a zero chunk restored as anything else shows. */
	for (size_t b = 0; b < s->pool_blocks; b++) {
		uint64_t acc = 0;

		CK(cuMemcpyDtoH(s->buf, s->pool + b * (size_t)BLOCK, BLOCK));
		for (size_t i = 0; i < BLOCK / 8; i++)
			acc = acc * 31 + s->buf[i];
		h = mix(h ^ acc ^ b);
	}
	return h;
}

/* Pool block b (of the used ones) as step `gen` writes it. */
static void write_pool_block(struct dev_state *s, size_t b, uint64_t gen)
{
	fill_block(s->buf, BLOCK / 8, 0x10000000u + b, gen);
	CK(cuCtxSetCurrent(s->ctx[0]));
	CK(cuMemcpyHtoD(s->pool + b * (size_t)BLOCK, s->buf, BLOCK));
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct dev_state s;
	char name[256], uuid_text[64];
	CUuuid uuid;
	CUdevice dev;
	CUcontext ctx;
	long step = 0, resumed;
	int rc = parse_opts(&o, argc, argv);

	if (rc)
		return rc > 0 ? 0 : 2;
	memset(&s, 0, sizeof(s));
	CK(cuInit(0));
	s.ndev = (int)o.devices;
	for (int d = s.ndev - 1; d >= 0; d--) {
		CK(cuDeviceGet(&dev, d));
		CK(cuDevicePrimaryCtxRetain(&ctx, dev));
		s.ctx[d] = ctx;
	}
	CK(cuCtxSetCurrent(ctx));
	CK(cuDeviceGetName(name, sizeof(name), dev));
	CK(cuDeviceGetUuid(&uuid, dev));
	snprintf(uuid_text, sizeof(uuid_text),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 (unsigned char)uuid.bytes[0], (unsigned char)uuid.bytes[1],
		 (unsigned char)uuid.bytes[2], (unsigned char)uuid.bytes[3],
		 (unsigned char)uuid.bytes[4], (unsigned char)uuid.bytes[5],
		 (unsigned char)uuid.bytes[6], (unsigned char)uuid.bytes[7],
		 (unsigned char)uuid.bytes[8], (unsigned char)uuid.bytes[9],
		 (unsigned char)uuid.bytes[10], (unsigned char)uuid.bytes[11],
		 (unsigned char)uuid.bytes[12], (unsigned char)uuid.bytes[13],
		 (unsigned char)uuid.bytes[14], (unsigned char)uuid.bytes[15]);

	/* Setup: the same in a fresh and a restored run. */
	s.table_bytes = (size_t)o.size_mib / NTABLES * BLOCK;
	if (s.table_bytes < BLOCK)
		s.table_bytes = BLOCK;
	s.nblocks = NTABLES * (s.table_bytes / BLOCK);
	s.gens = calloc(s.nblocks, sizeof(*s.gens));
	s.buf = malloc(BLOCK);
	if (!s.gens || !s.buf) {
		fprintf(stderr, PROG ": out of host memory\n");
		return 1;
	}
	for (int t = 0; t < NTABLES; t++) {
		CK(cuCtxSetCurrent(s.ctx[t % s.ndev]));
		CK(cuMemAlloc(&s.tables[t], s.table_bytes));
	}
	CK(cuCtxSetCurrent(s.ctx[0]));
	CK(cuMemAlloc(&s.state, STATE_BYTES));
	for (size_t b = 0; b < s.nblocks; b++)
		write_block(&s, b);
	CK(cuCtxSetCurrent(s.ctx[0]));
	CK(cuMemsetD32(s.state, 0, STATE_BYTES / 4));
	if (o.pool_mib) {
		s.pool_blocks = (size_t)o.pool_mib;
		s.pool_used = s.pool_blocks / 16;
		CK(cuMemAlloc(&s.pool, s.pool_blocks * (size_t)BLOCK));
		/* Garbage: a fresh start zeroes it below, a restore must. */
		CK(cuMemsetD32(s.pool, 0xdeadbeefu, s.pool_blocks * (size_t)BLOCK / 4));
	}
	ckpt_protect("step", &step, sizeof(step));
	ckpt_protect("generations", s.gens, s.nblocks * sizeof(*s.gens));

	rc = ckpt_restarting(&resumed);
	if (rc < 0) {
		fprintf(stderr, PROG ": gpuckpt_restarting: %s\n", ckpt_strerror(rc));
		return 1;
	}
	if (rc > 0) {
		printf(PROG ": resumed from step %ld on device=%s (%s)\n", resumed, name, uuid_text);
	} else {
		printf(PROG ": fresh start: size=%ld steps=%ld device=%s (%s)\n", o.size_mib,
		       o.steps, name, uuid_text);
		if (s.pool) {
			CK(cuCtxSetCurrent(s.ctx[0]));
			CK(cuMemsetD8(s.pool, 0, s.pool_blocks * (size_t)BLOCK));
			for (size_t b = 0; b < s.pool_used; b++)
				write_pool_block(&s, b, 0);
		}
	}
	fflush(stdout);

	for (;;) {
		rc = ckpt_point(step);
		if (rc < 0) {
			fprintf(stderr, PROG ": gpuckpt_point: %s\n", ckpt_strerror(rc));
			return 1;
		}
		if (rc == GPUCKPT_SAVED) {
			printf(PROG ": checkpoint at step %ld\n", step);
			fflush(stdout);
			if (o.scribble) {
				for (int t = 0; t < NTABLES; t++) {
					CK(cuCtxSetCurrent(s.ctx[t % s.ndev]));
					CK(cuMemsetD32(s.tables[t], 0xdeadbeefu, s.table_bytes / 4));
				}
				sync_all(&s);
				sleep_ms(50);
				for (size_t b = 0; b < s.nblocks; b++)
					write_block(&s, b);
			}
		}
		if (step >= o.steps)
			break;
		step++;
		for (long i = 0; i < o.updates; i++) {
			size_t b = block_of_step(&s, step, i, o.updates);

			s.gens[b] = (uint64_t)step;
			write_block(&s, b);
		}
		if (s.pool)
			write_pool_block(&s, (size_t)step % s.pool_used, (uint64_t)step);
		CK(cuCtxSetCurrent(s.ctx[0]));
		CK(cuMemsetD32(s.state + (size_t)(step % (STATE_BYTES / 4)) * 4,
			       (unsigned)step, 1));
		sync_all(&s);
		if (o.report_every && step % o.report_every == 0) {
			printf(PROG ": step %ld\n", step);
			fflush(stdout);
		}
		sleep_ms(o.delay_ms);
	}
	printf(PROG ": done: steps=%ld checksum=0x%016llx\n", o.steps,
	       (unsigned long long)checksum(&s));
	return 0;
}
