#include "config.h"

#include "task_program.h"

#include <elf.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int executable_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

int gk_program_find(const char *argv0, const char *path, const char *cwd, char *out, size_t len)
{
	const char *dir, *end;

	if (!argv0 || !argv0[0])
		return -ENOENT;
	if (strchr(argv0, '/')) {
		if (argv0[0] == '/' || !cwd || !cwd[0])
			snprintf(out, len, "%s", argv0);
		else
			snprintf(out, len, "%s/%s", cwd,
				 strncmp(argv0, "./", 2) == 0 ? argv0 + 2 : argv0);
		return executable_file(out) ? 0 : -ENOENT;
	}
	for (dir = path ? path : ""; *dir; dir = *end ? end + 1 : end) {
		end = strchr(dir, ':');
		if (!end)
			end = dir + strlen(dir);
		/* An empty entry is the current folder, as for execvp. */
		if (end == dir)
			snprintf(out, len, "%s/%s", cwd && cwd[0] ? cwd : ".", argv0);
		else if (dir[0] == '/')
			snprintf(out, len, "%.*s/%s", (int)(end - dir), dir, argv0);
		else
			snprintf(out, len, "%s/%.*s/%s", cwd && cwd[0] ? cwd : ".", (int)(end - dir),
				 dir, argv0);
		if (executable_file(out))
			return 0;
	}
	return -ENOENT;
}

/* Does the ELF file on fd ask for a program interpreter (the dynamic loader)? */
static int has_interp(int fd, const unsigned char *ident)
{
	Elf64_Ehdr e64;
	Elf32_Ehdr e32;
	unsigned phnum, phentsize;
	off_t phoff;

	if (ident[EI_CLASS] == ELFCLASS64) {
		if (pread(fd, &e64, sizeof(e64), 0) != (ssize_t)sizeof(e64))
			return -EIO;
		phoff = (off_t)e64.e_phoff;
		phnum = e64.e_phnum;
		phentsize = e64.e_phentsize;
	} else if (ident[EI_CLASS] == ELFCLASS32) {
		if (pread(fd, &e32, sizeof(e32), 0) != (ssize_t)sizeof(e32))
			return -EIO;
		phoff = (off_t)e32.e_phoff;
		phnum = e32.e_phnum;
		phentsize = e32.e_phentsize;
	} else {
		return -EINVAL;
	}
	if (phnum > 4096 || phentsize < sizeof(Elf32_Phdr))
		return -EINVAL;
	for (unsigned i = 0; i < phnum; i++) {
		/* p_type is the first word of both layouts. */
		uint32_t type;

		if (pread(fd, &type, sizeof(type), phoff + (off_t)i * phentsize) !=
		    (ssize_t)sizeof(type))
			return -EIO;
		if (type == PT_INTERP)
			return 1;
	}
	return 0;
}

int gk_program_preloadable(const char *exe, char *why, size_t len)
{
	unsigned char ident[EI_NIDENT];
	struct stat st;
	int fd, ret;

	fd = open(exe, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		snprintf(why, len, "is set-%s-ID: the dynamic loader ignores LD_PRELOAD for it",
			 st.st_mode & S_ISUID ? "user" : "group");
		ret = 0;
		goto out;
	}
	ret = 1;
	/* Not ELF (a script): its interpreter is the program, and is looked at
	 * no further; most are dynamically linked. */
	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0)
		goto out;
	ret = has_interp(fd, ident);
	if (ret == 0)
		snprintf(why, len, "is statically linked: LD_PRELOAD cannot load anything into it");
	if (ret < 0)
		ret = 1; /* an ELF file we cannot make out: say nothing */
out:
	close(fd);
	return ret;
}
