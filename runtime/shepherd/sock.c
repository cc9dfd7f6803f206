/*
 * sock.c - the socket between the runtime (the job's user, in the task's
 * tree) and the shepherd (root). Abstract names live in the network
 * namespace, which the job shares with the node: anyone on the node can
 * connect. So a peer counts only when SO_PEERCRED says it is the job's uid
 * and its pid descends from the task's program; anyone else is closed
 * without a word, and what a peer may say is a fixed, strictly parsed
 * vocabulary (README.md, "The socket between runtime and shepherd").
 */
#include "config.h"

#include "common/log.h"
#include "common/error.h"
#include "shepherd/shepherd.h"
#include "image/ckptname.h"
#include "common/settings_env.h"
#include "common/shepherd_protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* A CUDA error's name as the runtime sends it: CUDA_ERROR_... (1 to 63 of
 * [A-Z0-9_]), or "unknown". */
static int is_error_word(const char *w)
{
	size_t n = strlen(w);

	if (!strcmp(w, "unknown"))
		return 1;
	if (n == 0 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((w[i] >= 'A' && w[i] <= 'Z') || (w[i] >= '0' && w[i] <= '9') || w[i] == '_'))
			return 0;
	return 1;
}

/* 1 when line is word, a space and more; *arg: what follows the space. */
static int word_is(const char *line, const char *word, const char **arg)
{
	size_t n = strlen(word);

	if (strncmp(line, word, n) != 0 || line[n] != ' ')
		return 0;
	*arg = line + n + 1;
	return 1;
}

int gk_msg_parse(const char *buf, size_t len, struct gk_msg *m)
{
	char line[GK_PROTO_MSG_MAX + 1];
	const char *sp;
	const char *arg;
	size_t namelen;

	memset(m, 0, sizeof(*m));
	if (len == 0 || len > GK_PROTO_MSG_MAX)
		return -EPROTO;
	/* One line: a single trailing newline is allowed, nothing else that
	 * is not printable, no NUL, no doubled or edge spaces. */
	if (buf[len - 1] == '\n')
		len--;
	if (len == 0)
		return -EPROTO;
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e)
			return -EPROTO;
		if (buf[i] == ' ' && (i == 0 || i + 1 == len || buf[i - 1] == ' '))
			return -EPROTO;
	}
	memcpy(line, buf, len);
	line[len] = 0;
	if (!strcmp(line, GK_PROTO_HELLO_APP)) {
		m->type = GK_MSG_HELLO_APP;
		return 0;
	}
	if (!strcmp(line, GK_PROTO_HELLO_TRANSPARENT)) {
		m->type = GK_MSG_HELLO_TRANSPARENT;
		return 0;
	}
	if (word_is(line, GK_PROTO_REFUSE, &arg)) {
		const char *error;

		/* What the driver cannot checkpoint, by a fixed word; the text
		 * the job's output shows is the shepherd's own. */
		if (!strcmp(arg, GK_PROTO_REFUSE_MANAGED))
			m->refused = "managed (unified) memory";
		else if (!strcmp(arg, GK_PROTO_REFUSE_IPC))
			m->refused = "device memory shared with another process (CUDA IPC)";
		else if (!strcmp(arg, GK_PROTO_REFUSE_OPENCL))
			m->refused = "OpenCL state that CRIU cannot carry (on a device that is not "
				     "a CPU, or behind a user event not set)";
		else if (!strcmp(arg, GK_PROTO_REFUSE_NCCL))
			m->refused = "NCCL communicators whose ranks could not be brought to a "
				     "common collective";
		else if (!strcmp(arg, GK_PROTO_REFUSE_NCCL_SET)) {
			m->refused = "no NCCL communicator of its whole step";
			m->refused_why = "the step's tasks are NCCL ranks (" GK_ENV(TASKS) "=nccl), but "
					 "it holds no NCCL communicator of all of them, so its part "
					 "could never be one of the step's set, which is all a "
					 "restart restores";
		}
		else if (!strcmp(arg, GK_PROTO_REFUSE_CAPTURE))
			m->refused = "a CUDA stream capture that did not end (draining the GPU now "
				     "would invalidate it)";
		else if (word_is(arg, GK_PROTO_REFUSE_BROKEN, &error) && is_error_word(error))
			memcpy(m->broken, error, strlen(error) + 1); /* <= 63 + NUL */
		else
			return -EPROTO;
		if (m->broken[0])
			m->refused = "a broken CUDA context";
		m->type = GK_MSG_REFUSE;
		return 0;
	}
	if (!word_is(line, GK_PROTO_READY, &arg))
		return -EPROTO;
	sp = strchr(arg, ' ');
	if (!sp || strchr(sp + 1, ' ') || (strcmp(sp + 1, "0") && strcmp(sp + 1, "1")))
		return -EPROTO;
	namelen = (size_t)(sp - arg);
	/* The runtime's folder in the checkpoint root, by its .tmp name only:
	 * gk_store_publish checks the rest (sequence, writer). */
	if (namelen <= strlen(GK_CKPT_TMP_PREFIX) || namelen >= sizeof(m->name) ||
	    strncmp(arg, GK_CKPT_TMP_PREFIX, strlen(GK_CKPT_TMP_PREFIX)))
		return -EPROTO;
	for (size_t i = 0; i < namelen; i++)
		if (!is_name_char(arg[i]))
			return -EPROTO;
	if (strstr(arg, ".."))
		return -EPROTO;
	memcpy(m->name, arg, namelen);
	m->name[namelen] = 0;
	m->assisted = sp[1] == '1';
	m->type = GK_MSG_READY;
	return 0;
}

int gk_sock_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 100)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_name_char(name[i]))
			return 0;
	return 1;
}

int gk_sock_listen(char *name, size_t namelen, gk_error_t *err)
{
	unsigned char rnd[8];

	/* Unpredictable, so that nobody can take the name first. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		gk_errprintf(err, "getrandom: %s", strerror(errno));
		return -errno;
	}
	snprintf(name, namelen, "gpuckpt-shepherd.%d.%02x%02x%02x%02x%02x%02x%02x%02x",
		 (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	return gk_sock_listen_on(name, err);
}

int gk_sock_listen_on(const char *name, gk_error_t *err)
{
	struct sockaddr_un sa;
	socklen_t salen;
	int fd, ret;

	if (!gk_sock_name_ok(name)) {
		gk_errprintf(err, "socket name '%s' is not 1 to 100 of [A-Za-z0-9._-]", name);
		return -EINVAL;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "socket: %s", strerror(-ret));
		return ret;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, strlen(name));
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	if (bind(fd, (struct sockaddr *)&sa, salen) < 0 || listen(fd, 64) < 0) {
		ret = -errno;
		gk_errprintf(err, "@%s: %s", name, strerror(-ret));
		close(fd);
		return ret;
	}
	return fd;
}

int gk_sock_accept(int listener, uid_t uid, pid_t prog, int *conn, pid_t *peer)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	*conn = -1;
	fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ? 0 : -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		close(fd);
		return 0;
	}
	if (cred.uid != uid) {
		gk_warn("transparent: socket: pid %d of uid %u is not the job's user; closed",
			(int)cred.pid, (unsigned)cred.uid);
		close(fd);
		return 0;
	}
	if (!gk_pid_in_tree(cred.pid, prog)) {
		gk_warn("transparent: socket: pid %d is not a process of this task; closed",
			(int)cred.pid);
		close(fd);
		return 0;
	}
	*conn = fd;
	*peer = cred.pid;
	return 0;
}

int gk_sock_send(int conn, const char *what, const char *reason)
{
	char msg[GK_PROTO_MSG_MAX];
	size_t n = (size_t)snprintf(msg, sizeof(msg), "%s", what);

	if (reason) {
		n += (size_t)snprintf(msg + n, sizeof(msg) - n, " ");
		for (const char *p = reason; *p && n + 1 < sizeof(msg); p++)
			msg[n++] = (*p >= 0x20 && *p <= 0x7e) ? *p : ' ';
		msg[n] = 0;
	}
	if (n >= sizeof(msg))
		n = sizeof(msg) - 1;
	return send(conn, msg, n, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

void gk_sock_close(int conn)
{
	char buf[GK_PROTO_MSG_MAX];

	/* A unix socket closed with unread packets resets the connection, and
	 * the peer loses what was just sent to it (the ABORT). */
	while (recv(conn, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	close(conn);
}
