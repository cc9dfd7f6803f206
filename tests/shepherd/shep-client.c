/*
 * shep-client - a stand-in for the runtime's side of the shepherd's socket,
 * for tests: connects to @$GPUCKPT_SHEPHERD (after the signal given with
 * --on-signal, as the runtime does), sends each MSG as one packet, prints the
 * shepherd's answer ("LOCKED", "ABORT ...") or "CLOSED", and exits 0.
 *
 *	shep-client [--on-signal USR1] MSG...
 */
#include "config.h"

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *name = getenv("GPUCKPT_SHEPHERD");
	struct sockaddr_un sa;
	struct pollfd pf;
	char buf[4097];
	ssize_t n;
	int i = 1, fd;

	if (argc > 2 && !strcmp(argv[1], "--on-signal")) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, strcmp(argv[2], "USR1") ? SIGUSR2 : SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("waiting\n");
		fflush(stdout);
		sigwait(&set, &sig);
		i = 3;
	}
	if (!name || strlen(name) > sizeof(sa.sun_path) - 2) {
		fprintf(stderr, "shep-client: GPUCKPT_SHEPHERD is not set\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, strlen(name));
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))) < 0) {
		perror("shep-client: connect");
		return 1;
	}
	for (; i < argc; i++)
		if (send(fd, argv[i], strlen(argv[i]), MSG_NOSIGNAL) < 0)
			perror("shep-client: send");
	pf.fd = fd;
	pf.events = POLLIN;
	if (poll(&pf, 1, 30000) != 1) {
		printf("TIMEOUT\n");
		return 0;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		printf("CLOSED\n");
		return 0;
	}
	buf[n] = 0;
	printf("%s\n", buf);
	close(fd);
	return 0;
}
