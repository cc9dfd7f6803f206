/*
 * seal-tool - seals for the tests: a real one, as the shepherd makes it
 * (root), and the forgeries a user can make.
 *
 *	seal-tool seal DIR UID GID     root: criu/SEAL and SEAL.sig over DIR/criu
 *	                               (gk_seal_write, what the shepherd does)
 *	seal-tool forge DIR UID GID    anyone: a version 2 seal (the format before
 *	                               root's credential existed) with correct
 *	                               digests, plus, when munged answers, a
 *	                               SEAL.sig of the caller's own credential
 *	                               over it with the seal's payload kind
 *
 * forge computes everything itself, from the published formats: that is the
 * point, a user can.
 */
#include "config.h"
#include "image/image.h"
#include "image/seal.h"
#include "common/error.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <munge.h>

static int digest(int dirfd, const char *name, char hex[65])
{
	char buf[1 << 20];
	uint64_t h = 0;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		h = gk_xxh64(buf, (size_t)n, h);
	close(fd);
	snprintf(hex, 65, "xxh64:%016llx", (unsigned long long)h);
	return 0;
}

static int forge(const char *dir, unsigned uid, unsigned gid)
{
	char path[4200], text[1 << 16], hex[65], mhex[65], payload[128], *cred = NULL;
	size_t len = 0;
	struct dirent *e;
	FILE *f;
	DIR *d;
	int ckptfd = open(dir, O_RDONLY | O_DIRECTORY), criufd, fd, n = 0;

	if (ckptfd < 0 || (criufd = openat(ckptfd, "criu", O_RDONLY | O_DIRECTORY)) < 0) {
		perror(dir);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	f = fopen(path, "r");
	if (f) {
		len = fread(text, 1, sizeof(text), f);
		fclose(f);
	}
	gk_sha256_hex(text, len, mhex);
	len = (size_t)snprintf(text, sizeof(text),
			       "{\"format\": \"gpuckpt-seal\", \"version\": 2, \"uid\": %u, \"gid\": "
			       "%u, \"job\": \"77\", \"step\": \"0\", \"task\": 0, "
			       "\"manifest_sha256\": \"%s\", \"socket\": \"\", \"stdio\": [\"\", "
			       "\"\", \"\"], \"gpus\": [], \"files\": {",
			       uid, gid, mhex);
	d = fdopendir(dup(criufd));
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "SEAL") || !strcmp(e->d_name, "SEAL.sig"))
			continue;
		if (digest(criufd, e->d_name, hex) < 0)
			continue;
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\"%s\": \"%s\"",
					n++ ? ", " : "", e->d_name, hex);
	}
	if (d)
		closedir(d);
	len += (size_t)snprintf(text + len, sizeof(text) - len, "}}\n");
	fd = openat(criufd, "SEAL", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		perror("SEAL");
		return 1;
	}
	close(fd);
	/* The user's own credential over the payload root would sign. */
	snprintf(payload, sizeof(payload), "gpuckpt-seal-sha256:");
	gk_sha256_hex(text, len, payload + strlen(payload));
	if (munge_encode(&cred, NULL, payload, (int)strlen(payload)) == EMUNGE_SUCCESS) {
		fd = openat(criufd, "SEAL.sig", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, cred, strlen(cred)) < 0)
			perror("SEAL.sig");
		if (fd >= 0)
			close(fd);
		free(cred);
	}
	return 0;
}

static int seal(const char *dir, unsigned uid, unsigned gid)
{
	struct gk_seal *s = calloc(1, sizeof(*s));
	gk_error_t err;
	int ckptfd = open(dir, O_RDONLY | O_DIRECTORY), criufd, ret;

	if (!s || ckptfd < 0 || (criufd = openat(ckptfd, "criu", O_RDONLY | O_DIRECTORY)) < 0) {
		perror(dir);
		return 1;
	}
	s->uid = uid;
	s->gid = gid;
	snprintf(s->job, sizeof(s->job), "77");
	snprintf(s->step, sizeof(s->step), "0");
	ret = gk_seal_write(ckptfd, criufd, s, &err);
	if (ret < 0)
		fprintf(stderr, "seal-tool: %s\n", err.text);
	free(s);
	close(criufd);
	close(ckptfd);
	return ret < 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: seal-tool seal|forge DIR UID GID\n");
		return 2;
	}
	if (!strcmp(argv[1], "seal"))
		return seal(argv[2], (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]));
	if (!strcmp(argv[1], "forge"))
		return forge(argv[2], (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]));
	return 2;
}
