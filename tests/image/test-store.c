/*
 * test-store - the checkpoint root: begin/commit/abort, numbering, prune
 * keeping the newest N, a crashed writer's .tmp never listed as complete,
 * a failed commit leaving the previous checkpoints alone, and deletion that
 * never follows a symbolic link; increments: what a checkpoint needs, and a
 * prune that keeps what a kept checkpoint refers to.
 */
#include "config.h"
#include "image/image.h"
#include "common/log.h"
#include "tap.h"
#include "common/error.h"
#include "fixture-manifest.h"
#include "fixture-root.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static gk_error_t err;

/* A manifest for one allocation of `size` bytes held in device0.data. */
static struct gk_manifest *manifest_for(const uint8_t *data, uint64_t size, const char *label)
{
	struct gk_manifest *m = empty_manifest(label);
	struct gk_alloc_rec *a;

	m->ndevices = 1;
	m->devices = calloc(1, sizeof(*m->devices));
	strcpy(m->devices[0].name, "Test GPU");
	strcpy(m->devices[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
	m->devices[0].cc_major = 8;
	m->devices[0].va_base = m->va_base;
	m->devices[0].va_size = m->va_size;
	m->devices[0].next_order = 1;
	m->nallocs = 1;
	m->allocs = a = calloc(1, sizeof(*m->allocs));
	a->address = m->va_base;
	a->size = size;
	strcpy(a->kind, "alloc");
	a->parts = calloc(1, sizeof(*a->parts));
	a->nparts = size ? 1 : 0;
	strcpy(a->parts[0].file, "device0.data");
	a->parts[0].size = size;
	a->nchunks = gk_chunk_count(size, m->chunk_size);
	a->chunks = calloc(a->nchunks ? a->nchunks : 1, sizeof(*a->chunks));
	for (uint32_t c = 0; c < a->nchunks; c++) {
		uint64_t start = (uint64_t)c * m->chunk_size;
		uint64_t len = size - start < m->chunk_size ? size - start : m->chunk_size;

		a->chunks[c].sum = gk_sum(GK_SUM_XXH3, data + start, len);
	}
	return m;
}

/* Write one checkpoint the way the runtime does; returns its sequence or -1. */
static int64_t write_checkpoint(unsigned keep, const char *label)
{
	struct gk_store_txn txn;
	struct gk_manifest *m;
	uint8_t data[10000];
	int fd, is_signed;
	int64_t seq = -1;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + label[0]);
	if (gk_store_begin(root, &txn, &err) < 0)
		return -1;
	if (gk_store_create(&txn, "device0.data", &fd, &err) < 0) {
		gk_store_abort(&txn);
		return -1;
	}
	if (write(fd, data, sizeof(data)) != (ssize_t)sizeof(data)) {
		close(fd);
		gk_store_abort(&txn);
		return -1;
	}
	close(fd);
	m = manifest_for(data, sizeof(data), label);
	if (gk_store_commit(&txn, m, keep, &is_signed, &err) == 0)
		seq = (int64_t)m->sequence;
	gk_manifest_free(m);
	return seq;
}

/*
 * An increment: its allocation's data lies in checkpoint `base`'s
 * device0.data (10000 bytes, as write_checkpoint writes it), with the
 * checksums of `base`'s manifest (no data file of its own).
 */
static int64_t write_increment(uint64_t base, unsigned keep)
{
	struct gk_manifest *b = NULL, *m;
	struct gk_store_txn txn;
	int rootfd = open(root, O_RDONLY | O_DIRECTORY), is_signed;
	int64_t seq = -1;
	uint8_t data[10000];

	if (rootfd < 0 || gk_chain_read_manifest(rootfd, base, &b, &err) < 0)
		goto out;
	m = manifest_for(data, sizeof(data), "increment");
	memcpy(m->allocs[0].chunks, b->allocs[0].chunks, m->allocs[0].nchunks * sizeof(struct gk_chunk));
	m->allocs[0].parts[0].sequence = base;
	m->increment = 1;
	m->nrefs = 1;
	m->refs = calloc(1, sizeof(*m->refs));
	m->refs[0].sequence = base;
	strcpy(m->refs[0].id, b->id);
	m->refs[0].nfiles = 1;
	m->refs[0].files = calloc(1, sizeof(struct gk_file_rec));
	strcpy(m->refs[0].files[0].name, "device0.data");
	m->refs[0].files[0].size = 10000;
	if (gk_store_begin(root, &txn, &err) == 0 &&
	    gk_store_commit(&txn, m, keep, &is_signed, &err) == 0)
		seq = (int64_t)m->sequence;
	gk_manifest_free(m);
out:
	gk_manifest_free(b);
	if (rootfd >= 0)
		close(rootfd);
	return seq;
}

/* The listing as "ckpt.000004 ckpt.000003 .tmp.ckpt.000009.h.1(stale)". */
static const char *listing(void)
{
	static char out[4096];
	struct gk_store_entry *e = NULL;
	size_t n = 0, used = 0;

	out[0] = 0;
	if (gk_store_list(root, &e, &n, &err) < 0)
		return "(error)";
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%s%s", i ? " " : "",
					 strrchr(e[i].path, '/') + 1,
					 e[i].complete ? ""
					 : e[i].stale  ? "(stale)"
						       : "(live)");
	free(e);
	return out;
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void host_name(char *buf, size_t n)
{
	gethostname(buf, n - 1);
	buf[n - 1] = 0;
	for (char *p = buf; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_'))
			*p = '_';
}

static void make_dir_with_file(const char *dir)
{
	char f[4400];
	int fd;

	mkdir(dir, 0700);
	snprintf(f, sizeof(f), "%s/device0.data", dir);
	fd = open(f, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0) {
		if (write(fd, "x", 1) < 0)
			perror("write");
		close(fd);
	}
}

int main(void)
{
	struct gk_store_txn txn;
	struct gk_manifest *m, *opened = NULL;
	struct gk_load_opts lo = {.uid = geteuid(), .check_data = 1};
	char base[] = "/tmp/gpuckpt-test-store.XXXXXX", host[256], name[4608], outside[4800],
	     target[4900];
	struct stat st;
	int fd, ret, is_signed;
	uint8_t data[100] = {1, 2, 3};

	plan(39);
	/* Quiet the "writing it unsigned" warning when munged is absent. */
	gk_log_set_level(GK_LOG_ERROR);
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(root, sizeof(root), "%s/job/task0", base);
	host_name(host, sizeof(host));

	ret = gk_store_begin(root, &txn, &err);
	ok(ret == 0 && stat(root, &st) == 0 && (st.st_mode & 0777) == 0700,
	   "begin creates a missing root (and its parents), mode 0700");
	is_int(txn.sequence, 1, "the first checkpoint is number 1");
	snprintf(name, sizeof(name), ".tmp.ckpt.000001.%s.%d", host, (int)getpid());
	ok(exists(path_in(name)), "it is written in %s", name);
	snprintf(outside, sizeof(outside), "%s(live)", name);
	is_str(listing(), outside, "list shows it as incomplete, its writer alive");
	ret = gk_store_create(&txn, "../escape", &fd, &err);
	ok(ret == -EINVAL && strstr(err.text, "data file name '../escape' is not allowed"),
	   "create refuses a name that climbs out");
	ret = gk_store_create(&txn, GK_MANIFEST_FILE, &fd, &err);
	ok(ret == -EINVAL, "create refuses the manifest's own name");
	ret = gk_store_create(&txn, "device0.data", &fd, &err);
	ok(ret == 0 && fd >= 0, "create makes a data file");
	if (ret == 0) {
		fstat(fd, &st);
		ok((st.st_mode & 0777) == 0600, "data files are 0600");
		if (write(fd, data, sizeof(data)) < 0)
			perror("write");
		close(fd);
	} else {
		skip("no data file to look at");
	}
	ok(gk_store_create(&txn, "device0.data", &fd, &err) == -EEXIST,
	   "create refuses a file that exists");
	m = manifest_for(data, sizeof(data), "first");
	ret = gk_store_commit(&txn, m, 0, &is_signed, &err);
	if (!ok(ret == 0 && exists(path_in("ckpt.000001")) && !exists(path_in(name)),
		"commit renames the .tmp directory to ckpt.000001"))
		printf("#   %s\n", err.text);
	ok(m->sequence == 1 && m->nfiles == 1 && !strcmp(m->files[0].name, "device0.data") &&
	       m->files[0].size == sizeof(data),
	   "commit sets the sequence and lists the data files with their sizes");
	gk_manifest_free(m);
	ret = gk_image_open(path_in("ckpt.000001"), &lo, &opened, &is_signed, &err);
	if (!ok(ret == 0 && opened && !strcmp(opened->label, "first"),
		"the committed checkpoint opens, data checked"))
		printf("#   %s\n", err.text);
	gk_manifest_free(opened);

	ok(write_checkpoint(0, "second") == 2 && write_checkpoint(0, "third") == 3,
	   "checkpoints are numbered in order");
	is_str(listing(), "ckpt.000003 ckpt.000002 ckpt.000001", "list: newest first");
	ok(write_checkpoint(2, "fourth") == 4, "a commit with keep 2 succeeds");
	is_str(listing(), "ckpt.000004 ckpt.000003", "and leaves only the newest two");

	ret = gk_store_begin(root, &txn, &err);
	snprintf(name, sizeof(name), "%s", strrchr(txn.tmpdir, '/') + 1);
	gk_store_abort(&txn);
	ok(ret == 0 && !exists(path_in(name)), "abort removes the .tmp directory");
	is_str(listing(), "ckpt.000004 ckpt.000003", "abort leaves the committed ones alone");

	/* A commit that fails leaves the previous checkpoints as they were. */
	ret = gk_store_begin(root, &txn, &err);
	gk_store_create(&txn, "device0.data", &fd, &err);
	if (write(fd, data, 10) < 0)
		perror("write");
	close(fd);
	snprintf(name, sizeof(name), "%s", strrchr(txn.tmpdir, '/') + 1);
	m = manifest_for(data, sizeof(data), "bad"); /* says 100 bytes, the file has 10 */
	ret = gk_store_commit(&txn, m, 1, &is_signed, &err);
	ok(ret == -EINVAL && strstr(err.text, "the manifest is not valid") &&
	       strstr(err.text, "runs past the end of 'device0.data' (10 bytes)"),
	   "commit refuses a manifest that does not match the data");
	ok(!exists(path_in(name)), "the failed commit's .tmp directory is gone");
	is_str(listing(), "ckpt.000004 ckpt.000003", "the previous checkpoints are untouched");
	gk_manifest_free(m);

	ret = gk_store_begin(root, &txn, &err);
	gk_store_create(&txn, "device0.data", &fd, &err);
	if (write(fd, data, sizeof(data)) < 0)
		perror("write");
	close(fd);
	m = manifest_for(data, sizeof(data), "bad");
	m->nfiles = 1;
	m->files = calloc(1, sizeof(*m->files));
	strcpy(m->files[0].name, "device0.data");
	m->files[0].size = 4096;
	ret = gk_store_commit(&txn, m, 1, &is_signed, &err);
	ok(ret == -EINVAL && strstr(err.text, "is 100 bytes, the manifest says 4096"),
	   "commit refuses a file list that does not match the files");
	is_str(listing(), "ckpt.000004 ckpt.000003", "still only the two good ones");
	gk_manifest_free(m);

	/* Writers killed half-way, here and elsewhere. */
	snprintf(name, sizeof(name), ".tmp.ckpt.000009.%s.%d", host, (int)dead_pid());
	make_dir_with_file(path_in(name));
	snprintf(name, sizeof(name), ".tmp.ckpt.000006.%s.%d", host, (int)getppid());
	make_dir_with_file(path_in(name));
	make_dir_with_file(path_in(".tmp.ckpt.000007.othernode.1234"));
	make_dir_with_file(path_in(".tmp.ckpt.000008.oldnode.1234"));
	{
		struct timespec old[2] = {{time(NULL) - 2 * 86400, 0}, {time(NULL) - 2 * 86400, 0}};

		utimensat(AT_FDCWD, path_in(".tmp.ckpt.000008.oldnode.1234"), old, 0);
	}
	{
		/* The dead pid is not known here; compare around it. */
		const char *l = listing();

		ok(strncmp(l, "ckpt.000004 ckpt.000003 .tmp.ckpt.000009.", 41) == 0 &&
		       strstr(l, "(stale) .tmp.ckpt.000008.oldnode.1234(stale) "
				 ".tmp.ckpt.000007.othernode.1234(live) .tmp.ckpt.000006."),
		   "incomplete ones are listed after the committed ones, never as complete");
		if (strncmp(l, "ckpt.000004 ckpt.000003 .tmp.ckpt.000009.", 41) != 0)
			printf("#   %s\n", l);
	}
	ok(write_checkpoint(0, "fifth") == 10, "numbering goes past incomplete ones");

	/* Deleting never follows a symbolic link. */
	snprintf(outside, sizeof(outside), "%s/outside", base);
	make_dir_with_file(outside);
	snprintf(target, sizeof(target), "%s/device0.data", outside);
	if (symlink(outside, path_in("ckpt.000000")) < 0 ||
	    symlink(target, path_in("ckpt.000003/link.data")) < 0)
		perror("symlink");
	mkdir(path_in(".trash.ckpt.000002.999999999"), 0700);
	make_dir_with_file(path_in(".trash.ckpt.000001.999999"));
	ret = gk_store_prune(root, 1, &err);
	if (!ok(ret == 4, "prune --keep 1 removes 2 old committed and 2 stale incomplete ones"))
		printf("#   returned %d: %s\n", ret, ret < 0 ? err.text : "");
	{
		const char *l = listing();

		ok(strstr(l,
			  "ckpt.000010 .tmp.ckpt.000007.othernode.1234(live) .tmp.ckpt.000006.") ==
		       l,
		   "the newest committed one and live writers' ones remain");
		printf("#   %s\n", l);
	}
	ok(exists(target) && exists(outside) && exists(path_in("ckpt.000000")),
	   "a link's target survives, and a link named like a checkpoint is not touched");
	ok(!exists(path_in(".trash.ckpt.000001.999999")),
	   "leftover .trash directories are removed");

	ret = gk_store_list("/nonexistent/gpuckpt-root", &(struct gk_store_entry *){NULL},
			    &(size_t){0}, &err);
	ok(ret == -ENOENT && strstr(err.text, "/nonexistent/gpuckpt-root"),
	   "listing a missing root fails and names it");

	{
		struct gk_store_entry *e = NULL;
		size_t n = 0;
		char slashed[4200];

		snprintf(slashed, sizeof(slashed), "%s/", root);
		ret = gk_store_list(slashed, &e, &n, &err);
		ok(ret == 0 && n > 0 && !strstr(e[0].path, "//") &&
		       !strcmp(strrchr(e[0].path, '/'), "/ckpt.000010"),
		   "a root given with a trailing slash lists clean paths");
		free(e);
	}

	mkdir(path_in("ckpt.7"), 0700);
	mkdir(path_in("ckpt.000011x"), 0700);
	ok(strstr(listing(), "ckpt.7") == NULL && strstr(listing(), "000011x") == NULL,
	   "names not spelled the way gpuckpt writes them are ignored");
	rmdir(path_in("ckpt.7"));
	rmdir(path_in("ckpt.000011x"));

	/* Increments. ckpt.000011 whole, 12 an increment of it, 13 whole. */
	gk_store_prune(root, 1, &err);
	{
		int64_t whole = write_checkpoint(0, "whole"), inc = write_increment((uint64_t)whole, 0);
		struct gk_ref *refs = NULL;
		size_t nrefs = 0;
		int rootfd = open(root, O_RDONLY | O_DIRECTORY);

		ok(whole == 11 && inc == 12, "an increment of ckpt.000011 is committed as ckpt.000012");
		ok(gk_chain_needs(rootfd, 12, &refs, &nrefs, &err) == 0 && nrefs == 1 &&
		       refs[0].sequence == 11 && refs[0].nfiles == 1 &&
		       !strcmp(refs[0].files[0].name, "device0.data"),
		   "gk_chain_needs: ckpt.000012 needs device0.data of ckpt.000011");
		gk_refs_free(refs, nrefs);
		ok(gk_chain_needs(rootfd, 11, &refs, &nrefs, &err) == 0 && nrefs == 0,
		   "... and ckpt.000011 nothing else");
		ret = gk_image_open(path_in("ckpt.000012"), &lo, &opened, NULL, &err);
		ok(ret == 0, "the increment opens, its data checked in ckpt.000011");
		gk_manifest_free(opened);
		opened = NULL;
		ok(write_checkpoint(0, "later") == 13 && gk_store_prune(root, 2, &err) >= 0 &&
		       !strncmp(listing(), "ckpt.000013 ckpt.000012 ckpt.000011 .tmp", 40),
		   "keep 2 keeps the newest two and what they refer to (%s)", listing());
		ok(gk_store_prune(root, 1, &err) >= 0 &&
		       !strncmp(listing(), "ckpt.000013 .tmp", 16),
		   "keep 1: nothing refers to them any more, both go (%s)", listing());
		/* A damaged base: its data changed, the increment is refused. */
		whole = write_checkpoint(0, "whole again");
		inc = write_increment((uint64_t)whole, 0);
		fd = open(path_in("ckpt.000014/device0.data"), O_WRONLY);
		ret = (int)pwrite(fd, "X", 1, 5000);
		close(fd);
		ret = gk_image_open(path_in("ckpt.000015"), &lo, &opened, NULL, &err);
		ok(ret == -EBADMSG &&
		       strstr(err.text, "ckpt.000014/device0.data: checksum mismatch"),
		   "a byte changed in the base: the increment is refused, naming the base's file");
		gk_manifest_free(opened);
		opened = NULL;
		close(rootfd);
	}

	if (fork() == 0) {
		execlp("rm", "rm", "-rf", base, (char *)NULL);
		_exit(127);
	}
	wait(NULL);
	return done_testing();
}
