/*
 * record.c - SHARED_ROOT/JOB/.gpuckpt-job, root's: whose job the folder
 * holds. Job ids come back (MaxJobId wraps, a controller starts afresh), and
 * a folder keyed by id alone would hand an earlier job's checkpoints to
 * whoever gets its id next.
 *
 *	uid 1001
 *	submit 2026-11-23T21:51:03
 *	restarts 1
 *
 * Slurm 22.05 sets a job's SubmitTime anew when it is requeued (seen on the
 * test cluster: 21:51:03, then 21:51:09 after scontrol requeue), so the
 * submit time alone cannot tell a requeued job from a new one; and it counts
 * the requeue before the epilog of the run that was requeued runs (that
 * epilog already records restart 1, the next prolog sees 1 too: seen on the
 * test cluster). So: a later run of the same job has a restart count above 0
 * and no lower than the record's, and a submit time no earlier. A job's
 * first run (restart count 0) has no folder of its own yet: one there is an
 * earlier job's, and its prolog removes it; so by the time a job with an old
 * id is requeued, nothing of the earlier job is left to be taken for its own.
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int record_read(int sjobfd, struct job_ident *rec)
{
	char buf[256], uid[32], submit[32], restarts[32];
	struct stat st;
	ssize_t n;
	char *end;
	int fd = openat(sjobfd, STAGE_RECORD, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	memset(rec, 0, sizeof(*rec));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (n = read(fd, buf, sizeof(buf) - 1)) <= 0) {
		close(fd);
		return -EINVAL;
	}
	close(fd);
	buf[n] = 0;
	if (sscanf(buf, "uid %31s submit %31s restarts %31s", uid, submit, restarts) != 3)
		return -EINVAL;
	errno = 0;
	rec->uid = (uid_t)strtoul(uid, &end, 10);
	if (errno || *end)
		return -EINVAL;
	rec->restarts = (unsigned)strtoul(restarts, &end, 10);
	if (errno || *end)
		return -EINVAL;
	snprintf(rec->submit, sizeof(rec->submit), "%s", submit);
	/* "unknown": written when the controller could not be asked. */
	rec->known = strcmp(submit, "unknown") != 0;
	return 0;
}

int record_write(int sjobfd, const struct job_ident *rec)
{
	char text[256], tmp[64];
	int fd, len, ret = 0;

	len = snprintf(text, sizeof(text), "uid %u\nsubmit %s\nrestarts %u\n", (unsigned)rec->uid,
		       rec->known ? rec->submit : "unknown", rec->known ? rec->restarts : 0);
	snprintf(tmp, sizeof(tmp), "%s.%d", STAGE_RECORD, (int)getpid());
	fd = openat(sjobfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len || fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0 && renameat(sjobfd, tmp, sjobfd, STAGE_RECORD) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(sjobfd, tmp, 0);
	return ret;
}

int record_ours(const struct job_ident *rec, const struct job_ident *now)
{
	if (rec->uid != now->uid)
		return 0;
	/* Without the controller's answer (now, or when it was written) the
	 * owner is all there is to compare. */
	if (!rec->known || !now->known)
		return 1;
	if (!strcmp(rec->submit, now->submit))
		return 1;
	/* A later run of the same job, requeued since the record was written. */
	return now->restarts > 0 && now->restarts >= rec->restarts &&
	       strcmp(rec->submit, now->submit) <= 0;
}

void record_show(const struct job_ident *rec, char *buf, size_t len)
{
	if (rec->known)
		snprintf(buf, len, "uid %u, submitted %s, %u restart%s", (unsigned)rec->uid,
			 rec->submit, rec->restarts, rec->restarts == 1 ? "" : "s");
	else
		snprintf(buf, len, "uid %u", (unsigned)rec->uid);
}
