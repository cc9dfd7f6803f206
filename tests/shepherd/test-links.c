/*
 * test-links - what ties a task's process tree to processes outside it, which
 * a transparent checkpoint (one task's tree alone) must refuse (links.c):
 * a TCP connection, a connected UDP socket, an MPI library in the process;
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
#include <sys/wait.h>
#include <unistd.h>

enum what { NOTHING, LISTENING, CONNECTED, UDP_OPEN, UDP_CONNECTED, UNIX_PAIR, MPI_MAPPED };

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

	plan(12);
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
		pid_t none = 0, found = -1, self = getpid();

		is_int(gk_tree_find_link(&none, 0, 0, &found, what, sizeof(what)), 0, "an empty tree");
		/* This very process holds a listening socket only. */
		is_int(gk_tree_find_link(&self, 1, 0, &found, what, sizeof(what)), 0,
		       "the test itself (a listener): fine");
	}
	close(lfd);
	return done_testing();
}
