/*
 * bootstrap.c - the unique id and the sockets between the ranks of a
 * communicator. Rank 0 listens on the abstract unix socket named by the id
 * and accepts the other ranks; each connects (retrying while rank 0 is not
 * listening yet) and sends its rank with its shared buffer's descriptor
 * attached (SCM_RIGHTS). Rank 0 answers each with its predecessor's
 * descriptor, so that the buffers pass along the ring r -> r+1 through rank 0
 * (README.md). Afterwards the sockets form a star around rank 0, which the
 * collectives use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nccl_standin.h"

/* Rank r's first message to rank 0; its shared buffer's descriptor rides along. */
struct ns_hello {
	char magic[NS_ID_MAGIC_LEN];
	int32_t rank;
	int32_t nranks;
};

/* Rank 0's answer: ncclSuccess with the predecessor's descriptor, or why not. */
struct ns_welcome {
	char magic[NS_ID_MAGIC_LEN];
	int32_t status;
	int32_t pred;
};

/* How long rank 0 waits for the hello of a rank that has connected. */
#define NS_HELLO_MS 10000

void ns_id_fill(ncclUniqueId *id, const char name[NS_NAME_HEX])
{
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, NS_ID_MAGIC, NS_ID_MAGIC_LEN);
	memcpy(id->internal + NS_ID_MAGIC_LEN, name, NS_NAME_HEX);
}

int ns_id_name(const ncclUniqueId *id, char name[NS_NAME_HEX + 1])
{
	if (memcmp(id->internal, NS_ID_MAGIC, NS_ID_MAGIC_LEN))
		return -EINVAL;
	for (int i = 0; i < NS_NAME_HEX; i++) {
		char c = id->internal[NS_ID_MAGIC_LEN + i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
		name[i] = c;
	}
	name[NS_NAME_HEX] = '\0';
	return 0;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[NS_NAME_HEX / 2];
	char name[NS_NAME_HEX + 1];
	size_t got = 0;

	if (!uniqueId) {
		ns_set_error("ncclGetUniqueId: uniqueId is NULL");
		NS_RET(ncclInvalidArgument, "NULL");
	}
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ns_set_error("ncclGetUniqueId: getrandom: %s", strerror(errno));
			NS_RET(ncclSystemError, "%p", (void *)uniqueId);
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		name[2 * i] = hex[raw[i] >> 4];
		name[2 * i + 1] = hex[raw[i] & 15];
	}
	name[NS_NAME_HEX] = '\0';
	ns_id_fill(uniqueId, name);
	NS_RET(ncclSuccess, "-> %s", name);
}

/* ---- byte streams ---- */

int ns_send_all(int sock, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(sock, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ns_recv_all(int sock, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(sock, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* LEN bytes of BUF with descriptor FD attached (none when FD < 0). */
static int send_with_fd(int sock, const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&control, 0, sizeof(control));
		msg.msg_control = control.space;
		msg.msg_controllen = sizeof(control.space);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The descriptor went with the first byte; the rest is plain data. */
	return ns_send_all(sock, (const char *)buf + n, len - (size_t)n);
}

/* LEN bytes into BUF; *FD the descriptor that came with them, or -1. */
static int recv_with_fd(int sock, void *buf, size_t len, int *fd)
{
	union {
		struct cmsghdr align;
		char space[CMSG_SPACE(sizeof(int))];
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = control.space,
	    .msg_controllen = sizeof(control.space),
	};
	ssize_t n;
	int err;

	*fd = -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
	if (n == 0)
		return -ECONNRESET;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	err = ns_recv_all(sock, (char *)buf + n, len - (size_t)n);
	if (err && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return err;
}

static void set_recv_timeout(int sock, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static socklen_t socket_address(struct sockaddr_un *sa, const char *name)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] = '\0': the abstract namespace, no file to clean up. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "gk-nccl-standin-%s", name);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

/* ---- rank 0 ---- */

/* Takes one connection and its hello; *FDS[rank] gets the descriptor. */
static ncclResult_t accept_rank(struct ncclComm *comm, int lsock, int *fds)
{
	struct ns_hello hello;
	int s, fd, err;

	s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		    errno == ECONNABORTED)
			return ncclInProgress; /* nothing yet: poll again */
		ns_set_error("rank 0: accept: %s", strerror(errno));
		return ncclSystemError;
	}
	set_recv_timeout(s, NS_HELLO_MS);
	err = recv_with_fd(s, &hello, sizeof(hello), &fd);
	if (err) {
		ns_set_error("rank 0: no hello from a rank that connected: %s", strerror(-err));
		close(s);
		return ncclRemoteError;
	}
	set_recv_timeout(s, 0);
	if (memcmp(hello.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN) || hello.nranks != comm->nranks ||
	    hello.rank < 1 || hello.rank >= comm->nranks || comm->socks[hello.rank] >= 0 ||
	    fd < 0) {
		ns_set_error("rank 0 of %d: a peer says it is rank %d of %d%s", comm->nranks,
			     (int)hello.rank, (int)hello.nranks,
			     fd < 0 ? " and sent no memory" : "");
		if (fd >= 0)
			close(fd);
		close(s);
		return ncclInvalidUsage;
	}
	comm->socks[hello.rank] = s;
	fds[hello.rank] = fd;
	return ncclSuccess;
}

static ncclResult_t bootstrap_root(struct ncclComm *comm, int *pred_fd, int *fds)
{
	struct sockaddr_un sa;
	socklen_t salen = socket_address(&sa, comm->name);
	long long deadline = now_ms() + NS_CONNECT_MS;
	ncclResult_t rc = ncclSuccess;
	int lsock, got = 0;

	lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lsock < 0) {
		ns_set_error("rank 0: socket: %s", strerror(errno));
		return ncclSystemError;
	}
	if (bind(lsock, (struct sockaddr *)&sa, salen) || listen(lsock, comm->nranks)) {
		ns_set_error("rank 0: listening on @%s: %s", sa.sun_path + 1, strerror(errno));
		close(lsock);
		return ncclSystemError;
	}
	while (got < comm->nranks - 1) {
		struct pollfd p = {.fd = lsock, .events = POLLIN};
		long long left = deadline - now_ms();

		if (left <= 0) {
			ns_set_error("rank 0: %d of %d ranks connected within %d s", got + 1,
				     comm->nranks, NS_CONNECT_MS / 1000);
			rc = ncclSystemError;
			break;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		rc = accept_rank(comm, lsock, fds);
		if (rc == ncclInProgress)
			continue;
		if (rc)
			break;
		got++;
	}
	/* The name is free again as soon as everyone is in. */
	close(lsock);
	for (int r = 1; r < comm->nranks; r++) {
		struct ns_welcome w = {.status = rc, .pred = r - 1};
		int err;

		if (comm->socks[r] < 0)
			continue;
		memcpy(w.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN);
		err = send_with_fd(comm->socks[r], &w, sizeof(w),
				   rc	    ? -1
				   : r == 1 ? comm->own.fd
					    : fds[r - 1]);
		if (err && !rc) {
			ns_set_error("rank 0: rank %d is gone: %s", r, strerror(-err));
			rc = ncclRemoteError;
		}
	}
	if (!rc) {
		*pred_fd = fds[comm->nranks - 1];
		fds[comm->nranks - 1] = -1;
	}
	return rc;
}

/* ---- the other ranks ---- */

static ncclResult_t connect_root(struct ncclComm *comm, int *sock)
{
	struct sockaddr_un sa;
	socklen_t salen = socket_address(&sa, comm->name);
	long long deadline = now_ms() + NS_CONNECT_MS;

	for (;;) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0) {
			ns_set_error("rank %d: socket: %s", comm->rank, strerror(errno));
			return ncclSystemError;
		}
		if (connect(s, (struct sockaddr *)&sa, salen) == 0) {
			*sock = s;
			return ncclSuccess;
		}
		close(s);
		/* Refused: rank 0 is not listening yet. A failed connect leaves the
		 * socket's state unspecified, hence a new one each time. */
		if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN && errno != EINTR) {
			ns_set_error("rank %d: connecting to @%s: %s", comm->rank, sa.sun_path + 1,
				     strerror(errno));
			return ncclSystemError;
		}
		if (now_ms() >= deadline) {
			ns_set_error("rank %d: rank 0 did not listen on @%s within %d s",
				     comm->rank, sa.sun_path + 1, NS_CONNECT_MS / 1000);
			return ncclSystemError;
		}
		nanosleep(&(struct timespec){.tv_nsec = NS_CONNECT_RETRY_MS * 1000000l}, NULL);
	}
}

static ncclResult_t bootstrap_peer(struct ncclComm *comm, int *pred_fd)
{
	struct ns_hello hello = {.rank = comm->rank, .nranks = comm->nranks};
	struct ns_welcome w;
	ncclResult_t rc;
	int s, fd, err;

	rc = connect_root(comm, &s);
	if (rc)
		return rc;
	comm->socks[0] = s;
	memcpy(hello.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN);
	err = send_with_fd(s, &hello, sizeof(hello), comm->own.fd);
	/* No time limit on the answer: rank 0 gives up after its own, and then
	 * closes the socket. */
	if (!err)
		err = recv_with_fd(s, &w, sizeof(w), &fd);
	if (err) {
		ns_set_error("rank %d: rank 0 is gone: %s", comm->rank, strerror(-err));
		return ncclRemoteError;
	}
	if (memcmp(w.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN) ||
	    (w.status == ncclSuccess && (w.pred != comm->rank - 1 || fd < 0))) {
		ns_set_error("rank %d: rank 0 answered nonsense", comm->rank);
		rc = ncclInternalError;
	} else if (w.status != ncclSuccess) {
		ns_set_error("rank %d: rank 0 could not set the communicator up: %s", comm->rank,
			     ns_result_name(w.status));
		rc = w.status == ncclInvalidUsage ? ncclInvalidUsage : ncclRemoteError;
	}
	if (rc) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	*pred_fd = fd;
	return ncclSuccess;
}

ncclResult_t ns_bootstrap(struct ncclComm *comm, int *pred_fd)
{
	ncclResult_t rc;
	int *fds;

	if (comm->rank)
		return bootstrap_peer(comm, pred_fd);
	fds = malloc(sizeof(*fds) * (size_t)comm->nranks);
	if (!fds) {
		ns_set_error("rank 0: out of memory for %d ranks", comm->nranks);
		return ncclSystemError;
	}
	for (int r = 0; r < comm->nranks; r++)
		fds[r] = -1;
	rc = bootstrap_root(comm, pred_fd, fds);
	/* Rank 0 only passes the others' descriptors on. */
	for (int r = 0; r < comm->nranks; r++)
		if (fds[r] >= 0)
			close(fds[r]);
	free(fds);
	return rc;
}
