/*
 * prog-exec - exec the list forms of exec through the runtime's exec_guard.c:
 *
 *	prog-exec execle PROG ARG...   execle with an empty environment
 *	prog-exec execl PROG ARG...    execl, the environment as it is
 *	prog-exec execlp PROG ARG...   execlp, the environment as it is
 *
 * At most three ARGs (the list forms take a fixed list). Exits 127 if the
 * exec fails.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *const empty[] = {NULL};
	const char *a[4] = {NULL, NULL, NULL, NULL};

	if (argc < 3 || argc > 6) {
		fputs("usage: prog-exec execle|execl|execlp PROG [ARG...] (at most 3)\n", stderr);
		return 2;
	}
	for (int i = 3; i < argc; i++)
		a[i - 3] = argv[i];
	if (strcmp(argv[1], "execle") == 0)
		execle(argv[2], argv[2], a[0], a[1], a[2], (char *)NULL, empty);
	else if (strcmp(argv[1], "execl") == 0)
		execl(argv[2], argv[2], a[0], a[1], a[2], (char *)NULL);
	else if (strcmp(argv[1], "execlp") == 0)
		execlp(argv[2], argv[2], a[0], a[1], a[2], (char *)NULL);
	perror("prog-exec");
	return 127;
}
