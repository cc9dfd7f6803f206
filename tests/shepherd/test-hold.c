/*
 * test-hold - a stopped process with one thread let run (runtime/shepherd/
 * hold.c), on a real process of two threads: the restore's way of keeping a
 * restored tree still while the driver's restore thread works; and a tree
 * stopped for a dump, a vfork parent in it too. No CRIU, no GPU: the
 * process is stopped with SIGSTOP, as CRIU's --leave-stopped does.
 */
#include "config.h"
#include "common/log.h"
#include "common/procstat.h"
#include "shepherd/shepherd.h"
#include "tap.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Shared with the child: what each of its threads has done. */
struct shared {
	volatile long main_ticks, worker_ticks, usr1;
	volatile pid_t worker_tid;
};

static struct shared *sh;

static void on_usr1(int sig)
{
	(void)sig;
	sh->usr1++;
}

static void *worker(void *arg)
{
	(void)arg;
	sh->worker_tid = (pid_t)syscall(SYS_gettid);
	for (;;) {
		sh->worker_ticks++;
		usleep(200);
	}
	return NULL;
}

/* For the tend point: the held thread's ticks 100 ms into the tend and at
 * its end, 300 ms in, when done is set. */
struct tend_watch {
	atomic_int done;
	long mid, end;
};

static void *end_tend_later(void *arg)
{
	struct tend_watch *tw = arg;

	usleep(100000);
	tw->mid = sh->worker_ticks;
	usleep(200000);
	tw->end = sh->worker_ticks;
	atomic_store(&tw->done, 1);
	return NULL;
}

static pid_t start_child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pthread_t t;

		signal(SIGUSR1, on_usr1);
		if (pthread_create(&t, NULL, worker, NULL) != 0)
			_exit(1);
		for (;;) {
			sh->main_ticks++;
			usleep(200);
		}
	}
	return pid;
}

/*
 * A process that vforks, as dash does for each command, and whose child
 * waits pre_exec_ms before its exec (a window a SIGSTOP can fall in: the
 * child stopped there holds its parent in vfork, which does not stop).
 * Returns once the child exists; *kid is its pid.
 */
static pid_t start_vforker(long pre_exec_ms, pid_t *kid)
{
	char path[64], buf[64] = "";
	pid_t pid = fork();

	if (pid == 0) {
		if (vfork() == 0) {
			struct timespec ts = {pre_exec_ms / 1000, (pre_exec_ms % 1000) * 1000000L};

			syscall(SYS_nanosleep, &ts, NULL);
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
			_exit(127);
		}
		for (;;)
			pause();
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (*kid = 0; !*kid; usleep(1000)) {
		FILE *f = fopen(path, "re");

		if (f && fgets(buf, sizeof(buf), f))
			*kid = (pid_t)atoi(buf);
		if (f)
			fclose(f);
	}
	return pid;
}

static char state_of(pid_t pid)
{
	char st = '?';

	return gk_thread_state(pid, pid, &st) == 0 ? st : '?';
}

static void end_vforker(pid_t pid, pid_t kid)
{
	kill(kid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Wait until pid has reported a group stop to this parent. */
static int stopped(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status);
}

/* The hex value of a field of /proc/PID/task/TID/status. */
static unsigned long long status_hex(pid_t pid, pid_t tid, const char *key)
{
	char path[96], line[256];
	unsigned long long v = ~0ULL;
	size_t klen = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			v = strtoull(line + klen + 1, NULL, 16);
	fclose(f);
	return v;
}

static long tracer_of(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

int main(void)
{
	struct gk_held_thread h;
	gk_error_t err;
	pid_t child, other;
	long m0, w0, w1;
	unsigned long long blk;
	int status, ret;

	plan(12);
	gk_log_set_level(GK_LOG_ERROR);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset((void *)sh, 0, sizeof(*sh));
	child = start_child();
	while (!sh->worker_tid || !sh->main_ticks || !sh->worker_ticks)
		usleep(1000);

	kill(child, SIGSTOP);
	ok(stopped(child), "the process is in its group stop");
	usleep(20000);
	m0 = sh->main_ticks;
	w0 = sh->worker_ticks;
	usleep(50000);
	ok(sh->main_ticks == m0 && sh->worker_ticks == w0, "stopped: neither thread runs");

	ret = gk_hold_run_thread(child, sh->worker_tid, &h, &err);
	usleep(100000);
	blk = status_hex(child, sh->worker_tid, "SigBlk");
	ok(ret == 0 && sh->worker_ticks > w0 && sh->main_ticks == m0 &&
	       (blk & (1ULL << (SIGUSR1 - 1))) && (blk & (1ULL << (SIGTERM - 1))),
	   "only the thread let run runs, with its signals blocked (ret %d, worker %ld -> %ld, "
	   "main %ld -> %ld, SigBlk %llx)",
	   ret, w0, (long)sh->worker_ticks, m0, (long)sh->main_ticks, blk);

	kill(child, SIGUSR1);
	usleep(50000);
	ok(sh->usr1 == 0, "a signal for the process runs no handler while it is held");

	/* A SIGSTOP for the process while it is held traps the thread let run
	 * for its tracer, as a signal did in 3 torch restores of 10 on an H200
	 * (hold.c): tended, it goes on, and the rest stays stopped. Without
	 * gk_hold_tend it stays trapped, its ticks stop, and this fails. */
	{
		struct tend_watch tw = {.mid = 0};
		pthread_t t;

		kill(child, SIGSTOP);
		pthread_create(&t, NULL, end_tend_later, &tw);
		gk_hold_tend(&h, 1, &tw.done);
		pthread_join(t, NULL);
		ok(tw.end > tw.mid && sh->main_ticks == m0 && h.running && h.restarts >= 1,
		   "a stop that reaches the thread let run is let go on by the tend, the rest stays "
		   "stopped (worker %ld -> %ld after the SIGSTOP, main %ld -> %ld, restarts %d)",
		   tw.mid, tw.end, m0, (long)sh->main_ticks, h.restarts);
	}

	gk_hold_stop_thread(&h);
	usleep(20000);
	w1 = sh->worker_ticks;
	usleep(50000);
	ok(sh->worker_ticks == w1 && sh->main_ticks == m0 &&
	       status_hex(child, sh->worker_tid, "SigBlk") == 0 && tracer_of(child) == 0,
	   "stopped again, the thread is back in the group stop, untraced, with its own mask");

	gk_hold_release(child);
	usleep(100000);
	ok(sh->worker_ticks > w1 && sh->main_ticks > m0 && sh->usr1 == 1,
	   "released: both threads run, and the signal held back is taken (%ld)", (long)sh->usr1);

	/* The checkpoint's way in: the tree stopped, every thread of it. */
	{
		pid_t pids[8];
		size_t n = 0;

		ret = gk_hold_stop_tree(child, pids, 8, &n, &err);
		m0 = sh->main_ticks;
		w0 = sh->worker_ticks;
		usleep(50000);
		ok(ret == 0 && n == 1 && pids[0] == child && sh->main_ticks == m0 &&
		       sh->worker_ticks == w0,
		   "the tree stopped: listed (%zu), and no thread of it runs (ret %d)", n, ret);
		/* Continued before this parent waited: the kernel drops the
		 * stop's report, nothing is left to reap. */
		gk_hold_release(child);
	}

	/* A vfork parent whose child a SIGSTOP caught before its exec: the
	 * pair is stopped all the same (in a later round, once the tree has
	 * run a moment and the exec is done). */
	{
		pid_t pids[8], vf, kid;
		size_t n = 0;
		char s1, s2;

		vf = start_vforker(300, &kid);
		memset(&err, 0, sizeof(err));
		ret = gk_hold_stop_tree(vf, pids, 8, &n, &err);
		s1 = state_of(vf);
		s2 = state_of(kid);
		ok(ret == 0 && n == 2 && s1 == 'T' && s2 == 'T',
		   "a vfork parent whose child was stopped before its exec: both stopped (ret %d, "
		   "%zu listed, states %c %c) %s",
		   ret, n, s1, s2, err.text);
		gk_hold_release(vf);
		end_vforker(vf, kid);

		/* One whose vfork does not end within the deadline: refused,
		 * and nothing of it left stopped. */
		vf = start_vforker(60000, &kid);
		memset(&err, 0, sizeof(err));
		ret = gk_hold_stop_tree(vf, pids, 8, &n, &err);
		usleep(50000);
		s1 = state_of(vf);
		s2 = state_of(kid);
		ok(ret == -ETIMEDOUT && strstr(err.text, "did not stop within") && s1 != 'T' &&
		       s2 != 'T',
		   "a tree that will not stop is refused and left running, not stopped (ret %d, "
		   "states %c %c: %s)",
		   ret, s1, s2, err.text);
		end_vforker(vf, kid);
	}

	/* A thread the driver names that is not the process's: nothing is done
	 * to it, whose ever it is. */
	other = fork();
	if (other == 0) {
		pause();
		_exit(0);
	}
	kill(other, SIGSTOP);
	stopped(other);
	memset(&err, 0, sizeof(err));
	ret = gk_hold_run_thread(child, other, &h, &err);
	ok(ret == -EPERM && strstr(err.text, "not one of pid") && tracer_of(other) == 0 &&
	       !h.traced,
	   "a thread of another process is refused and left untraced (%s)", err.text);
	kill(other, SIGKILL);
	waitpid(other, &status, 0);

	kill(child, SIGSTOP);
	stopped(child);
	gk_hold_kill(child);
	ok(waitpid(child, &status, 0) == child && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGKILL,
	   "a held tree that is given up is killed, not left stopped");
	return done_testing();
}
