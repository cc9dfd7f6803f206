/*
 * links.c - what ties a process tree to processes outside it. A transparent
 * checkpoint dumps one task's tree alone; a tree that talks to others (the
 * other ranks of an MPI job, a server, a peer on another node) cannot be
 * restored without them: CRIU refuses some of it, and what it does restore
 * would wait forever for peers that are gone or have moved on. So these are
 * refused before anything is locked, naming what was found:
 *
 *  - a TCP socket in any state but LISTEN (a connection, or one being made
 *    or closed): its peer is not in the checkpoint;
 *  - a UDP socket connected to a peer;
 *  - an RDMA device (/dev/infiniband/...): queue pairs to other nodes;
 *  - an MPI library in the process (libmpi): its ranks' state lives in the
 *    other ranks, in shared memory with them, and in Slurm's PMIx server;
 *  - an io_uring instance mapped (its rings): CRIU cannot dump one, and
 *    would fail on it with "Can't open mapfile link" (libuv, under
 *    PyTorch's TCPStore, uses io_uring unless UV_USE_IO_URING=0, which the
 *    runtime sets).
 *
 * A listening socket is fine (CRIU binds it again), and so is a tree whose
 * only sockets are its own unix socket pairs. With `--tcp close` a TCP
 * connection is fine too: CRIU dumps it without its state and restores it
 * closed, which a program that never uses it again does not notice (PyTorch
 * keeps its TCPStore connections open for the whole run, and uses them after
 * start-up only to look for an error report and to make new communicators;
 * docs/nccl.md).
 */
#include "config.h"

#include "shepherd/shepherd.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GK_RDMA_DEVICES "/dev/infiniband/"
#define MAX_SOCKETS 4096

/* The socket inodes of pid's descriptors; -1 when pid is gone. When one of
 * them is an RDMA device, says so in what and returns -2. */
static int socket_inodes(pid_t pid, unsigned long *inodes, size_t max, size_t *n, char *what,
			 size_t len)
{
	char dir[64], link[320], target[512];
	struct dirent *e;
	DIR *d;

	*n = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t got;
		unsigned long ino;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%.200s", dir, e->d_name);
		got = readlink(link, target, sizeof(target) - 1);
		if (got <= 0)
			continue;
		target[got] = 0;
		if (!strncmp(target, GK_RDMA_DEVICES, strlen(GK_RDMA_DEVICES))) {
			snprintf(what, len, "an RDMA device open (%s): its connections reach other "
				 "processes and nodes, which the checkpoint does not hold",
				 target);
			closedir(d);
			return -2;
		}
		if (sscanf(target, "socket:[%lu]", &ino) == 1 && *n < max)
			inodes[(*n)++] = ino;
	}
	closedir(d);
	return 0;
}

/* "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6) as text. */
static void address(const char *hex, int v6, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	const char *colon = strchr(hex, ':');

	if (colon)
		sscanf(colon + 1, "%x", &port);
	if (!v6) {
		unsigned a = 0;
		struct in_addr in;

		sscanf(hex, "%8x", &a);
		in.s_addr = a; /* the kernel prints the address in host order */
		inet_ntop(AF_INET, &in, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, port);
	} else {
		struct in6_addr in6;
		unsigned w[4] = {0, 0, 0, 0};

		sscanf(hex, "%8x%8x%8x%8x", &w[0], &w[1], &w[2], &w[3]);
		memcpy(&in6, w, sizeof(in6));
		inet_ntop(AF_INET6, &in6, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, port);
	}
}

static int listed(const unsigned long *inodes, size_t n, unsigned long ino)
{
	for (size_t i = 0; i < n; i++)
		if (inodes[i] == ino)
			return 1;
	return 0;
}

/* One of pid's sockets in /proc/PID/net/<table> that ties it to a peer. */
static int in_table(pid_t pid, const char *table, const unsigned long *inodes, size_t n,
		    int tcp_close, char *what, size_t len)
{
	int tcp = !strncmp(table, "tcp", 3), v6 = strchr(table, '6') != NULL, found = 0;
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, table);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f)) { /* the header */
		fclose(f);
		return 0;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		char local[64], remote[64], from[80], to[80];
		unsigned state;
		unsigned long ino;

		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, "%*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &state,
			   &ino) != 4 ||
		    !listed(inodes, n, ino))
			continue;
		address(local, v6, from, sizeof(from));
		address(remote, v6, to, sizeof(to));
		if (tcp && state != 0x0A && tcp_close) {
			gk_info("transparent: pid %d: a TCP connection from %s to %s (socket %lu) "
				"will be restored closed (--tcp close)",
				(int)pid, from, to, ino);
		} else if (tcp && state != 0x0A) {
			snprintf(what, len, "a TCP connection from %s to %s (socket %lu): its peer is "
				 "not in the checkpoint",
				 from, to, ino);
			found = 1;
		} else if (!tcp && strchr(remote, ':') && strtoul(strchr(remote, ':') + 1, NULL, 16)) {
			/* An unconnected UDP socket has no remote port. */
			snprintf(what, len, "a UDP socket connected from %s to %s (socket %lu): its "
				 "peer is not in the checkpoint",
				 from, to, ino);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* An MPI library or an io_uring instance mapped into pid. */
static int has_mpi(pid_t pid, char *what, size_t len)
{
	char path[64], line[4400];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base;

		if (strstr(line, "anon_inode:[io_uring]")) {
			snprintf(what, len, "an io_uring instance (anon_inode:[io_uring] mapped): CRIU "
				 "cannot dump its rings (a libuv program: set UV_USE_IO_URING=0)");
			found = 1;
			break;
		}
		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		base = strrchr(file, '/') + 1;
		if (!strncmp(base, "libmpi.so", 9) || !strncmp(base, "libmpi_", 7) ||
		    !strncmp(base, "libmpich.so", 11)) {
			snprintf(what, len, "an MPI library (%s): the state of an MPI rank lives "
				 "partly in the other ranks and in the job's process manager "
				 "(PMIx); checkpoint MPI programs with gpuckpt_mpi.h instead",
				 file);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

int gk_tree_find_link(const pid_t *pids, size_t n, int tcp_close, pid_t *pid, char *what,
		      size_t len)
{
	static const char *const tables[] = {"tcp", "tcp6", "udp", "udp6"};
	unsigned long *inodes = malloc(MAX_SOCKETS * sizeof(*inodes));
	int found = 0;

	what[0] = 0;
	if (!inodes) {
		snprintf(what, len, "out of memory looking at its sockets");
		*pid = n ? pids[0] : 0;
		return 1;
	}
	for (size_t i = 0; i < n && !found; i++) {
		size_t ns = 0;
		int r = socket_inodes(pids[i], inodes, MAX_SOCKETS, &ns, what, len);

		*pid = pids[i];
		if (r == -2 || has_mpi(pids[i], what, len)) {
			found = 1;
			break;
		}
		for (size_t t = 0; r == 0 && ns && t < 4 && !found; t++)
			found = in_table(pids[i], tables[t], inodes, ns, tcp_close, what, len);
	}
	free(inodes);
	return found;
}
