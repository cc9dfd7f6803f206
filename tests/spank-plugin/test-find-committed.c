/*
 * Unit test: which checkpoint the plugin tells a task to restore
 * (spank-plugin/ckpt_dir.c, gk_find_committed_at): the newest ckpt.N folder
 * that holds a regular manifest.json. A folder without one (being written),
 * a link named like a checkpoint, a folder whose manifest.json is a link, a
 * plain file named like one, and names the runtime does not write are not
 * committed checkpoints, however new their number.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank-plugin/ckpt_dir.h"
#include "tap.h"

static char root[] = "/tmp/gk-test-find-committed.XXXXXX";

/* ROOT/REL as a folder, and ROOT/REL/manifest.json as a regular file when
 * manifest is set. */
static void ckpt(const char *rel, int manifest)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (mkdir(path, 0700) < 0) {
		perror(path);
		exit(1);
	}
	if (!manifest)
		return;
	snprintf(path, sizeof(path), "%s/%s/manifest.json", root, rel);
	f = fopen(path, "w");
	if (!f || fputs("{}\n", f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void link_at(const char *target, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (symlink(target, path) < 0) {
		perror(path);
		exit(1);
	}
}

/* What gk_find_committed_at says of ROOT now: "" when none is committed. */
static const char *newest(int *ret)
{
	static char name[64];
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	name[0] = '\0';
	*ret = gk_find_committed_at(fd, name, sizeof(name));
	close(fd);
	if (*ret <= 0)
		name[0] = '\0';
	return name;
}

int main(void)
{
	char cmd[600];
	int ret;

	plan(6);
	if (!mkdtemp(root)) {
		perror(root);
		return 1;
	}
	is_str(newest(&ret), "", "an empty task folder: nothing to restore");
	is_int(ret, 0, "... and it says none, not an error");

	ckpt("ckpt.000001", 1);
	ckpt("ckpt.000002", 0); /* being written: no manifest yet */
	is_str(newest(&ret), "ckpt.000001", "a folder without its manifest is not committed");

	/* Newer numbers that are no committed checkpoints of this folder. */
	ckpt("elsewhere", 1);
	link_at("elsewhere", "ckpt.000003");
	ckpt("ckpt.000004", 0);
	link_at("../elsewhere/manifest.json", "ckpt.000004/manifest.json");
	snprintf(cmd, sizeof(cmd), "%s/ckpt.000005", root);
	close(open(cmd, O_WRONLY | O_CREAT | O_EXCL, 0600));
	ckpt("ckpt.6", 1); /* not the runtime's spelling */
	is_str(newest(&ret), "ckpt.000001",
	       "a link named like a checkpoint, a linked manifest, a plain file and a name the "
	       "runtime does not write are all passed over");

	ckpt("ckpt.000010", 1);
	is_str(newest(&ret), "ckpt.000010", "the newest committed one is chosen");
	is_int(ret, 1, "... and it says found");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	return done_testing();
}
