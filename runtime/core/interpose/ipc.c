/*
 * ipc.c - legacy CUDA IPC (cuIpcGetMemHandle / cuIpcOpenMemHandle /
 * cuIpcCloseMemHandle) of device memory the runtime placed.
 *
 * Placed memory is VMM memory, which the driver's legacy IPC refuses. So the
 * runtime serves it itself, with the VMM API underneath (gk_arena_ipc_wanted:
 * unless GPUCKPT_CUDA_IPC=0; making all placed memory exportable costs
 * nothing measurable, runtime/core/README.md). With GPUCKPT_CUDA_IPC=0
 * track_hooks.c refuses cuIpcGetMemHandle of placed memory and
 * cuIpcOpenMemHandle of a gpuckpt handle, and nothing here runs:
 *
 * - Export: cuIpcGetMemHandle of a placed cuMemAlloc block writes a gpuckpt
 *   handle (magic, the exporter's pid, a random per-process nonce, the
 *   block's address and size) and starts, once, a listener thread on the
 *   abstract unix socket "gpuckpt-ipc-PID-NONCE". The placement's physical
 *   memory is created exportable as a POSIX file descriptor (arena.c).
 * - Open: cuIpcOpenMemHandle of such a handle connects to that socket; the
 *   exporter checks that the peer is of its own user, exports the segments
 *   under the block (gk_arena_export) and passes their descriptors
 *   (SCM_RIGHTS); the importer checks that the listener is the handle's pid
 *   of its own user, imports them, reserves address space, maps them in
 *   order and grants its device read/write access. The address it returns
 *   stays valid until cuIpcCloseMemHandle, which unmaps, releases and frees.
 * - Handles that are not gpuckpt's (memory not placed, another process not
 *   under gpuckpt) go to the driver as before.
 *
 * Application checkpoints (runtime/core/README.md, "Legacy CUDA IPC"): the
 * exporter's block is placed memory, saved and re-created at its address as
 * any other; the importer's range is not its own and is not saved. After a
 * restart the program's setup exports and opens again (new handles), and
 * place() puts the n-th open at the address it had. The importer's manifest
 * lists its imports (open number, address, size, the exporter's address);
 * the restore is refused unless the program opened the same again, in the
 * same order, before its first checkpoint point (gk_ipc_check_restored).
 * The importer's restore point then waits until each process it imported
 * from has passed its own (gk_ipc_wait_exporters): until the exporter has
 * loaded its checkpoint, what the importer reads there is the exporter's
 * fresh setup. Imports are tracked as IPC_IMPORT and exporters that served
 * one as IPC_EXPORT, which only the driver's checkpoint (transparent mode)
 * refuses ("REFUSE ipc"); an import that could not go to its place is
 * IPC_OPEN, refused by both. A segment holds whole 2 MiB granules: an
 * importer maps the granules under the block, so it can reach the
 * exporter's other small blocks that share them (the driver's own legacy
 * IPC maps whole allocations, also of a sub-allocating allocator).
 */
#include "config.h"

#include "core/interpose/ipc.h"
#include "core/driver/driver.h"
#include "core/placement/arena.h"
#include "core/placement/layout.h"
#include "core/state/runtime.h"
#include "core/state/track.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GK_IPC_MAGIC "GKIPC01"
/* The same request, asking "have you passed your restore point?" */
#define GK_IPC_WAIT_MAGIC "GKIPCW1"
/* How long an importer's restore point waits for an exporter's. */
#define GK_IPC_SETTLE_WAIT_S 60

struct gk_ipc_handle {
	char magic[8];
	int32_t pid;
	uint32_t zero;
	uint64_t nonce;
	uint64_t addr;
	uint64_t size;
	char pad[24];
};
_Static_assert(sizeof(struct gk_ipc_handle) == sizeof(CUipcMemHandle), "IPC handle size");

struct gk_ipc_request {
	char magic[8];
	uint64_t nonce;
	uint64_t addr;
};

struct gk_ipc_reply {
	int32_t status; /* 0 or a negative errno */
	int32_t nseg;
	uint64_t offset, size;
	uint64_t len[GK_ARENA_EXPORT_MAX];
};

/* The answer to GK_IPC_WAIT_MAGIC: 1 when the exporter restored from its
 * checkpoint, 0 when it started afresh; status as in gk_ipc_reply. */
struct gk_ipc_settled {
	int32_t status;
	int32_t restored;
};

/* ---- exporter ---- */

/* Whether this process has passed its first checkpoint point: -1 not yet,
 * 0 it started afresh, 1 it restored (gk_ipc_settle). */
static pthread_mutex_t settle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t settle_cond = PTHREAD_COND_INITIALIZER;
static int settled = -1;

static pthread_once_t listen_once = PTHREAD_ONCE_INIT;
static int listen_fd = -1;
static uint64_t my_nonce;

static void socket_name(struct sockaddr_un *sa, socklen_t *len, long pid, uint64_t nonce)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is 0, the name follows, not NUL-terminated. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "gpuckpt-ipc-%ld-%016llx", pid,
		     (unsigned long long)nonce);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

void gk_ipc_settle(int restored)
{
	pthread_mutex_lock(&settle_lock);
	settled = restored;
	pthread_cond_broadcast(&settle_cond);
	pthread_mutex_unlock(&settle_lock);
}

/* An importer's "wait": answered once this process has passed its first
 * point, from a thread of its own, so that the listener goes on serving
 * opens meanwhile (another importer's setup may be what this process waits
 * for before its point). */
static void *answer_settled(void *arg)
{
	int c = (int)(intptr_t)arg;
	struct gk_ipc_settled a = {0, 0};
	struct timespec until;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GK_IPC_SETTLE_WAIT_S;
	pthread_mutex_lock(&settle_lock);
	while (settled < 0 && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&settle_cond, &settle_lock, &until);
	a.restored = settled;
	pthread_mutex_unlock(&settle_lock);
	if (a.restored < 0)
		a.status = -ETIMEDOUT;
	if (send(c, &a, sizeof(a), MSG_NOSIGNAL) != (ssize_t)sizeof(a))
		gk_warn("ipc: answering an importer's wait: %s", strerror(errno));
	close(c);
	return NULL;
}

/* 1 when c went to a thread of its own (it closes it), else 0. */
static int serve(int c)
{
	struct gk_ipc_request req;
	struct gk_ipc_reply rep;
	struct gk_arena_export ex;
	struct ucred cred = {0, (uid_t)-1, (gid_t)-1};
	socklen_t clen = sizeof(cred);
	struct timeval tv = {5, 0};
	struct gk_arena *a;
	char cbuf[CMSG_SPACE(sizeof(int) * GK_ARENA_EXPORT_MAX)];
	struct iovec iov = {&rep, sizeof(rep)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	memset(&rep, 0, sizeof(rep));
	memset(&ex, 0, sizeof(ex));
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.uid != getuid()) {
		gk_warn("ipc: refused a connection from uid %ld, not this process's user",
			(long)cred.uid);
		return 0;
	}
	n = recv(c, &req, sizeof(req), MSG_WAITALL);
	if (n == (ssize_t)sizeof(req) && !memcmp(req.magic, GK_IPC_WAIT_MAGIC, 8) &&
	    req.nonce == my_nonce) {
		pthread_attr_t attr;
		sigset_t all, old;
		pthread_t t;
		int rc;

		tv.tv_sec = GK_IPC_SETTLE_WAIT_S + 5;
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&t, &attr, answer_settled, (void *)(intptr_t)c);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
		if (rc == 0)
			return 1;
		gk_warn("ipc: cannot answer an importer's wait: %s", strerror(rc));
		return 0;
	}
	if (n != (ssize_t)sizeof(req) || memcmp(req.magic, GK_IPC_MAGIC, 8) ||
	    req.nonce != my_nonce) {
		rep.status = -EINVAL;
	} else if (!(a = gk_arena_of(req.addr))) {
		rep.status = -ENOENT;
	} else {
		if (a->ctx)
			gk_real.cuCtxSetCurrent(a->ctx);
		rep.status = gk_arena_export(a, req.addr, &ex);
	}
	if (!rep.status) {
		struct cmsghdr *cm;

		rep.nseg = ex.nseg;
		rep.offset = ex.offset;
		rep.size = ex.size;
		memcpy(rep.len, ex.len, sizeof(rep.len));
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)ex.nseg);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)ex.nseg);
		memcpy(CMSG_DATA(cm), ex.fd, sizeof(int) * (size_t)ex.nseg);
	}
	if (sendmsg(c, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(rep))
		gk_warn("ipc: answering process %ld: %s", (long)cred.pid, strerror(errno));
	else if (!rep.status)
		/* Another process now maps this one's memory: a checkpoint of
		 * this process alone would not restore what it sees. */
		gk_track(GK_UNSUP_IPC_EXPORT, 1);
	for (int i = 0; i < ex.nseg; i++)
		close(ex.fd[i]);
	return 0;
}

static void *listener(void *arg)
{
	(void)arg;
	gk_driver_relax();
	for (;;) {
		int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			gk_error("ipc: accepting on the IPC socket: %s; no more importers are served",
				 strerror(errno));
			return NULL;
		}
		if (!serve(c))
			close(c);
	}
}

/* A child of fork has no listener thread: its first export starts its own. */
static void after_fork(void)
{
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	listen_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

static void start_listener(void)
{
	struct sockaddr_un sa;
	socklen_t len;
	sigset_t all, old;
	pthread_t t;
	int fd, rc;

	if (getrandom(&my_nonce, sizeof(my_nonce), 0) != (ssize_t)sizeof(my_nonce)) {
		gk_error("ipc: cannot serve CUDA IPC of placed memory: %s: %s", "getrandom",
			 strerror(errno));
		return;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		gk_error("ipc: cannot serve CUDA IPC of placed memory: %s: %s", "socket",
			 strerror(errno));
		return;
	}
	socket_name(&sa, &len, (long)getpid(), my_nonce);
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 16)) {
		gk_error("ipc: cannot serve CUDA IPC of placed memory: %s: %s", sa.sun_path + 1,
			 strerror(errno));
		close(fd);
		return;
	}
	listen_fd = fd;
	/* The thread takes no signal: the program's and the runtime's stay elsewhere. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, NULL, listener, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		gk_error("ipc: cannot serve CUDA IPC of placed memory: %s: %s", "pthread_create",
			 strerror(rc));
		close(fd);
		listen_fd = -1;
		return;
	}
	pthread_detach(t);
	pthread_setname_np(t, "gpuckpt-ipc");
	pthread_atfork(NULL, NULL, after_fork);
}

CUresult gk_ipc_export(CUipcMemHandle *out, CUdeviceptr dptr)
{
	struct gk_arena *a = gk_arena_of(dptr);
	struct gk_ipc_handle h = {.magic = GK_IPC_MAGIC};
	struct gk_block *b;
	uint64_t size = 0;
	int ok;

	if (!out || !a)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&a->lock);
	b = gk_arena_find(a, dptr);
	ok = b && b->iv.start == dptr && b->kind != GK_KIND_ASYNC;
	if (ok)
		size = b->size;
	pthread_mutex_unlock(&a->lock);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&listen_once, start_listener);
	if (listen_fd < 0)
		return CUDA_ERROR_NOT_SUPPORTED; /* start_listener said why */
	h.pid = (int32_t)getpid();
	h.nonce = my_nonce;
	h.addr = dptr;
	h.size = size;
	memcpy(out, &h, sizeof(h));
	return CUDA_SUCCESS;
}

/* ---- importer ---- */

struct import {
	enum gk_unsupported kind; /* IPC_IMPORT: at its place; IPC_OPEN: elsewhere */
	uint64_t ordinal;	  /* this process's n-th open, from 0 */
	int32_t pid;		  /* the exporter, and its listener's nonce */
	uint64_t nonce;
	uint64_t exporter_addr, size; /* the block, as its exporter has it */
	CUdeviceptr ptr, va; /* the block; where the segments are mapped */
	CUdeviceptr resv;    /* the reservation holding them (the whole slot) */
	uint64_t resv_size;
	uint64_t total;
	int nseg;
	uint64_t len[GK_ARENA_EXPORT_MAX];
	CUmemGenericAllocationHandle mem[GK_ARENA_EXPORT_MAX];
	struct import *next;
};

static pthread_mutex_t imports_lock = PTHREAD_MUTEX_INITIALIZER;
static struct import *imports;
static uint64_t import_cursor; /* imports_lock; the next slot of the window */
static uint64_t opens;	       /* imports_lock; how many opens place() saw */

/*
 * Where imports go: a window of their own below the device slices, cut into
 * one slot per open, in the order of the opens. A slot is the block's
 * granules with IMPORT_SLACK on each side (the exporter's segments may extend
 * past the block), and the block lands at the same place in its slot in every
 * run: a program that opens the same handles in the same order after a
 * restart gets the same addresses, wherever the exporter's segments start.
 *
 * The whole slot is reserved, at its start, and the segments are mapped
 * inside it: the driver would put a reservation of the segments alone in its
 * own pool, where a restart could not ask for it again (layout.h). Slots are
 * whole multiples of IMPORT_ALIGN, a multiple of GK_HINT_ALIGN.
 */
#define IMPORT_SLACK (4ull << 30)
#define IMPORT_ALIGN (4ull << 30)

static CUresult place(struct import *im, const struct gk_ipc_handle *h,
		      const struct gk_ipc_reply *rep)
{
	uint64_t lo = h->addr & (GK_GRANULE - 1), slot, start = 0, want = 0, ptr;
	uint64_t vb = gk_rt.settings.va_base;
	CUresult r;

	slot = gk_align_up(lo + rep->size, GK_GRANULE) + 2 * IMPORT_SLACK;
	slot = gk_align_up(slot, IMPORT_ALIGN);
	pthread_mutex_lock(&imports_lock);
	im->ordinal = opens++;
	im->exporter_addr = h->addr;
	im->size = rep->size;
	if (!import_cursor && vb > 2 * GK_IMPORT_WINDOW)
		import_cursor = gk_align_up(vb - GK_IMPORT_WINDOW, IMPORT_ALIGN);
	if (import_cursor && import_cursor + slot <= vb) {
		ptr = import_cursor + IMPORT_SLACK + lo;
		if (rep->offset % GK_GRANULE == lo && rep->offset <= IMPORT_SLACK + lo &&
		    ptr - rep->offset + im->total <= import_cursor + slot) {
			start = import_cursor;
			want = ptr - rep->offset;
		}
		import_cursor += slot;
	}
	pthread_mutex_unlock(&imports_lock);
	im->resv_size = want ? slot : im->total;
	r = gk_real.cuMemAddressReserve(&im->resv, im->resv_size, GK_GRANULE, start, 0);
	if (r != CUDA_SUCCESS)
		return r;
	im->va = im->resv;
	if (want && im->resv == start) {
		im->va = want;
	} else if (want) {
		/* The slot was taken: the segments alone, wherever the driver likes. */
		gk_real.cuMemAddressFree(im->resv, im->resv_size);
		im->resv_size = im->total;
		r = gk_real.cuMemAddressReserve(&im->resv, im->total, GK_GRANULE, 0, 0);
		if (r != CUDA_SUCCESS) {
			im->resv = 0;
			return r;
		}
		im->va = im->resv;
	}
	im->kind = GK_UNSUP_IPC_IMPORT;
	if (im->va != want) {
		/* Elsewhere: a restart could not give it back; checkpoints refuse it. */
		gk_warn("ipc: 0x%llx of process %ld mapped at 0x%llx, not at its place 0x%llx: "
			"checkpoints will be refused",
			(unsigned long long)h->addr, (long)h->pid, (unsigned long long)im->va,
			(unsigned long long)want);
		im->kind = GK_UNSUP_IPC_OPEN;
	}
	return CUDA_SUCCESS;
}

int gk_ipc_is_ours(const CUipcMemHandle *handle)
{
	return !memcmp(handle->reserved, GK_IPC_MAGIC, 8);
}

/* A connection to the listener of exporter pid, answering within `secs`.
 * -1 when it could not connect (errno says why); -2 when the listener is
 * not that process of this user (*cred says who). */
static int connect_exporter(int32_t pid, uint64_t nonce, int secs, struct ucred *cred)
{
	struct timeval tv = {secs, 0};
	struct sockaddr_un sa;
	socklen_t clen = sizeof(*cred), len;
	int c;

	cred->pid = 0;
	cred->uid = (uid_t)-1;
	socket_name(&sa, &len, (long)pid, nonce);
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -1;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(c, (struct sockaddr *)&sa, len)) {
		int e = errno;

		close(c);
		errno = e;
		return -1;
	}
	/* Whoever listens must be the handle's process, of this user. */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, cred, &clen) || cred->pid != pid ||
	    cred->uid != getuid()) {
		close(c);
		return -2;
	}
	return c;
}

/* Asks the exporter; fills rep and fds (nseg of them). 0 or a CUresult. */
static CUresult ask(const struct gk_ipc_handle *h, struct gk_ipc_reply *rep, int *fds)
{
	struct gk_ipc_request req = {.magic = GK_IPC_MAGIC, .nonce = h->nonce, .addr = h->addr};
	char cbuf[CMSG_SPACE(sizeof(int) * GK_ARENA_EXPORT_MAX)];
	struct iovec iov = {rep, sizeof(*rep)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	struct ucred cred;
	struct cmsghdr *cm;
	int c, nfd = 0;
	ssize_t n;

	c = connect_exporter(h->pid, h->nonce, 10, &cred);
	if (c == -1)
		gk_error("ipc: opening a handle of process %ld: %s (the exporter gone?)",
			 (long)h->pid, strerror(errno));
	else if (c == -2)
		gk_error("ipc: the IPC socket of process %ld is held by process %ld of uid %ld: "
			 "not opened",
			 (long)h->pid, (long)cred.pid, (long)cred.uid);
	if (c < 0)
		return CUDA_ERROR_INVALID_HANDLE;
	if (send(c, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req)) {
		close(c);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	memset(cbuf, 0, sizeof(cbuf));
	n = recvmsg(c, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	close(c);
	if (n < 0)
		msg.msg_controllen = 0; /* nothing received: no descriptors to read */
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && !nfd) {
			nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (nfd > GK_ARENA_EXPORT_MAX)
				nfd = GK_ARENA_EXPORT_MAX;
			memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)nfd);
		}
	if (n != (ssize_t)sizeof(*rep) || rep->status || rep->nseg <= 0 ||
	    rep->nseg > GK_ARENA_EXPORT_MAX || nfd != rep->nseg || (msg.msg_flags & MSG_CTRUNC)) {
		for (int i = 0; i < nfd; i++)
			close(fds[i]);
		gk_error("ipc: process %ld did not export 0x%llx: %s", (long)h->pid,
			 (unsigned long long)h->addr,
			 n == (ssize_t)sizeof(*rep) && rep->status ? strerror(-rep->status)
								   : "bad answer");
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_SUCCESS;
}

static void undo(struct import *im, int mapped)
{
	uint64_t at = im->va;

	for (int i = 0; i < im->nseg; i++) {
		if (i < mapped)
			gk_real.cuMemUnmap(at, im->len[i]);
		if (im->mem[i])
			gk_real.cuMemRelease(im->mem[i]);
		at += im->len[i];
	}
	if (im->resv)
		gk_real.cuMemAddressFree(im->resv, im->resv_size);
}

CUresult gk_ipc_open(CUdeviceptr *pdptr, const CUipcMemHandle *handle)
{
	struct gk_ipc_handle h;
	struct gk_ipc_reply rep;
	int fds[GK_ARENA_EXPORT_MAX];
	struct import *im;
	CUmemAccessDesc acc = {0};
	CUdevice dev;
	CUresult r;
	uint64_t at;
	int mapped = 0;

	memcpy(&h, handle, sizeof(h));
	if (!pdptr || h.pid <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (h.pid == (int32_t)getpid())
		return CUDA_ERROR_INVALID_CONTEXT; /* as the driver: not one's own memory */
	r = gk_real.cuCtxGetDevice(&dev);
	if (r != CUDA_SUCCESS)
		return r;
	memset(&rep, 0, sizeof(rep));
	r = ask(&h, &rep, fds);
	if (r != CUDA_SUCCESS)
		return r;
	im = calloc(1, sizeof(*im));
	if (!im) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_fds;
	}
	im->nseg = rep.nseg;
	im->pid = h.pid;
	im->nonce = h.nonce;
	for (int i = 0; i < rep.nseg; i++) {
		im->len[i] = rep.len[i];
		im->total += rep.len[i];
		r = gk_real.cuMemImportFromShareableHandle(&im->mem[i], (void *)(intptr_t)fds[i],
							   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
		if (r != CUDA_SUCCESS)
			goto out_undo;
	}
	if (rep.offset >= im->total || rep.size > im->total - rep.offset) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out_undo;
	}
	r = place(im, &h, &rep);
	if (r != CUDA_SUCCESS)
		goto out_undo;
	at = im->va;
	for (int i = 0; i < im->nseg; i++, mapped++) {
		r = gk_real.cuMemMap(at, im->len[i], 0, im->mem[i], 0);
		if (r != CUDA_SUCCESS)
			goto out_undo;
		at += im->len[i];
	}
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = gk_real.cuMemSetAccess(im->va, im->total, &acc, 1);
	if (r != CUDA_SUCCESS)
		goto out_undo;
	im->ptr = im->va + rep.offset;
	pthread_mutex_lock(&imports_lock);
	im->next = imports;
	imports = im;
	pthread_mutex_unlock(&imports_lock);
	for (int i = 0; i < rep.nseg; i++)
		close(fds[i]);
	*pdptr = im->ptr;
	gk_track_ptr_add(im->kind, im->ptr);
	return CUDA_SUCCESS;

out_undo:
	gk_error("ipc: mapping 0x%llx of process %ld: %s", (unsigned long long)h.addr,
		 (long)h.pid, gk_cu_name(r));
	undo(im, mapped);
	free(im);
out_fds:
	for (int i = 0; i < rep.nseg; i++)
		close(fds[i]);
	return r;
}

int gk_ipc_close(CUdeviceptr dptr, CUresult *res)
{
	struct import **pp, *im = NULL;

	pthread_mutex_lock(&imports_lock);
	for (pp = &imports; *pp; pp = &(*pp)->next)
		if ((*pp)->ptr == dptr) {
			im = *pp;
			*pp = im->next;
			break;
		}
	pthread_mutex_unlock(&imports_lock);
	if (!im)
		return 0;
	/* The program's work on it is done before it goes, as with the driver. */
	gk_real.cuCtxSynchronize();
	undo(im, im->nseg);
	gk_track_ptr_remove(im->kind, dptr);
	free(im);
	*res = CUDA_SUCCESS;
	return 1;
}

/* One exporter's answer to "wait": 1 restored, 0 started afresh, -1 none
 * within GK_IPC_SETTLE_WAIT_S (or gone). */
static int wait_for(int32_t pid, uint64_t nonce)
{
	struct gk_ipc_request req = {.magic = GK_IPC_WAIT_MAGIC, .nonce = nonce};
	struct gk_ipc_settled a = {-EIO, -1};
	struct ucred cred;
	int c = connect_exporter(pid, nonce, GK_IPC_SETTLE_WAIT_S + 5, &cred);

	if (c < 0)
		return -1; /* gone, or not whom the handle named: not waited for */
	if (send(c, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req) ||
	    recv(c, &a, sizeof(a), MSG_WAITALL) != (ssize_t)sizeof(a) || a.status)
		a.restored = -1;
	close(c);
	return a.restored;
}

void gk_ipc_wait_exporters(void)
{
	struct exporter {
		int32_t pid;
		uint64_t nonce;
	} *ex = NULL;
	size_t n = 0, nimports = 0;
	double t0 = gk_now();

	/* One entry per distinct exporter, at most one per import: every one
	 * is waited for, however many (a fixed table once left the 65th out
	 * without a word). */
	pthread_mutex_lock(&imports_lock);
	for (struct import *im = imports; im; im = im->next)
		nimports++;
	if (nimports)
		ex = calloc(nimports, sizeof(*ex));
	for (struct import *im = imports; im && ex; im = im->next) {
		size_t k = 0;

		while (k < n && (ex[k].pid != im->pid || ex[k].nonce != im->nonce))
			k++;
		if (k == n) {
			ex[n].pid = im->pid;
			ex[n].nonce = im->nonce;
			n++;
		}
	}
	pthread_mutex_unlock(&imports_lock);
	if (nimports && !ex)
		gk_error("ipc: out of memory: this process goes on without waiting for the "
			 "processes whose memory it maps to load theirs");
	for (size_t k = 0; k < n; k++) {
		int r = wait_for(ex[k].pid, ex[k].nonce);

		if (r < 0)
			gk_error("ipc: process %ld, whose memory this process maps, did not pass its "
				 "restore point within %d s: this process goes on, and may read its "
				 "memory before that process has loaded it",
				 (long)ex[k].pid, GK_IPC_SETTLE_WAIT_S);
		else if (r == 0)
			gk_warn("ipc: process %ld, whose memory this process maps, started afresh, "
				"not from a checkpoint: its memory is not what this process read "
				"there before its checkpoint",
				(long)ex[k].pid);
	}
	if (n)
		gk_info("restore: waited %.3f s until the %zu process(es) whose memory this process "
			"maps through CUDA IPC had loaded theirs",
			gk_now() - t0, n);
	free(ex);
}

/* ---- the manifest's record of the imports ---- */

size_t gk_ipc_count(void)
{
	size_t n = 0;

	pthread_mutex_lock(&imports_lock);
	for (struct import *im = imports; im; im = im->next)
		n += im->kind == GK_UNSUP_IPC_IMPORT;
	pthread_mutex_unlock(&imports_lock);
	return n;
}

static int by_ordinal(const void *x, const void *y)
{
	const struct gk_import_rec *a = x, *b = y;

	return a->ordinal < b->ordinal ? -1 : a->ordinal > b->ordinal;
}

size_t gk_ipc_describe(struct gk_import_rec *recs, size_t cap)
{
	size_t n = 0;

	/* Only those at their places: an import elsewhere refuses the checkpoint. */
	pthread_mutex_lock(&imports_lock);
	for (struct import *im = imports; im && n < cap; im = im->next)
		if (im->kind == GK_UNSUP_IPC_IMPORT)
			recs[n++] = (struct gk_import_rec){.ordinal = im->ordinal,
							   .address = im->ptr,
							   .size = im->size,
							   .exporter_address = im->exporter_addr};
	pthread_mutex_unlock(&imports_lock);
	qsort(recs, n, sizeof(*recs), by_ordinal);
	return n;
}

int gk_ipc_check_restored(const struct gk_manifest *m, char *why, size_t len)
{
	int ret = 0;

	pthread_mutex_lock(&imports_lock);
	for (size_t i = 0; i < m->nimports && !ret; i++) {
		const struct gk_import_rec *r = &m->imports[i];
		const struct import *im = imports;

		while (im && im->ordinal != r->ordinal)
			im = im->next;
		if (!im) {
			snprintf(why, len,
				 "CUDA IPC open %llu of the checkpoint (0x%llx, %llu bytes, at 0x%llx "
				 "in its exporter) was not made again by this run before its first "
				 "checkpoint point",
				 (unsigned long long)r->ordinal, (unsigned long long)r->address,
				 (unsigned long long)r->size, (unsigned long long)r->exporter_address);
			ret = -EINVAL;
		} else if (im->ptr != r->address || im->size != r->size ||
			   im->exporter_addr != r->exporter_address) {
			snprintf(why, len,
				 "CUDA IPC open %llu is 0x%llx (%llu bytes, at 0x%llx in its "
				 "exporter) in this run and was 0x%llx (%llu bytes, at 0x%llx) in the "
				 "checkpoint: the program opened other memory, or in another order, "
				 "and the pointers it kept would reach the wrong memory",
				 (unsigned long long)r->ordinal, (unsigned long long)im->ptr,
				 (unsigned long long)im->size, (unsigned long long)im->exporter_addr,
				 (unsigned long long)r->address, (unsigned long long)r->size,
				 (unsigned long long)r->exporter_address);
			ret = -EINVAL;
		}
	}
	pthread_mutex_unlock(&imports_lock);
	return ret;
}
