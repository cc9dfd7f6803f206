/*
 * group.c - ncclGroupStart/ncclGroupEnd: a depth per thread; collectives
 * called inside a group are checked at once and queued, and run in call
 * order at the outermost ncclGroupEnd, which returns the first failure.
 * Running them one after the other is enough for collectives that every
 * rank issues in the same order (what NCCL requires of a program anyway).
 */
#include <stdlib.h>

#include "nccl_standin.h"

static __thread int depth;
static __thread struct ns_coll *queue;
static __thread size_t queued, queue_cap;

ncclResult_t ns_coll_submit(const struct ns_coll *c)
{
	if (!depth)
		return ns_coll_run(c);
	if (queued == queue_cap) {
		size_t cap = queue_cap ? 2 * queue_cap : 16;
		struct ns_coll *q = realloc(queue, cap * sizeof(*q));

		if (!q) {
			ns_set_error("%s: out of memory for the group", ns_kind_name(c->kind));
			return ncclSystemError;
		}
		queue = q;
		queue_cap = cap;
	}
	queue[queued++] = *c;
	return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
	depth++;
	NS_RET(ncclSuccess, "depth %d", depth);
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t rc = ncclSuccess;
	size_t n;

	if (!depth) {
		ns_set_error("ncclGroupEnd without ncclGroupStart");
		NS_RET(ncclInvalidUsage, "depth 0");
	}
	if (--depth)
		NS_RET(ncclSuccess, "depth %d", depth + 1);
	n = queued;
	for (size_t i = 0; i < n; i++) {
		ncclResult_t one = ns_coll_run(&queue[i]);

		if (one && !rc)
			rc = one;
	}
	queued = 0;
	NS_RET(rc, "depth 1, %zu collectives", n);
}
