/*
 * test-cli-util.c - unit tests (TAP) of the gpuckpt tool's shared helpers
 * (runtime/cli/util.c, runtime/common/sizefmt.c): option parsing by
 * cli_next (long and short options, values, "--", --help, and each refusal
 * with a message that names the option), user names, the printable form of
 * text someone else wrote, sizes for people and the JSON printer.
 */
#include "config.h"

#include "tap.h"
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- what a call wrote to a stream (stderr or stdout) ---- */

static char captured[8192];

static int capture_begin(int fd, FILE *stream)
{
	FILE *tmp = tmpfile();
	int saved;

	fflush(stream);
	saved = dup(fd);
	dup2(fileno(tmp), fd);
	fclose(tmp); /* fd still refers to it */
	return saved;
}

static void capture_end(int fd, FILE *stream, int saved)
{
	ssize_t n;

	fflush(stream);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, captured, sizeof(captured) - 1);
	captured[n > 0 ? n : 0] = 0;
	dup2(saved, fd);
	close(saved);
}

/* ---- cli_next ---- */

enum { O_JSON = 1, O_KEEP, O_USER, O_FORCE };

static const struct cli_opt opts[] = {
    {"json", 'j', 0, O_JSON},	{"keep", 'k', 1, O_KEEP}, {"user", 0, 1, O_USER},
    {"force", 'f', 0, O_FORCE}, {NULL, 0, 0, 0},
};

static const struct gk_cmd cmd = {.name = "testcmd", .summary = "s", .help = "Usage: testcmd\n"};

/* Parse argv (NULL-terminated, argv[0] the subcommand) and describe the
 * result as "id[=arg] id[=arg] ... end|error|help", the error's message in
 * captured. */
static const char *parse(char **argv)
{
	static char out[512];
	struct cli_args a;
	int argc = 0, saved, id;
	size_t used = 0;
	const char *arg;

	while (argv[argc])
		argc++;
	cli_args_init(&a, &cmd, argc, argv);
	out[0] = 0;
	saved = capture_begin(2, stderr);
	for (;;) {
		id = cli_next(&a, opts, &arg);
		if (id == CLI_END || id == CLI_ERROR || id == CLI_HELP)
			break;
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%d%s%s ", id,
					 arg ? "=" : "", arg ? arg : "");
	}
	capture_end(2, stderr, saved);
	snprintf(out + used, sizeof(out) - used, "%s",
		 id == CLI_END	   ? "end"
		 : id == CLI_ERROR ? "error"
				   : "help");
	return out;
}

#define ARGV(...) ((char *[]){"testcmd", __VA_ARGS__, NULL})

static void test_options(void)
{
	const char *r;

	r = parse(ARGV("--json", "-k", "3", "--keep=4", "--user", "bob", "dir"));
	ok(!strcmp(r, "1 2=3 2=4 3=bob 0=dir end"),
	   "long, short, --opt=value and --opt value, then a positional (%s)", r);
	r = parse(ARGV("-j", "--", "--json", "-"));
	ok(!strcmp(r, "1 0=--json 0=- end"), "after --, options are positionals; - is one (%s)", r);
	r = parse(ARGV("a", "-f", "b"));
	ok(!strcmp(r, "0=a 4 0=b end"), "options and positionals mixed, in order (%s)", r);
	r = parse(ARGV("--json", "--help", "--bogus"));
	ok(!strcmp(r, "1 help") && !captured[0], "--help stops the parse, silently (%s)", r);
	r = parse(ARGV("-h"));
	ok(!strcmp(r, "help"), "-h is --help (%s)", r);

	r = parse(ARGV("--bogus=1"));
	ok(!strcmp(r, "error") && strstr(captured, "testcmd: unknown option '--bogus'") &&
	       strstr(captured, "see gpuckpt --help"),
	   "an unknown long option is refused, named without its value, with the subcommand "
	   "and the pointer to --help (%s: %s)",
	   r, captured);
	r = parse(ARGV("-x"));
	ok(!strcmp(r, "error") && strstr(captured, "unknown option '-x'"),
	   "an unknown short option is refused and named (%s)", captured);
	r = parse(ARGV("-jf"));
	ok(!strcmp(r, "error") && strstr(captured, "unknown option '-jf'"),
	   "short options are not bundled: -jf is refused and named (%s)", captured);
	r = parse(ARGV("--json=yes"));
	ok(!strcmp(r, "error") && strstr(captured, "option '--json' takes no value"),
	   "a value given to a flag is refused, the option named (%s)", captured);
	r = parse(ARGV("--keep"));
	ok(!strcmp(r, "error") && strstr(captured, "option '--keep' needs a value"),
	   "a long option missing its value is refused, named (%s)", captured);
	r = parse(ARGV("-k"));
	ok(!strcmp(r, "error") && strstr(captured, "option '-k' needs a value"),
	   "a short option missing its value is refused, named (%s)", captured);
	r = parse(ARGV("--jso"));
	ok(!strcmp(r, "error") && strstr(captured, "unknown option '--jso'"),
	   "no abbreviations: --jso is not --json (%s)", captured);
	r = parse(ARGV("--keep", "--json"));
	ok(!strcmp(r, "2=--json end"), "a value may start with a dash (%s)", r);
}

static void test_usage_and_help(void)
{
	int saved, rc;

	saved = capture_begin(2, stderr);
	rc = cli_usage_error(&cmd, "two %s", "folders");
	capture_end(2, stderr, saved);
	ok(rc == GK_EXIT_USAGE && strstr(captured, "testcmd: two folders; see gpuckpt --help"),
	   "cli_usage_error: exit status 2, the subcommand, the problem, the pointer (%s)",
	   captured);
	saved = capture_begin(1, stdout);
	rc = cli_print_help(&cmd);
	capture_end(1, stdout, saved);
	ok(rc == GK_EXIT_OK && !strcmp(captured, "Usage: testcmd\n"),
	   "cli_print_help: the help text on stdout, exit status 0");
}

/* ---- users ---- */

static void test_users(void)
{
	uid_t uid = 12345;
	json_object *j, *v;

	ok(cli_parse_user("0", &uid) == 0 && uid == 0, "a numeric uid: 0");
	ok(cli_parse_user("4294967294", &uid) == 0 && uid == 4294967294u, "the largest uid");
	uid = 7;
	ok(cli_parse_user("4294967295", &uid) == -1 && uid == 7, "(uid_t)-1 is refused");
	ok(cli_parse_user("12x", &uid) == -1 && cli_parse_user("", &uid) == -1 &&
	       cli_parse_user("99999999999999999999", &uid) == -1,
	   "trailing junk, the empty string and an overflow are refused");
	ok(cli_parse_user("root", &uid) == 0 && uid == 0, "a user name: root is 0");
	ok(cli_parse_user("no-such-user-gk", &uid) == -1, "an unknown user name is refused");
	j = cli_user_json(0);
	ok(json_object_object_get_ex(j, "user", &v) && !strcmp(json_object_get_string(v), "root") &&
	       json_object_object_get_ex(j, "uid", &v) && json_object_get_int64(v) == 0,
	   "cli_user_json: {\"user\": \"root\", \"uid\": 0} (%s)", json_object_to_json_string(j));
	json_object_put(j);
}

/* ---- output ---- */

static void test_printable(void)
{
	char big[3000];
	const char *p, *q;

	ok(!strcmp(cli_printable("gpu-node01 ö €"), "gpu-node01 ö €"),
	   "plain text and valid UTF-8 pass unchanged");
	p = cli_printable("a\033[31mb\nc\\d\x7f");
	ok(!strcmp(p, "a\\x1b[31mb\\x0ac\\x5cd\\x7f"),
	   "escape, newline, backslash and DEL are shown as \\xNN (%s)", p);
	p = cli_printable("\xc2\x85|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xff");
	ok(!strcmp(p, "\\xc2\\x85|\\xc0\\xaf|\\xed\\xa0\\x80|\\xf4\\x90\\x80\\x80|\\xff"),
	   "a C1 control, an overlong form, a surrogate, a code point past U+10FFFF and a "
	   "stray byte are escaped byte by byte (%s)",
	   p);
	p = cli_printable("one");
	q = cli_printable("two");
	ok(!strcmp(p, "one") && !strcmp(q, "two"), "two results can be used in one printf");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	p = cli_printable(big);
	ok(strlen(p) > 900 && strlen(p) < 1024, "a long text is cut to the buffer (%zu)",
	   strlen(p));
	memset(big, '\n', sizeof(big) - 1);
	p = cli_printable(big);
	ok(strlen(p) < 1024 && strlen(p) % 4 == 0, "and never in the middle of an escape (%zu)",
	   strlen(p));
}

static void test_sizes(void)
{
	static const struct {
		uint64_t bytes;
		enum gk_size_style style;
		const char *want;
	} cases[] = {
	    {0, GK_SIZE_UNIT, "0 B"},
	    {512, GK_SIZE_UNIT, "512 B"},
	    {4096, GK_SIZE_UNIT, "4.0 KiB"},
	    {1536ull << 20, GK_SIZE_UNIT, "1.5 GiB"},
	    {512, GK_SIZE_LOG, "512 bytes"},
	    {(34ull << 20) / 10, GK_SIZE_LOG, "3.4 MiB"},
	    {1342177280ull, GK_SIZE_LOG, "1.25 GiB"},
	    {1ull << 19, GK_SIZE_MIB, "0.5 MiB"},
	    {1ull << 27, GK_SIZE_GIB, "0.1 GiB"},
	};
	char buf[64], small[4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gk_size_format(buf, sizeof(buf), cases[i].bytes, cases[i].style);
		ok(!strcmp(buf, cases[i].want), "gk_size_format(%llu, style %d) = \"%s\" (\"%s\")",
		   (unsigned long long)cases[i].bytes, (int)cases[i].style, cases[i].want, buf);
	}
	gk_size_format(small, sizeof(small), 4096, GK_SIZE_UNIT);
	ok(!strcmp(small, "4.0"), "a short buffer is cut as snprintf cuts (%s)", small);
}

static void test_json(void)
{
	json_object *o = json_object_new_object();
	int saved;

	json_object_object_add(o, "path", json_object_new_string("/a/b"));
	json_object_object_add(o, "bytes", json_object_new_int64(5));
	saved = capture_begin(1, stdout);
	cli_print_json(o);
	capture_end(1, stdout, saved);
	ok(strstr(captured, "\"path\": \"/a/b\"") && strstr(captured, "\"bytes\": 5") &&
	       strchr(captured, '\n') < captured + strlen(captured) - 1 &&
	       captured[strlen(captured) - 1] == '\n',
	   "cli_print_json: indented over lines, slashes unescaped, a final newline (%s)",
	   captured);
}

int main(void)
{
	test_options();
	test_usage_and_help();
	test_users();
	test_printable();
	test_sizes();
	test_json();
	return done_testing_plan_last();
}
