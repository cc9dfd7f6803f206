/*
 * agree - what the ranks' agreement at gpuckpt_mpi_point() costs (the
 * collective checkpoint point of gpuckpt_mpi.h) when nothing is due: every
 * rank calls it `--rate` times a second, `--points` times, the calls paced by
 * one clock from a common start (a sleep until each deadline stands for the
 * program's work), and the time spent inside each call is measured.
 *
 *	mpirun -n P [wrapper that preloads libgpuckpt] agree --points 20000 --rate 1000
 *
 * Rank 0 prints one line: ranks, points, rate, mean/median/p99/max of the
 * time inside a point over every rank, and that mean as a share of the time
 * between points (the overhead at that rate). --mode none leaves the point
 * out (the pacing alone, for comparison); --mode layer (default) calls it.
 * Without the runtime preloaded the point does nothing; the line says which.
 */
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuckpt_coord.h"
#include "gpuckpt_mpi.h"

#pragma weak gpuckpt_coord_attach

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long points = 20000, rate = 1000;
	int layer = 1, rank, size, rc;
	int64_t *t, *all = NULL, t0;
	double sum = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--points") && i + 1 < argc)
			points = atol(argv[++i]);
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			rate = atol(argv[++i]);
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			layer = strcmp(argv[++i], "none") != 0;
		else {
			fprintf(stderr, "usage: agree [--points N] [--rate PER_SECOND] [--mode layer|none]\n");
			return 2;
		}
	}
	if (points < 10 || rate < 1 || rate > 1000000) {
		fprintf(stderr, "agree: --points at least 10, --rate 1..1000000\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	t = calloc((size_t)points, sizeof(*t));
	if (rank == 0)
		all = calloc((size_t)points * (size_t)size, sizeof(*all));
	if (!t || (rank == 0 && !all))
		MPI_Abort(MPI_COMM_WORLD, 1);
	rc = layer ? gpuckpt_mpi_init(MPI_COMM_WORLD) : 0;
	if (rc < 0)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_ns() + 10000000;
	MPI_Bcast(&t0, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
	for (long i = 0; i < points; i++) {
		int64_t due = t0 + i * (1000000000 / rate), a, b;
		struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		a = now_ns();
		if (layer && gpuckpt_mpi_point(i) < 0)
			MPI_Abort(MPI_COMM_WORLD, 1);
		b = now_ns();
		t[i] = b - a;
	}
	if (layer)
		gpuckpt_mpi_finalize();
	MPI_Gather(t, (int)points, MPI_INT64_T, all, (int)points, MPI_INT64_T, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		size_t n = (size_t)points * (size_t)size;

		for (size_t i = 0; i < n; i++)
			sum += (double)all[i];
		qsort(all, n, sizeof(*all), cmp_i64);
		printf("agree: ranks=%d points=%ld rate=%ld/s mode=%s runtime=%s mean=%.2fus "
		       "median=%.2fus p99=%.2fus max=%.1fus overhead=%.3f%%\n",
		       size, points, rate, layer ? "layer" : "none",
		       gpuckpt_coord_attach ? "preloaded" : "absent", sum / (double)n / 1e3,
		       (double)all[n / 2] / 1e3, (double)all[n * 99 / 100] / 1e3,
		       (double)all[n - 1] / 1e3, sum / (double)n / (1e9 / (double)rate) * 100);
	}
	free(t);
	free(all);
	MPI_Finalize();
	return 0;
}
