/*
 * util.c - option parsing and output helpers shared by the subcommands.
 *
 * Options are parsed by hand rather than with getopt_long: getopt's own
 * messages cannot name the subcommand nor end with the pointer to --help, and
 * it permutes arguments in ways that surprise scripts.
 */
#include "config.h"
#include "cli/cli.h"
#include "common/fsafe.h"
#include "image/image.h"
#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_args_init(struct cli_args *a, const struct gk_cmd *cmd, int argc, char **argv)
{
	a->cmd = cmd;
	a->argc = argc;
	a->argv = argv;
	a->i = 1; /* argv[0] is the subcommand's name */
	a->no_more_options = 0;
}

static const struct cli_opt *find_long(const struct cli_opt *opts, const char *name, size_t len)
{
	for (; opts && opts->name; opts++)
		if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
			return opts;
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_opt *opts, char c)
{
	for (; opts && opts->name; opts++)
		if (opts->short_name && opts->short_name == c)
			return opts;
	return NULL;
}

int cli_next(struct cli_args *a, const struct cli_opt *opts, const char **arg)
{
	const struct cli_opt *o;
	const char *s;

	*arg = NULL;
	if (a->i >= a->argc)
		return CLI_END;
	s = a->argv[a->i++];
	if (a->no_more_options || s[0] != '-' || s[1] == 0) {
		*arg = s;
		return CLI_POSITIONAL;
	}
	if (strcmp(s, "--") == 0) {
		a->no_more_options = 1;
		return cli_next(a, opts, arg);
	}
	if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)
		return CLI_HELP;
	if (s[1] == '-') {
		const char *eq = strchr(s + 2, '=');
		size_t len = eq ? (size_t)(eq - s - 2) : strlen(s + 2);

		o = find_long(opts, s + 2, len);
		if (!o) {
			cli_usage_error(a->cmd, "unknown option '%.*s'", (int)len + 2, s);
			return CLI_ERROR;
		}
		if (!o->has_arg && eq) {
			cli_usage_error(a->cmd, "option '--%s' takes no value", o->name);
			return CLI_ERROR;
		}
		if (o->has_arg) {
			if (eq) {
				*arg = eq + 1;
			} else if (a->i < a->argc) {
				*arg = a->argv[a->i++];
			} else {
				cli_usage_error(a->cmd, "option '--%s' needs a value", o->name);
				return CLI_ERROR;
			}
		}
		return o->id;
	}
	if (s[2] != 0 || !(o = find_short(opts, s[1]))) {
		cli_usage_error(a->cmd, "unknown option '%s'", s);
		return CLI_ERROR;
	}
	if (o->has_arg) {
		if (a->i >= a->argc) {
			cli_usage_error(a->cmd, "option '-%c' needs a value", s[1]);
			return CLI_ERROR;
		}
		*arg = a->argv[a->i++];
	}
	return o->id;
}

int cli_usage_error(const struct gk_cmd *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cmd)
		gk_error("%s: %s; see gpuckpt --help", cmd->name, msg);
	else
		gk_error("%s; see gpuckpt --help", msg);
	return GK_EXIT_USAGE;
}

int cli_print_help(const struct gk_cmd *cmd)
{
	fputs(cmd->help, stdout);
	return GK_EXIT_OK;
}

json_object *cli_user_json(uid_t uid)
{
	json_object *o = json_object_new_object();
	char name[64];

	gk_user_name(uid, name, sizeof(name));
	json_object_object_add(o, "user", json_object_new_string(name));
	json_object_object_add(o, "uid", json_object_new_int64((int64_t)uid));
	return o;
}

int cli_parse_user(const char *text, uid_t *uid)
{
	struct passwd pw, *res = NULL;
	char tmp[1024], *end;
	unsigned long v;

	if (!*text)
		return -1;
	if (text[0] >= '0' && text[0] <= '9') {
		errno = 0;
		v = strtoul(text, &end, 10);
		if (errno || *end || v >= 0xffffffffUL)
			return -1;
		*uid = (uid_t)v;
		return 0;
	}
	if (getpwnam_r(text, &pw, tmp, sizeof(tmp), &res) != 0 || !res)
		return -1;
	*uid = res->pw_uid;
	return 0;
}

void cli_print_json(json_object *obj)
{
	const char *s =
	    json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						    JSON_C_TO_STRING_NOSLASHESCAPE);

	if (s)
		printf("%s\n", s);
	json_object_put(obj);
}

/* The user's way: the last name as given, relative to dirfd. */
static int open_last(int dirfd, const char *name, int follow_last, gk_error_t *err)
{
	struct stat st;
	int fd, e;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | (follow_last ? 0 : O_NOFOLLOW) | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	e = errno;
	if ((e == ELOOP || e == ENOTDIR) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		gk_errprintf(err, "%s",
			     S_ISLNK(st.st_mode)
				 ? "is a symbolic link; give the checkpoint directory itself"
				 : "not a directory");
	else
		gk_errprintf(err, "%s", strerror(e));
	return -e;
}

/* The folder above `name` in the user's way: by the path as given. */
static int open_parent_as_given(const char *path, gk_error_t *err)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash)
		return open_last(AT_FDCWD, ".", 1, err);
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof(parent)) {
		gk_errprintf(err, "path too long");
		return -ENAMETOOLONG;
	}
	memcpy(parent, path, n);
	parent[n] = 0;
	return open_last(AT_FDCWD, parent, 1, err);
}

/*
 * cli_open_dir, and with parent_out the descriptor of the folder that holds
 * it too (the one it was opened from, or its "..": never by the path again).
 */
static int open_dir(const char *path, int follow_last, int *parent_out, gk_error_t *err)
{
	char abs[PATH_MAX], cwd[PATH_MAX], *slash, *name, given[PATH_MAX];
	struct stat st;
	size_t n;
	int parentfd, fd;

	if (parent_out)
		*parent_out = -1;
	if (geteuid() != 0) {
		/* As given; the folder above as given too, stripped of any
		 * slashes at the end so that "a/b/" names b's parent a. */
		n = (size_t)snprintf(given, sizeof(given), "%s", path);
		if (n >= sizeof(given)) {
			gk_errprintf(err, "path too long");
			return -ENAMETOOLONG;
		}
		while (n > 1 && given[n - 1] == '/')
			given[--n] = 0;
		fd = open_last(AT_FDCWD, given, follow_last, err);
		if (fd < 0 || !parent_out)
			return fd;
		slash = strrchr(given, '/');
		name = slash ? slash + 1 : given;
		if (strcmp(name, ".") && strcmp(name, "..") && strcmp(given, "/")) {
			parentfd = open_parent_as_given(given, err);
		} else {
			parentfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (parentfd < 0) {
				parentfd = -errno;
				gk_errprintf(err, "%s/..: %s", given, strerror(errno));
			}
		}
		if (parentfd < 0) {
			close(fd);
			return parentfd;
		}
		*parent_out = parentfd;
		return fd;
	}
	if (path[0] == '/')
		n = (size_t)snprintf(abs, sizeof(abs), "%s", path);
	else if (getcwd(cwd, sizeof(cwd)))
		n = (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	else
		n = sizeof(abs);
	if (n >= sizeof(abs)) {
		gk_errprintf(err, "path too long");
		return -ENAMETOOLONG;
	}
	while (n > 1 && abs[n - 1] == '/')
		abs[--n] = '\0';
	slash = strrchr(abs, '/');
	name = slash + 1;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		fd = gk_open_owned_path(abs, err);
		goto up;
	}
	/* The folders above: reached by no link of a user's, one owner from
	 * the first that is not root's (gk_open_owned_path). */
	*slash = '\0';
	parentfd = gk_open_owned_path(slash == abs ? "/" : abs, err);
	*slash = '/';
	if (parentfd < 0)
		return parentfd;
	/* A link as the last name: followed only as the walk follows one
	 * (root's, in a folder only root can change), and only for prune
	 * and list. */
	if (follow_last && fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		close(parentfd);
		fd = gk_open_owned_path(abs, err);
		goto up;
	}
	fd = open_last(parentfd, name, 0, err);
	if (fd >= 0 && parent_out)
		*parent_out = parentfd;
	else
		close(parentfd);
	return fd;
up:
	/* The folder itself was walked to: the one above is its "..". */
	if (fd < 0 || !parent_out)
		return fd;
	*parent_out = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*parent_out < 0) {
		gk_errprintf(err, "%s/..: %s", abs, strerror(errno));
		close(fd);
		return -EIO;
	}
	return fd;
}

/* "X is a symbolic link made by uid N; refused" (fsafe.c) with the user's
 * name after the uid, for the administrator: whose link it was. */
static int name_link_owner(int ret, gk_error_t *err)
{
	static const char made[] = "made by uid ";
	char *at = ret < 0 ? strstr(err->text, made) : NULL, *end, who[64], rest[GK_ERRLEN];
	unsigned long uid;

	if (!at)
		return ret;
	at += sizeof(made) - 1;
	uid = strtoul(at, &end, 10);
	if (end == at)
		return ret;
	gk_user_name((uid_t)uid, who, sizeof(who));
	if (!strcmp(who, "") || !strncmp(who, "uid ", 4))
		return ret;
	snprintf(rest, sizeof(rest), "%s", end);
	snprintf(end, sizeof(err->text) - (size_t)(end - err->text), " (%s)%s", who, rest);
	return ret;
}

int cli_open_dir(const char *path, int follow_last, gk_error_t *err)
{
	return name_link_owner(open_dir(path, follow_last, NULL, err), err);
}

int cli_open_ckpt(const char *path, int *parentfd, gk_error_t *err)
{
	return name_link_owner(open_dir(path, 0, parentfd, err), err);
}

uint64_t cli_dir_bytes(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t total;

	if (fd < 0)
		return 0;
	total = cli_dir_bytes_at(fd);
	close(fd);
	return total;
}

uint64_t cli_dir_bytes_at(int dirfd)
{
	uint64_t total = 0;
	struct dirent *e;
	DIR *d;
	int fd = dup(dirfd);

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

static void load_opts(const struct stat *stp, uid_t want, struct gk_load_opts *lo);

void cli_load_opts_for(const char *dir, uid_t want, struct gk_load_opts *lo)
{
	struct stat st;

	load_opts(lstat(dir, &st) == 0 ? &st : NULL, want, lo);
}

void cli_load_opts_at(int dirfd, uid_t want, struct gk_load_opts *lo)
{
	struct stat st;

	load_opts(fstat(dirfd, &st) == 0 ? &st : NULL, want, lo);
}

static void load_opts(const struct stat *stp, uid_t want, struct gk_load_opts *lo)
{
	struct stat st = stp ? *stp : (struct stat){0};
	int have = stp != NULL;

	lo->held_by_root = have && st.st_uid == 0 && want != 0;
	if (lo->held_by_root)
		lo->uid = want;
	else if (want != GK_UID_OF_MANIFEST)
		lo->uid = want;
	else
		lo->uid = have ? st.st_uid : getuid();
}

const char *cli_signature_state(const char *dir, int is_signed)
{
	char path[4096 + 32];
	struct stat st;

	if (is_signed)
		return "signed";
	snprintf(path, sizeof(path), "%s/%s", dir, GK_SIGNATURE_FILE);
	return lstat(path, &st) == 0 ? "unchecked" : "unsigned";
}

const char *cli_signature_state_at(int dirfd, int is_signed)
{
	struct stat st;

	if (is_signed)
		return "signed";
	return fstatat(dirfd, GK_SIGNATURE_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 ? "unchecked"
										 : "unsigned";
}

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	/* No overlong forms, surrogates or code points past U+10FFFF. */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
		return 0;
	return n;
}

const char *cli_printable(const char *s)
{
	static char bufs[8][1024];
	static unsigned next;
	char *b = bufs[next++ % 8];
	const unsigned char *p = (const unsigned char *)s;
	size_t j = 0;

	while (*p && j + 5 < sizeof(bufs[0])) {
		size_t n = utf8_len(p);

		/* Control characters (C0, DEL, C1), broken UTF-8 and the
		 * backslash itself are shown as \xNN: a label or a host name
		 * written by whoever made the checkpoint must not move the
		 * cursor, change colours or start a line of its own. */
		if (n == 0 || *p < 0x20 || *p == 0x7f || *p == '\\' ||
		    (n == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
			j += (size_t)snprintf(b + j, sizeof(bufs[0]) - j, "\\x%02x", *p);
			p++;
			continue;
		}
		if (j + n >= sizeof(bufs[0]))
			break;
		memcpy(b + j, p, n);
		j += n;
		p += n;
	}
	b[j] = 0;
	return b;
}
