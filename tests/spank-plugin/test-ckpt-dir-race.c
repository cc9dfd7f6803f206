/*
 * Unit test: the tasks of a step start at once on a node, and each makes
 * the job's and the step's folders (spank-plugin/ckpt_dir.c). None may find
 * a level still root's, half made by a sibling, and refuse to start (seen
 * in e2e-modes.sh before levels were renamed into place). Forked tasks,
 * released together, for many new jobs; needs root (the folders are given
 * to another uid).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spank-plugin/ckpt_dir.h"
#include "tap.h"

#define ROUNDS 40
#define TASKS 8
#define UID 4242

int main(void)
{
	char root[] = "/tmp/gk-test-ckpt-race.XXXXXX", path[256], cmd[256], ls[600];
	int failed = 0, wrong = 0, leftovers = 0;

	plan(3);
	if (geteuid() != 0) {
		for (int i = 0; i < 3; i++)
			skip("needs root (the folders are given to another uid)");
		return done_testing();
	}
	if (!mkdtemp(root)) {
		perror(root);
		return 1;
	}
	for (int round = 0; round < ROUNDS; round++) {
		int go[2];
		pid_t pids[TASKS];

		if (pipe(go) < 0)
			return 1;
		for (int t = 0; t < TASKS; t++) {
			pids[t] = fork();
			if (pids[t] == 0) {
				struct gk_task_ids ids = {100 + (uint32_t)round, 0, (uint32_t)t,
							  UID, UID, 0};
				gk_error_t err;
				char c;

				close(go[1]);
				/* All start when the pipe closes. */
				if (read(go[0], &c, 1) < 0)
					_exit(2);
				if (gk_task_dir_make(root, "bb_root", &ids, &err) < 0) {
					printf("# task %d: %s\n", t, err.text);
					_exit(1);
				}
				_exit(0);
			}
		}
		close(go[0]);
		close(go[1]);
		for (int t = 0; t < TASKS; t++) {
			int status;

			if (waitpid(pids[t], &status, 0) < 0 || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0)
				failed++;
		}
		for (int t = 0; t < TASKS; t++) {
			struct stat st;

			snprintf(path, sizeof(path), "%s/%d/step.0/task.%d", root, 100 + round, t);
			if (stat(path, &st) < 0 || st.st_uid != UID || (st.st_mode & 07777) != 0700)
				wrong++;
		}
		snprintf(cmd, sizeof(cmd), "%s/%d", root, 100 + round);
		snprintf(ls, sizeof(ls), "ls -A '%s' '%s/step.0' | grep -q '^\\.tmp'", cmd, cmd);
		if (system(ls) == 0)
			leftovers++;
	}
	is_int(failed, 0, "%d rounds of %d tasks making one step's folders at once: none refused",
	       ROUNDS, TASKS);
	is_int(wrong, 0, "every task folder is the user's, 0700");
	is_int(leftovers, 0, "no temporary folder left behind");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	return done_testing();
}
