/*
 * test-links - what ties a task's process tree to processes outside it, which
 * a transparent checkpoint (one task's tree alone) must refuse (links.c):
 * a TCP connection, a connected UDP socket, an MPI library in the process,
 * an io_uring instance mapped (CRIU cannot dump one);
 * and what it must not refuse: a listening socket, an unconnected UDP socket,
 * a unix socket pair, nothing at all. Real sockets, on the loopback, held by
 * a child process that the check looks at through /proc.
 */
#include "config.h"
#include "shepherd/shepherd.h"
#include "tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum what {
	NOTHING,
	LISTENING,
	CONNECTED,
	UDP_OPEN,
	UDP_CONNECTED,
	UNIX_PAIR,
	MPI_MAPPED,
	IO_URING,
};

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif

/* An io_uring instance with its submission ring mapped, as liburing (and
 * libuv) leave it; without liburing: io_uring_setup and one mmap. The
 * parameters' layout is the kernel's (120 bytes, sq_off at byte 40); only
 * the ring's size is read from it. -1 where the kernel has no io_uring (or
 * forbids it: io_uring_disabled). */
static int uring_mapped(void)
{
	unsigned int p[30] = {0};
	int fd = (int)syscall(SYS_io_uring_setup, 4, p);

	if (fd < 0)
		return -1;
	/* sq_off.array (p[10 + 6]) + sq_entries (p[0]) * 4 bytes covers the ring. */
	return mmap(NULL, p[16] + p[0] * 4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    fd, 0) == MAP_FAILED
		       ? -1
		       : 0;
}

static char mpi_lib[64];

/* A child holding one kind of socket (or mapping) until it is killed; the
 * pipe says when it is in place. */
static pid_t holder(enum what w, int listen_fd, struct sockaddr_in *to)
{
	int ready[2];
	pid_t pid;
	char c = 0;

	if (pipe(ready) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = -1, sv[2];

		switch (w) {
		case NOTHING:
			break;
		case LISTENING:
			fd = socket(AF_INET, SOCK_STREAM, 0);
			listen(fd, 1);
			break;
		case CONNECTED:
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)to, sizeof(*to)) < 0)
				_exit(1);
			break;
		case UDP_OPEN:
			fd = socket(AF_INET, SOCK_DGRAM, 0);
			break;
		case UDP_CONNECTED:
			fd = socket(AF_INET, SOCK_DGRAM, 0);
			if (connect(fd, (struct sockaddr *)to, sizeof(*to)) < 0)
				_exit(1);
			break;
		case UNIX_PAIR:
			socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
			break;
		case MPI_MAPPED:
			fd = open(mpi_lib, O_RDONLY);
			if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
				_exit(1);
			break;
		case IO_URING:
			if (uring_mapped() < 0)
				_exit(1);
			break;
		}
		(void)listen_fd;
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	return pid;
}

static int look_with(enum what w, int tcp_close, int listen_fd, struct sockaddr_in *to, char *what,
		     size_t len)
{
	pid_t pid = holder(w, listen_fd, to), found = 0;
	int r;

	if (pid < 0) {
		snprintf(what, len, "(could not set it up: %s)", strerror(errno));
		return -1;
	}
	r = gk_tree_find_link(&pid, 1, tcp_close, &found, what, len);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return r == 1 && found != pid ? -1 : r;
}

static int look(enum what w, int listen_fd, struct sockaddr_in *to, char *what, size_t len)
{
	return look_with(w, 0, listen_fd, to, what, len);
}

int main(void)
{
	struct sockaddr_in addr = {.sin_family = AF_INET};
	socklen_t alen = sizeof(addr);
	char what[512], dir[] = "/tmp/gk-test-links.XXXXXX";
	int lfd, fd;

	plan(13);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 4) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) {
		printf("Bail out! no loopback TCP here: %s\n", strerror(errno));
		return 1;
	}
	is_int(look(NOTHING, lfd, &addr, what, sizeof(what)), 0, "a process with no socket: fine");
	is_int(look(LISTENING, lfd, &addr, what, sizeof(what)), 0,
	       "a listening TCP socket: fine (CRIU binds it again)");
	ok(look(CONNECTED, lfd, &addr, what, sizeof(what)) == 1 &&
	       strstr(what, "TCP connection from 127.0.0.1:") && strstr(what, " to 127.0.0.1:"),
	   "a TCP connection: refused, naming both ends (%s)", what);
	is_int(look_with(CONNECTED, 1, lfd, &addr, what, sizeof(what)), 0,
	       "a TCP connection with --tcp close: fine (CRIU restores it closed)");
	ok(look_with(UDP_CONNECTED, 1, lfd, &addr, what, sizeof(what)) == 1,
	   "a connected UDP socket with --tcp close: still refused (%s)", what);
	is_int(look(UDP_OPEN, lfd, &addr, what, sizeof(what)), 0, "an unconnected UDP socket: fine");
	ok(look(UDP_CONNECTED, lfd, &addr, what, sizeof(what)) == 1 && strstr(what, "UDP socket connected"),
	   "a connected UDP socket: refused (%s)", what);
	is_int(look(UNIX_PAIR, lfd, &addr, what, sizeof(what)), 0,
	       "a unix socket pair inside the process: fine");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(mpi_lib, sizeof(mpi_lib), "%s/libmpi.so.40", dir);
	fd = open(mpi_lib, O_CREAT | O_WRONLY, 0644);
	ok(fd >= 0 && ftruncate(fd, 4096) == 0, "a stand-in for libmpi.so.40");
	close(fd);
	ok(look(MPI_MAPPED, lfd, &addr, what, sizeof(what)) == 1 && strstr(what, "an MPI library") &&
	       strstr(what, "libmpi.so.40") && strstr(what, "gpuckpt_mpi.h"),
	   "an MPI library in the process: refused, pointing at gpuckpt_mpi.h (%s)", what);
	unlink(mpi_lib);
	rmdir(dir);
	{
		/* The holder exits at once where the kernel has no io_uring. */
		int r = look(IO_URING, lfd, &addr, what, sizeof(what));

		if (r < 0)
			skip("no io_uring here (the kernel refused io_uring_setup or its mmap)");
		else
			ok(r == 1 && strstr(what, "io_uring"),
			   "an io_uring instance mapped: refused, naming it (%s)", what);
	}
	{
		pid_t none = 0, found = -1, self = getpid();

		is_int(gk_tree_find_link(&none, 0, 0, &found, what, sizeof(what)), 0, "an empty tree");
		/* This very process holds a listening socket only. */
		is_int(gk_tree_find_link(&self, 1, 0, &found, what, sizeof(what)), 0,
		       "the test itself (a listener): fine");
	}
	close(lfd);
	return done_testing();
}
