/*
 * stdio.c - the program's standard streams across a checkpoint.
 *
 * The task's stdio is what slurmstepd (or whoever ran the shepherd) gave the
 * shepherd and the program alike: a pipe, a socket, a regular file (srun -o,
 * --output with --open-mode=append, a batch script's redirection), /dev/null
 * or a terminal (srun --pty). A restored program must write where the task
 * that restores it writes, not into the stream of the run that was
 * checkpointed: that one is gone (a pipe), or has grown since the dump (a
 * job's output file), which CRIU refuses: "File .../err.run has bad size 620
 * (expect 413)" - CRIU checks the size of every regular file it reopens.
 *
 * So at dump time each of the program's fds 0..2 that is the same file as the
 * shepherd's own (same device and inode) is recorded with its kind, and at
 * restore CRIU gets the restoring shepherd's fd in its place (--inherit-fd,
 * which also skips CRIU's checks of that file), whatever its kind but
 * /dev/null, which CRIU reopens itself (gk_stdio_plan says why); a terminal
 * instead becomes CRIU's own stdin, which --shell-job takes the terminal
 * from. A stream the program opened itself (not the task's) is left to CRIU,
 * which reopens it from the image.
 */
#include "config.h"

#include "shepherd/shepherd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Terminals: the pty slaves (Unix98: majors 136-143) and the virtual
 * consoles and serial lines (4, 5). */
static int is_tty(dev_t rdev)
{
	unsigned ma = major(rdev);

	return (ma >= 136 && ma <= 143) || ma == 4 || ma == 5;
}

static const char *kind_of(const struct stat *st)
{
	if (S_ISFIFO(st->st_mode))
		return "pipe";
	if (S_ISSOCK(st->st_mode))
		return "socket";
	if (S_ISREG(st->st_mode))
		return "file";
	if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3)
		return "null";
	if (S_ISCHR(st->st_mode) && is_tty(st->st_rdev))
		return "tty";
	return NULL;
}

void gk_stdio_record(const char *proc, pid_t prog, struct gk_seal *s)
{
	s->have_stdio_task = 1;
	for (int i = 0; i < 3; i++) {
		char path[128];
		struct stat theirs, ours;
		const char *kind;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%d/fd/%d", proc, (int)prog, i);
		n = readlink(path, s->stdio[i], sizeof(s->stdio[i]) - 1);
		s->stdio[i][n > 0 ? n : 0] = 0;
		s->stdio_task[i][0] = 0;
		/* A file renamed or deleted since it was opened is not the one
		 * its name says: CRIU dumps it as a ghost; not the task's. */
		if (n <= 0 || strstr(s->stdio[i], " (deleted)") || stat(path, &theirs) < 0 ||
		    fstat(i, &ours) < 0)
			continue;
		kind = kind_of(&theirs);
		if (kind && theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino)
			snprintf(s->stdio_task[i], sizeof(s->stdio_task[i]), "%s", kind);
	}
}

enum gk_stdio_how gk_stdio_plan(const struct gk_seal *s, int i, char *arg, size_t len)
{
	const char *link = s->stdio[i], *kind = s->stdio_task[i];

	if (!s->have_stdio_task) {
		/* A seal from before the kinds were recorded: pipes and
		 * sockets, which were the task's (the plugin's own rule then). */
		if (strncmp(link, "pipe:[", 6) && strncmp(link, "socket:[", 8))
			return GK_STDIO_CRIU;
		kind = "pipe";
	}
	if (!strcmp(kind, "tty"))
		return GK_STDIO_TERMINAL;
	/* /dev/null is on every node and has no size for CRIU to check: CRIU
	 * reopens it from the image with the flags each fd had. Passed in
	 * instead, stdin's and stdout's /dev/null have one key ("dev/null"), and
	 * CRIU gave fd 1 the shepherd's read-only fd 0: every write of the
	 * restored program failed (on the H100 machine, stdio-criu.sh). */
	if (!kind[0] || !link[0] || !strcmp(kind, "null"))
		return GK_STDIO_CRIU;
	/* CRIU names a pipe or socket "pipe:[N]", a file by its path from the
	 * root without the leading slash (what its "bad size" error says). */
	if (!strcmp(kind, "pipe") || !strcmp(kind, "socket"))
		snprintf(arg, len, "fd[%d]:%s", GK_CRIU_INHERIT_FD + i, link);
	else if (link[0] == '/')
		snprintf(arg, len, "fd[%d]:%s", GK_CRIU_INHERIT_FD + i, link + 1);
	else
		return GK_STDIO_CRIU;
	return GK_STDIO_INHERIT;
}
