/*
 * proc_parts.c - a task whose tree runs several processes with the runtime
 * (torchrun: one CUDA process per rank, all in one Slurm task). Each runtime
 * writes and seals a folder of its own, .tmp.ckpt.N.HOST.PID, with a number
 * of its own; a task has one checkpoint, ckpt.S, and CRIU dumps its tree
 * once. So the shepherd begins a folder of its own for the task and, once
 * every process is locked (no runtime touches its folder then), moves each
 * runtime's folder into it as proc.PID (ckptname.h). The seal names each
 * part with its manifest's digest (image/seal.h). LOCKED tells each runtime
 * where its part will be (`LOCKED ckpt.S/proc.PID`, shepherd_protocol.h), so
 * that after the unlock, here or in a restored process, it loads from there.
 * When the checkpoint fails, each folder goes back under its own name before
 * any process is unlocked: the runtime loads from it and removes it, as it
 * does when it is the only one.
 *
 * The folders are the job's user's, in the user's root; the shepherd only
 * renames them (renameat2, never over anything) within that root and reads
 * each part's manifest without following a link (seal.c). A user who swaps
 * a folder for something else meanwhile breaks only their own checkpoint.
 */
#include "config.h"

#include "common/error.h"
#include "common/fsafe.h"
#include "common/log.h"
#include "image/ckptname.h"
#include "shepherd/shepherd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gk_proc_parts_add(struct gk_proc_parts *ps, pid_t pid, const char *tmpname, gk_error_t *err)
{
	struct gk_proc_part *p;

	if (strncmp(tmpname, GK_CKPT_TMP_PREFIX, sizeof(GK_CKPT_TMP_PREFIX) - 1) != 0 ||
	    strchr(tmpname, '/') || strlen(tmpname) >= sizeof(p->tmpname)) {
		gk_errprintf(err, "pid %d named %s: not a checkpoint folder", (int)pid, tmpname);
		return -EINVAL;
	}
	if (ps->n >= GK_SEAL_MAX_PARTS) {
		gk_errprintf(err, "more than %d processes of the task wrote checkpoints",
			     GK_SEAL_MAX_PARTS);
		return -E2BIG;
	}
	for (size_t i = 0; i < ps->n; i++)
		if (!strcmp(ps->p[i].tmpname, tmpname) || ps->p[i].pid == pid) {
			gk_errprintf(err, "pids %d and %d both named %s", (int)ps->p[i].pid,
				     (int)pid, tmpname);
			return -EINVAL;
		}
	p = &ps->p[ps->n++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(p->tmpname, sizeof(p->tmpname), "%s", tmpname);
	snprintf(p->name, sizeof(p->name), GK_CKPT_PART_PREFIX "%d", (int)pid);
	return 0;
}

const struct gk_proc_part *gk_proc_parts_of(const struct gk_proc_parts *ps, pid_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->p[i].pid == pid)
			return &ps->p[i];
	return NULL;
}

int gk_proc_parts_move_in(struct gk_proc_parts *ps, int rootfd, const char *root, int ckptfd,
			  uid_t uid, gk_error_t *err)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct gk_proc_part *p = &ps->p[i];
		int fd = gk_open_dir_at(rootfd, p->tmpname, uid, NULL);

		/* The runtime's folder, not a link, and the job's user's. */
		if (fd < 0) {
			gk_errprintf(err, "%s/%s: not a folder of uid %u", root, p->tmpname,
				     (unsigned)uid);
			return -EPERM;
		}
		close(fd);
		if (renameat2(rootfd, p->tmpname, ckptfd, p->name, RENAME_NOREPLACE) < 0) {
			int e = errno;

			gk_errprintf(err,
				     "%s/%s: cannot move it into the task's checkpoint as %s: %s",
				     root, p->tmpname, p->name, strerror(e));
			return -e;
		}
		p->moved = 1;
	}
	return 0;
}

void gk_proc_parts_move_back(struct gk_proc_parts *ps, int rootfd, int ckptfd)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct gk_proc_part *p = &ps->p[i];

		if (!p->moved)
			continue;
		if (renameat2(ckptfd, p->name, rootfd, p->tmpname, RENAME_NOREPLACE) < 0)
			/* Its runtime will not find its folder: it says so and stops
			 * its process rather than run without its device memory. */
			gk_error("transparent: %s: cannot move pid %d's part back from the task's "
				 "folder: %s",
				 p->tmpname, (int)p->pid, strerror(errno));
		p->moved = 0;
	}
}

uint64_t gk_proc_parts_bytes(const struct gk_proc_parts *ps, int ckptfd,
			     uint64_t (*bytes)(int dirfd))
{
	uint64_t total = 0;

	for (size_t i = 0; i < ps->n; i++) {
		int fd =
		    openat(ckptfd, ps->p[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0)
			continue;
		total += bytes(fd);
		close(fd);
	}
	return total;
}
