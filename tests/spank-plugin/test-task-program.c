/* Unit tests: can the runtime be loaded into a task's program (spank-plugin/task_program.c)? */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank-plugin/task_program.h"
#include "tap.h"

/* An ELF file with no program interpreter: what a static link gives. */
static int write_static_elf(const char *path)
{
	Elf64_Ehdr e;
	Elf64_Phdr ph;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	memset(&e, 0, sizeof(e));
	memcpy(e.e_ident, ELFMAG, SELFMAG);
	e.e_ident[EI_CLASS] = ELFCLASS64;
	e.e_ident[EI_DATA] = ELFDATA2LSB;
	e.e_ident[EI_VERSION] = EV_CURRENT;
	e.e_type = ET_EXEC;
	e.e_machine = EM_X86_64;
	e.e_version = EV_CURRENT;
	e.e_phoff = sizeof(e);
	e.e_ehsize = sizeof(e);
	e.e_phentsize = sizeof(ph);
	e.e_phnum = 1;
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_LOAD;
	fwrite(&e, sizeof(e), 1, f);
	fwrite(&ph, sizeof(ph), 1, f);
	fclose(f);
	return chmod(path, 0755);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	if (system(cmd) != 0)
		printf("# %s failed\n", cmd);
}

int main(void)
{
	char dir[] = "/tmp/gk-test-program.XXXXXX", p[4096], out[4096], why[256], cmd[4200];
	int rc;

	plan(14);
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}

	/* Finding it, as execvp would. */
	is_int(gk_program_find("sh", "/nonexistent:/bin:/usr/bin", "/", out, sizeof(out)), 0,
	       "a name is looked for along PATH");
	is_str(out, "/bin/sh", "... the first folder that has it");
	snprintf(p, sizeof(p), "%s/prog", dir);
	write_static_elf(p);
	is_int(gk_program_find("./prog", "/bin", dir, out, sizeof(out)), 0,
	       "a relative path is taken from the task's folder");
	is_str(out, p, "... %s", out);
	is_int(gk_program_find("prog", "/bin", dir, out, sizeof(out)), -ENOENT,
	       "a name is not looked for in the task's folder when PATH does not say so");
	is_int(gk_program_find("prog", "/bin::", dir, out, sizeof(out)), 0,
	       "... an empty PATH entry is the task's folder");
	is_int(gk_program_find("no-such-program-here", "/bin:/usr/bin", "/", out, sizeof(out)),
	       -ENOENT, "a program that is not there: -ENOENT");

	/* What the runtime can be loaded into. */
	is_int(gk_program_preloadable("/bin/sh", why, sizeof(why)), 1,
	       "a dynamically linked program: yes");
	snprintf(p, sizeof(p), "%s/script", dir);
	copy_file("/dev/null", p);
	snprintf(cmd, sizeof(cmd), "printf '#!/bin/sh\\nexit 0\\n' >'%s'", p);
	if (system(cmd) != 0)
		printf("# %s failed\n", cmd);
	is_int(gk_program_preloadable(p, why, sizeof(why)), 1, "a script: yes (its interpreter runs)");
	snprintf(p, sizeof(p), "%s/prog", dir);
	rc = gk_program_preloadable(p, why, sizeof(why));
	is_int(rc, 0, "a statically linked program: no");
	ok(strstr(why, "statically linked") != NULL, "... saying why: %s", why);
	snprintf(p, sizeof(p), "%s/setuid", dir);
	copy_file("/bin/true", p);
	chmod(p, 04755);
	rc = gk_program_preloadable(p, why, sizeof(why));
	is_int(rc, 0, "a set-user-ID program: no");
	ok(strstr(why, "set-user-ID") != NULL, "... saying why: %s", why);
	is_int(gk_program_preloadable("/nonexistent/prog", why, sizeof(why)), -ENOENT,
	       "a file that is not there: nothing to say");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return done_testing();
}
