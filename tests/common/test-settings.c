/*
 * test-settings - the runtime's configuration: defaults, a file, environment
 * variables on top of it, and every bad value refused with a message naming
 * the key (and, from a file, the line; from the environment, the variable).
 */
#include "config.h"
#include "common/settings.h"
#include "common/settings_env.h"
#include "common/error.h"
#include "common/log.h"
#include "tap.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const env_vars[] = {
    "GPUCKPT_CONFIG",	 "GPUCKPT_DIR",	    "GPUCKPT_RESTORE",	"GPUCKPT_ON_BAD_CHECKPOINT",
    "GPUCKPT_KEEP",	 "GPUCKPT_SIGNALS", "GPUCKPT_INTERVAL", "GPUCKPT_REQUIRE_SIGNATURE",
    "GPUCKPT_VA_BASE",	 "GPUCKPT_VA_SIZE", "GPUCKPT_WRITERS",	"GPUCKPT_CHUNK_SIZE",
    "GPUCKPT_LOG_LEVEL", "GPUCKPT_ENABLE",  "GPUCKPT_SNAPSHOT_MEMORY", "GPUCKPT_INCREMENTS",
    "GPUCKPT_HASH_MODULE", "GPUCKPT_COPY_PIECE",
    "GPUCKPT_TASKS",	 "GPUCKPT_STEP_TASKS", "GPUCKPT_TASK",	"GPUCKPT_RESTORE_SET",
    "GPUCKPT_AGREE_TIMEOUT",
};

static char conf[] = "/tmp/gpuckpt-test-settings.XXXXXX";

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	if (!f) {
		perror(conf);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* Every value that must be refused, per key. */
static const struct {
	const char *key, *value;
} bad_values[] = {
    {"keep", "0"},
    {"keep", "-1"},
    {"keep", "two"},
    {"keep", "1001"},
    {"keep", ""},
    {"interval", "-5"},
    {"interval", "5s"},
    {"interval", "31536001"},
    {"require_signature", "maybe"},
    {"enable", "2"},
    {"on_bad_checkpoint", "retry"},
    {"va_base", "0"},
    {"va_base", "0x200000100000"}, /* not a multiple of 2 MiB */
    {"va_base", "128T"},	   /* outside a 47-bit address space */
    {"va_base", "-2M"},
    {"va_base", " 2M"},
    {"va_base", "0x"},
    {"va_size", "32M"}, /* below 64 MiB */
    {"va_size", "65M"}, /* not a multiple of 2 MiB */
    {"va_size", "1Q"},
    {"writers", "0"},
    {"writers", "65"},
    {"chunk_size", "1000"},
    {"chunk_size", "4097"},
    {"chunk_size", "2G"},
    {"chunk_size", "0"},
    {"copy_piece", "32K"},  /* below 64 KiB */
    {"copy_piece", "100000"}, /* not whole pages */
    {"copy_piece", "2G"},
    {"copy_piece", "-64K"},
    {"log_level", "loud"},
    {"signals", "KILL"},
    {"signals", "TERM:stop"},
    {"signals", "TERM,USR1,TERM"},
    {"signals", "TERM,USR1,USR2,INT,HUP,QUIT,XCPU,ALRM,TERM:exit"},
    {"tasks", "alone"},
    {"step_tasks", "0"},
    {"step_tasks", "16777217"},
    {"task", "-1"},
    {"restore_set", "feed"},
    {"restore_set", "0123456789ABCDEF"},
    {"restore_set", "0123456789abcdefg"},
    {"agree_timeout", "0"},
    {"snapshot_memory", "lots"},
    {"snapshot_memory", "0%"},
    {"snapshot_memory", "101%"},
    {"snapshot_memory", "%"},
    {"snapshot_memory", "-1G"},
    {"snapshot_memory", ""},
    {"increments", "-1"},
    {"increments", "1001"},
    {"increments", "many"},
    {"flush_dir", "relative/flush"},
    {"flush_rate", "fast"},
    {"flush_rate", "-1M"},
};

static void check_bad_values(void)
{
	struct gk_settings s;
	gk_error_t err;

	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		int ret;

		gk_settings_defaults(&s);
		err.text[0] = 0;
		ret = gk_settings_set(&s, bad_values[i].key, bad_values[i].value, &err);
		if (!ok(ret == -EINVAL &&
			    strncmp(err.text, bad_values[i].key, strlen(bad_values[i].key)) == 0,
			"%s = '%s' is refused, naming the key", bad_values[i].key,
			bad_values[i].value))
			printf("#   ret %d, message: %s\n", ret, err.text);
	}
}

/* What the default number of writers should be, counted here from the
 * affinity mask: its processors, at least 4, at most 16. */
static unsigned expected_writers(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	n = CPU_COUNT(&set);
	return n < 4 ? 4 : n > 16 ? 16 : (unsigned)n;
}

/* Narrowed to one processor, the default is the floor of 4; "auto" in a file
 * or the environment gives the same as the default. (2 tests) */
static void check_writers_follow_affinity(void)
{
	struct gk_settings s;
	gk_error_t err;
	cpu_set_t all, one;

	if (sched_getaffinity(0, sizeof(all), &all) != 0) {
		skip("sched_getaffinity failed");
	} else {
		CPU_ZERO(&one);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &all)) {
				CPU_SET(c, &one);
				break;
			}
		if (sched_setaffinity(0, sizeof(one), &one) != 0) {
			skip("sched_setaffinity to one processor failed");
		} else {
			gk_settings_defaults(&s);
			ok(s.writers == 4, "a task on one processor gets 4 writers (%u)",
			   s.writers);
			sched_setaffinity(0, sizeof(all), &all);
		}
	}
	s.writers = 1;
	ok(gk_settings_set(&s, "writers", "auto", &err) == 0 && s.writers == expected_writers(),
	   "writers = auto: the default, %u here", expected_writers());
}

/*
 * settings.def against settings.c: a key's documented default, set, leaves the
 * defaults as they were (the table says what the code does), and each value an
 * enum row's range lists is accepted.
 */
static char table_wrong[1024];

static void note(const char *key, const char *what)
{
	size_t n = strlen(table_wrong);

	snprintf(table_wrong + n, sizeof(table_wrong) - n, " %s(%s)", key, what);
}

static void table_row(const char *key, const char *type, const char *range, const char *dflt)
{
	struct gk_settings d, s;
	gk_error_t err;
	char buf[256], *save = NULL;

	gk_settings_defaults(&d);
	if (*dflt) {
		s = d;
		if (gk_settings_set(&s, key, dflt, &err) < 0 || memcmp(&s, &d, sizeof(s)) != 0)
			note(key, dflt);
	}
	if (strcmp(type, "enum") != 0)
		return;
	snprintf(buf, sizeof(buf), "%s", range);
	for (char *v = strtok_r(buf, ", ", &save); v; v = strtok_r(NULL, ", ", &save)) {
		s = d;
		if (gk_settings_set(&s, key, v, &err) < 0)
			note(key, v);
	}
}

static void table_checks(void)
{
	unsigned n = 0;

#define GK_CONF(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	table_row(#KEY, TYPE, RANGE, DEFAULT);              \
	n++;
#include "common/settings.def"
	ok(n >= 28, "settings.def: %u gpuckpt.conf keys", n);
	/* Root-run code (the shepherd, gpuckpt verify) checks seals through munged:
	 * its socket is never taken from a setuid program's environment. */
	ok(gk_env_table[GK_ENV_ID_MUNGE_SOCKET].flags & GK_F_SECURE,
	   "settings.def: GPUCKPT_MUNGE_SOCKET is read with secure_getenv");
	ok(!table_wrong[0], "settings.def: each key's default is the built-in one, each enum "
			    "value is accepted%s%s", table_wrong[0] ? ": not" : "", table_wrong);
}

int main(void)
{
	struct gk_settings s;
	gk_error_t err;
	char longval[5000];
	uint64_t size;
	int fd, ret;

	plan(43 + (int)(sizeof(bad_values) / sizeof(bad_values[0])));
	clear_env();
	fd = mkstemp(conf);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);

	gk_settings_defaults(&s);
	ok(s.enable == 1 && s.keep == 2 && s.interval == 0 && s.require_signature == 0 &&
	       s.restore_fresh_on_bad == 0 && s.dir[0] == 0 && s.restore[0] == 0,
	   "defaults: enabled, keep 2, no interval, signature optional, no dir");
	ok(s.va_base == 0x200000000000ull && s.va_size == 0x10000000000ull &&
	       s.writers == expected_writers() && s.chunk_size == (8ull << 20) &&
	       s.copy_piece == (256u << 10) && s.log_level == GK_LOG_NOTICE,
	   "defaults: VA 0x200000000000 + 1 TiB, %u writers (this process's processors, 4 to 16), "
	   "8 MiB chunks, copies of 256 KiB, notice",
	   expected_writers());
	check_writers_follow_affinity();
	ok(s.ntriggers == 2 && s.triggers[0].signo == SIGTERM &&
	       s.triggers[0].action == GK_ACTION_EXIT && s.triggers[1].signo == SIGUSR1 &&
	       s.triggers[1].action == GK_ACTION_CONTINUE,
	   "defaults: TERM checkpoints and exits, USR1 checkpoints and continues");

	/* A file with comments, blanks and spaces around '='. */
	write_conf("# site defaults\n"
		   "\n"
		   "dir = /bb/default\n"
		   "  keep=5\n"
		   "chunk_size = 16MiB\n"
		   "signals = USR2:exit , XCPU\n"
		   "va_base = 32T\n"
		   "require_signature = yes\n"
		   "on_bad_checkpoint = fresh\n");
	setenv("GPUCKPT_CONFIG", conf, 1);
	ret = gk_settings_load(&s, &err);
	if (!ok(ret == 0, "a settings file loads"))
		printf("#   %s\n", err.text);
	ok(!strcmp(s.dir, "/bb/default") && s.keep == 5 && s.chunk_size == (16ull << 20) &&
	       s.va_base == 0x200000000000ull && s.require_signature == 1 &&
	       s.restore_fresh_on_bad == 1,
	   "file values replace the defaults");
	ok(s.ntriggers == 2 && s.triggers[0].signo == SIGUSR2 &&
	       s.triggers[0].action == GK_ACTION_EXIT && s.triggers[1].signo == SIGXCPU &&
	       s.triggers[1].action == GK_ACTION_CONTINUE,
	   "signals with blanks around items parse");
	ok(s.writers == expected_writers() && s.interval == 0,
	   "keys the file does not set keep their defaults");

	setenv("GPUCKPT_KEEP", "3", 1);
	setenv("GPUCKPT_DIR", "/bb/job42", 1);
	setenv("GPUCKPT_WRITERS", "12", 1);
	setenv("GPUCKPT_RESTORE", "auto", 1);
	setenv("GPUCKPT_CHUNK_SIZE", "", 1); /* empty: as if unset */
	ret = gk_settings_load(&s, &err);
	ok(ret == 0 && s.keep == 3 && !strcmp(s.dir, "/bb/job42") && s.writers == 12 &&
	       !strcmp(s.restore, "auto"),
	   "the environment overrides the file");
	ok(s.chunk_size == (16ull << 20) && s.require_signature == 1,
	   "what the environment does not set (or sets empty) comes from the file");
	clear_env();

	setenv("GPUCKPT_CONFIG", "/nonexistent/gpuckpt.conf", 1);
	ret = gk_settings_load(&s, &err);
	ok(ret == -ENOENT && strstr(err.text, "/nonexistent/gpuckpt.conf"),
	   "an explicit settings file that is missing is an error naming it");

	setenv("GPUCKPT_CONFIG", conf, 1);
	write_conf("keep = 2\nkeep\n");
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL && strstr(err.text, ":2: expected key = value"),
	   "a line without '=' is refused with its line number");
	write_conf("# ok\nfrobnicate = 1\n");
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL && strstr(err.text, ":2: unknown setting 'frobnicate'"),
	   "an unknown key in the file is refused, named");
	write_conf("keep = many\n");
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL && strstr(err.text, ":1: keep: invalid value 'many'"),
	   "a bad value in the file names the file, line, key and value");
	memset(longval, 'x', sizeof(longval) - 2);
	longval[sizeof(longval) - 2] = '\n';
	longval[sizeof(longval) - 1] = 0;
	memcpy(longval, "dir = ", 6);
	write_conf(longval);
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL && strstr(err.text, ":1: line too long"), "an over-long line is refused");
	write_conf("");
	setenv("GPUCKPT_INTERVAL", "soon", 1);
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL && !strcmp(err.text, "GPUCKPT_INTERVAL: interval: invalid value 'soon'"),
	   "a bad environment value names the variable, key and value");
	clear_env();
	setenv("GPUCKPT_CONFIG", conf, 1);
	setenv("GPUCKPT_STEP_TASKS", "4", 1);
	setenv("GPUCKPT_TASK", "3", 1);
	setenv("GPUCKPT_RESTORE_SET", "0123456789abcdef", 1);
	ret = gk_settings_load(&s, &err);
	ok(ret == 0 && s.step_tasks == 4 && s.task == 3 && s.restore_set_given &&
	       s.restore_set == 0x0123456789abcdefull && !s.tasks_independent &&
	       s.agree_timeout == 300,
	   "a task of a step of four, restoring a set (%s)", err.text);
	setenv("GPUCKPT_TASK", "4", 1);
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL &&
	       strstr(err.text, "GPUCKPT_TASK: 4 is not below GPUCKPT_STEP_TASKS (4)"),
	   "a task index outside the step is refused (%s)", err.text);
	clear_env();
	setenv("GPUCKPT_CONFIG", conf, 1);
	setenv("GPUCKPT_SIGNALS", "TERM:exit,BOGUS", 1);
	ret = gk_settings_load(&s, &err);
	ok(ret == -EINVAL && strstr(err.text, "GPUCKPT_SIGNALS: signals: 'BOGUS' is not a signal"),
	   "a bad signal list from the environment is refused, named");
	clear_env();

	memset(longval, 'd', 4096);
	longval[4096] = 0;
	ok(gk_settings_set(&s, "dir", longval, &err) == -EINVAL &&
	       !strncmp(err.text, "dir: invalid value", 18),
	   "a directory name of 4096 bytes is refused");
	ok(gk_settings_set(&s, "colour", "blue", &err) == -EINVAL &&
	       !strcmp(err.text, "unknown setting 'colour'"),
	   "gk_settings_set refuses an unknown key");
	ok(gk_settings_set(&s, "log_level", "DEBUG", &err) == 0 && s.log_level == GK_LOG_DEBUG,
	   "log levels are case-insensitive");

	/* Sizes. */
	ok(gk_parse_size("4096", &size) == 0 && size == 4096, "size: plain bytes");
	ok(gk_parse_size("64M", &size) == 0 && size == (64ull << 20), "size: 64M");
	ok(gk_parse_size("1GiB", &size) == 0 && size == (1ull << 30), "size: 1GiB");
	ok(gk_parse_size("2kb", &size) == 0 && size == 2048, "size: 2kb, any case");
	ok(gk_parse_size("0x200000000000", &size) == 0 && size == 0x200000000000ull, "size: hex");
	ok(gk_parse_size("010", &size) == 0 && size == 10, "size: a leading zero is not octal");
	ok(gk_parse_size("", &size) == -EINVAL && gk_parse_size("-1", &size) == -EINVAL &&
	       gk_parse_size(" 1", &size) == -EINVAL && gk_parse_size("1Q", &size) == -EINVAL &&
	       gk_parse_size("1MBx", &size) == -EINVAL && gk_parse_size("M", &size) == -EINVAL,
	   "size: empty, negative, blank-led, unknown suffix, trailing text refused");
	ok(gk_parse_size("17179869184G", &size) == -ERANGE &&
	       gk_parse_size("99999999999999999999", &size) == -ERANGE,
	   "size: overflow is -ERANGE");

	ret = gk_settings_parse_signals(&s, "usr1:EXIT,SIGHUP", &err);
	ok(ret == 0 && s.ntriggers == 2 && s.triggers[0].signo == SIGUSR1 &&
	       s.triggers[0].action == GK_ACTION_EXIT && s.triggers[1].signo == SIGHUP,
	   "signals: names with or without SIG, any case");
	gk_settings_defaults(&s);
	ret = gk_settings_parse_signals(&s, "TERM,KILL", &err);
	ok(ret == -EINVAL && s.ntriggers == 2 && s.triggers[0].signo == SIGTERM,
	   "signals: a refused list leaves the previous triggers");
	ok(gk_settings_set(&s, "va_size", "2T", &err) == 0 && s.va_size == (2ull << 40),
	   "va_size accepts a size with a suffix");

	gk_settings_defaults(&s);
	ok(!s.flush_dir[0] && s.flush_rate == 0 &&
	       gk_settings_set(&s, "flush_dir", "/shared/flush/7/step.0/task.0", &err) == 0 &&
	       !strcmp(s.flush_dir, "/shared/flush/7/step.0/task.0") &&
	       gk_settings_set(&s, "flush_rate", "200M", &err) == 0 &&
	       s.flush_rate == (200ull << 20),
	   "flush: none by default; a folder and a rate with a suffix");
	gk_settings_defaults(&s);
	ok(s.copy_piece == (256u << 10) && gk_settings_set(&s, "copy_piece", "0", &err) == 0 &&
	       s.copy_piece == 0 && gk_settings_set(&s, "copy_piece", "1M", &err) == 0 &&
	       s.copy_piece == (1u << 20),
	   "copy_piece: 256 KiB by default; 0 (a chunk per copy), or 1M");
	gk_settings_defaults(&s);
	ok(s.snapshot_mode == GK_SNAPSHOT_AUTO && s.increments == 4 && !s.hash_module[0],
	   "defaults: snapshot memory auto, 4 increments, the built-in hash kernel");
	ok(gk_settings_set(&s, "snapshot_memory", "32G", &err) == 0 &&
	       s.snapshot_mode == GK_SNAPSHOT_BYTES && s.snapshot_bytes == (32ull << 30) &&
	       gk_settings_set(&s, "snapshot_memory", "25%", &err) == 0 &&
	       s.snapshot_mode == GK_SNAPSHOT_PERCENT && s.snapshot_percent == 25,
	   "snapshot_memory: a size, or a share of the memory available");
	ok(gk_settings_set(&s, "snapshot_memory", "off", &err) == 0 &&
	       s.snapshot_mode == GK_SNAPSHOT_OFF &&
	       gk_settings_set(&s, "snapshot_memory", "0", &err) == 0 &&
	       s.snapshot_mode == GK_SNAPSHOT_OFF &&
	       gk_settings_set(&s, "snapshot_memory", "auto", &err) == 0 &&
	       s.snapshot_mode == GK_SNAPSHOT_AUTO,
	   "snapshot_memory: off, 0 (off) and auto");
	setenv("GPUCKPT_CONFIG", conf, 1);
	write_conf("increments = 0\n");
	setenv("GPUCKPT_SNAPSHOT_MEMORY", "8G", 1);
	setenv("GPUCKPT_HASH_MODULE", "/opt/hash.so", 1);
	ret = gk_settings_load(&s, &err);
	ok(ret == 0 && s.increments == 0 && s.snapshot_mode == GK_SNAPSHOT_BYTES &&
	       s.snapshot_bytes == (8ull << 30) && !strcmp(s.hash_module, "/opt/hash.so"),
	   "increments from the file, snapshot memory and the hash module from the environment");
	clear_env();

	check_bad_values();
	unlink(conf);
	table_checks();
	return done_testing();
}
