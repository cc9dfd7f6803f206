#include "config.h"

#include "common/settings.h"
#include "common/settings_env.h"
#include "common/error.h"
#include "common/log.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define GK_DEFAULT_CONFIG SYSCONFDIR "/gpuckpt/gpuckpt.conf"

/*
 * Writer threads by default: one per processor the task may run on, 4 to 16.
 * Writing into tmpfs is bound by each writer's processor time (a memory copy
 * into the page cache): on a 16-processor H100 machine 16 writers took a
 * checkpoint of 4 and 16 GiB at 20.2 and 21.3 GB/s, 8 writers at 11.9 and
 * 12.5 (benchmarks/NOTES.md, seventh round). Writers beyond the task's
 * processors would only share them. At least 4, so that a task given one or
 * two processors still keeps a disk's or a network file system's queue busy
 * (its writers mostly wait); at most 16, the most measured, which keeps the
 * pinned staging memory (2 chunks per writer) at 256 MiB.
 */
unsigned gk_settings_default_writers(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	else /* more processors than a cpu_set_t holds: many */
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 4)
		return 4;
	return n > 16 ? 16 : (unsigned)n;
}

void gk_settings_defaults(struct gk_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->enable = 1;
	s->keep = 2;
	s->triggers[0] = (struct gk_trigger){SIGTERM, GK_ACTION_EXIT};
	s->triggers[1] = (struct gk_trigger){SIGUSR1, GK_ACTION_CONTINUE};
	s->ntriggers = 2;
	s->va_base = GK_DEFAULT_VA_BASE; /* contract.h says why these */
	s->va_size = GK_DEFAULT_VA_SIZE;
	s->writers = gk_settings_default_writers();
	s->chunk_size = GK_DEFAULT_CHUNK_SIZE;
	/* Copies from the device of 256 KiB, four in flight per writer: each
	 * piece is written while it is still in the processor's cache. Measured
	 * on the H100 machine: 23 % (4 GiB) and 15 % (16 GiB) faster than a
	 * chunk per copy with 8 writers, 14 % and 11 % with 16. */
	s->copy_piece = 256u << 10;
	s->snapshot_mode = GK_SNAPSHOT_AUTO;
	/* A damaged checkpoint loses every increment built on it, so chains are
	 * kept short; a restore reads from at most this many + 1 checkpoints. */
	s->increments = 4;
	s->log_level = GK_LOG_NOTICE;
	s->mode = GK_MODE_AUTO;
	s->assist = 1;
	s->step_tasks = 1;
	/* Long enough for the slowest task of a set to write a large image;
	 * a task that waits this long gives the set up (it is never used). */
	s->agree_timeout = 300;
}

int gk_parse_size(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	/* Digits first: strtoull would skip blanks and accept "-1" as 2^64-1,
	 * and base 0 would read "010" as octal. Decimal, or 0x hex. */
	if (!text || !(*text >= '0' && *text <= '9'))
		return -EINVAL;
	errno = 0;
	if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
		if (!isxdigit((unsigned char)text[2]))
			return -EINVAL;
		v = strtoull(text + 2, &end, 16);
	} else {
		v = strtoull(text, &end, 10);
	}
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || end == text)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 0:
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (~0ull >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcasecmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") ||
	    !strcasecmp(v, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcasecmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off") ||
	    !strcasecmp(v, "false")) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

static int parse_uint(const char *v, unsigned max, unsigned *out)
{
	char *end;
	unsigned long n;

	if (!*v || *v == '-')
		return -EINVAL;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > max)
		return -EINVAL;
	*out = (unsigned)n;
	return 0;
}

static char *trim(char *p)
{
	char *e;

	while (isspace((unsigned char)*p))
		p++;
	e = p + strlen(p);
	while (e > p && isspace((unsigned char)e[-1]))
		*--e = 0;
	return p;
}

static int signal_number(const char *name)
{
	static const struct {
		const char *name;
		int signo;
	} table[] = {{"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"INT", SIGINT},
		     {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"XCPU", SIGXCPU}, {"ALRM", SIGALRM}};

	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcasecmp(name, table[i].name))
			return table[i].signo;
	return -1;
}

int gk_settings_parse_signals(struct gk_settings *s, const char *spec, gk_error_t *err)
{
	char buf[256], *save = NULL, *item;
	unsigned n = 0;
	struct gk_trigger t[GK_MAX_TRIGGERS];

	if (strlen(spec) >= sizeof(buf)) {
		gk_errprintf(err, "signals: value too long");
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(item, ':');
		enum gk_trigger_action action = GK_ACTION_CONTINUE;
		int signo;

		if (colon) {
			char *act;

			*colon = 0;
			act = trim(colon + 1);
			if (!strcasecmp(act, "exit"))
				action = GK_ACTION_EXIT;
			else if (!strcasecmp(act, "continue"))
				action = GK_ACTION_CONTINUE;
			else {
				gk_errprintf(
				    err, "signals: '%s': action must be 'exit' or 'continue'", act);
				return -EINVAL;
			}
		}
		item = trim(item);
		signo = signal_number(item);
		if (signo < 0) {
			gk_errprintf(err,
				     "signals: '%s' is not a signal gpuckpt can use "
				     "(TERM, USR1, USR2, INT, HUP, QUIT, XCPU, ALRM)",
				     item);
			return -EINVAL;
		}
		for (unsigned i = 0; i < n; i++) {
			if (t[i].signo == signo) {
				gk_errprintf(err, "signals: '%s' is listed twice", item);
				return -EINVAL;
			}
		}
		if (n == GK_MAX_TRIGGERS) {
			gk_errprintf(err, "signals: at most %d signals", GK_MAX_TRIGGERS);
			return -EINVAL;
		}
		t[n++] = (struct gk_trigger){signo, action};
	}
	memcpy(s->triggers, t, sizeof(t[0]) * n);
	s->ntriggers = n;
	return 0;
}

/*
 * One function per gpuckpt.conf key of settings.def, conf_<key>(): 0, 1 for a
 * bad value (the caller says "key: invalid value"), or -EINVAL with err set.
 */
#define GK_CONF(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	static int conf_##KEY(struct gk_settings *s, const char *value, gk_error_t *err);
#include "common/settings.def"

static int set_text(char *dst, size_t len, const char *value)
{
	if (strlen(value) >= len)
		return 1;
	strcpy(dst, value);
	return 0;
}

static int conf_dir(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return set_text(s->dir, sizeof(s->dir), value);
}

static int conf_restore(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return set_text(s->restore, sizeof(s->restore), value);
}

static int conf_mode(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	if (!strcmp(value, "auto"))
		s->mode = GK_MODE_AUTO;
	else if (!strcmp(value, "app"))
		s->mode = GK_MODE_APP;
	else if (!strcmp(value, "transparent"))
		s->mode = GK_MODE_TRANSPARENT;
	else
		return 1;
	return 0;
}

static int conf_assist(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_bool(value, &s->assist) < 0;
}

static int conf_shepherd(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	/* An abstract socket name: it must fit sun_path after the NUL. */
	return set_text(s->shepherd, sizeof(s->shepherd), value);
}

static int conf_flush_dir(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	if (value[0] && value[0] != '/')
		return 1;
	return set_text(s->flush_dir, sizeof(s->flush_dir), value);
}

static int conf_flush_rate(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return gk_parse_size(value, &s->flush_rate) < 0;
}

static int conf_tasks(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	s->tasks_independent = s->tasks_nccl = 0;
	if (!strcmp(value, "independent"))
		s->tasks_independent = 1;
	else if (!strcmp(value, "nccl"))
		s->tasks_nccl = 1;
	else if (strcmp(value, "together"))
		return 1;
	return 0;
}

static int conf_agree_timeout(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_uint(value, 86400, &s->agree_timeout) < 0 || s->agree_timeout == 0;
}

static int conf_step_tasks(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_uint(value, 1u << 24, &s->step_tasks) < 0 || s->step_tasks == 0;
}

static int conf_task(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_uint(value, (1u << 24) - 1, &s->task) < 0;
}

static int conf_restore_set(struct gk_settings *s, const char *value, gk_error_t *err)
{
	char *end;

	(void)err;
	errno = 0;
	s->restore_set = strtoull(value, &end, 16);
	if (errno || *end || strlen(value) != 16 || strspn(value, "0123456789abcdef") != 16)
		return 1;
	s->restore_set_given = 1;
	return 0;
}

static int conf_no_transparent(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	snprintf(s->no_transparent, sizeof(s->no_transparent), "%s", value);
	return 0;
}

static int conf_on_bad_checkpoint(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	if (!strcmp(value, "fail"))
		s->restore_fresh_on_bad = 0;
	else if (!strcmp(value, "fresh"))
		s->restore_fresh_on_bad = 1;
	else
		return 1;
	return 0;
}

static int conf_keep(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_uint(value, 1000, &s->keep) < 0 || s->keep == 0;
}

static int conf_signals(struct gk_settings *s, const char *value, gk_error_t *err)
{
	return gk_settings_parse_signals(s, value, err);
}

static int conf_interval(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_uint(value, 86400 * 365, &s->interval) < 0;
}

static int conf_require_signature(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_bool(value, &s->require_signature) < 0;
}

static int conf_enable(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_bool(value, &s->enable) < 0;
}

static int conf_va_base(struct gk_settings *s, const char *value, gk_error_t *err)
{
	uint64_t size;

	(void)err;
	/* A multiple of 2 MiB, inside a 47-bit user address space. */
	if (gk_parse_size(value, &size) < 0 || size == 0 || (size & ((2u << 20) - 1)) ||
	    size >= (1ull << 47))
		return 1;
	s->va_base = size;
	return 0;
}

static int conf_va_size(struct gk_settings *s, const char *value, gk_error_t *err)
{
	uint64_t size;

	(void)err;
	if (gk_parse_size(value, &size) < 0 || size < (64ull << 20) || (size & ((2u << 20) - 1)))
		return 1;
	s->va_size = size;
	return 0;
}

static int conf_writers(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	if (!strcmp(value, "auto"))
		s->writers = gk_settings_default_writers();
	else if (parse_uint(value, 64, &s->writers) < 0 || s->writers == 0)
		return 1;
	return 0;
}

static int conf_chunk_size(struct gk_settings *s, const char *value, gk_error_t *err)
{
	uint64_t size;

	(void)err;
	if (gk_parse_size(value, &size) < 0 || size < 4096 || size > (1ull << 30) || (size & 4095))
		return 1;
	s->chunk_size = size;
	return 0;
}

static int conf_copy_piece(struct gk_settings *s, const char *value, gk_error_t *err)
{
	uint64_t size;

	(void)err;
	/* 0: a chunk per copy. Whole pages, at least 64 KiB: smaller copies
	 * cost more in the driver than they could save. */
	if (gk_parse_size(value, &size) < 0 || (size && size < (64u << 10)) || (size & 4095) ||
	    size > (1ull << 30))
		return 1;
	s->copy_piece = size;
	return 0;
}

static int conf_snapshot_memory(struct gk_settings *s, const char *value, gk_error_t *err)
{
	size_t n = strlen(value);
	uint64_t size;
	unsigned pct;

	(void)err;
	if (!strcmp(value, "auto")) {
		s->snapshot_mode = GK_SNAPSHOT_AUTO;
	} else if (!strcmp(value, "off") || !strcmp(value, "0")) {
		s->snapshot_mode = GK_SNAPSHOT_OFF;
	} else if (n > 1 && value[n - 1] == '%') {
		char num[16];

		if (n - 1 >= sizeof(num))
			return 1;
		memcpy(num, value, n - 1);
		num[n - 1] = 0;
		if (parse_uint(num, 100, &pct) < 0 || pct == 0)
			return 1;
		s->snapshot_mode = GK_SNAPSHOT_PERCENT;
		s->snapshot_percent = pct;
	} else {
		if (gk_parse_size(value, &size) < 0)
			return 1;
		s->snapshot_mode = GK_SNAPSHOT_BYTES;
		s->snapshot_bytes = size;
	}
	return 0;
}

static int conf_increments(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return parse_uint(value, 1000, &s->increments) < 0;
}

static int conf_hash_module(struct gk_settings *s, const char *value, gk_error_t *err)
{
	(void)err;
	return set_text(s->hash_module, sizeof(s->hash_module), value);
}

static int conf_log_level(struct gk_settings *s, const char *value, gk_error_t *err)
{
	enum gk_log_level l;

	(void)err;
	if (gk_log_parse_level(value, &l) < 0)
		return 1;
	s->log_level = (int)l;
	return 0;
}

/* The keys, their variables and their parsers, in settings.def's order. */
static const struct {
	const char *key;
	enum gk_env_id env;
	int (*set)(struct gk_settings *s, const char *value, gk_error_t *err);
} conf_keys[] = {
#define GK_CONF(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) {#KEY, GK_ENV_ID_##ID, conf_##KEY},
#include "common/settings.def"
};

int gk_settings_set(struct gk_settings *s, const char *key, const char *value, gk_error_t *err)
{
	for (unsigned i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++) {
		int rc;

		if (strcmp(key, conf_keys[i].key))
			continue;
		rc = conf_keys[i].set(s, value, err);
		if (rc > 0) {
			gk_errprintf(err, "%s: invalid value '%s'", key, value);
			return -EINVAL;
		}
		return rc;
	}
	gk_errprintf(err, "unknown setting '%s'", key);
	return -EINVAL;
}

static int load_file(struct gk_settings *s, const char *path, int must_exist, gk_error_t *err)
{
	char line[4352];
	gk_error_t sub;
	unsigned lineno = 0;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f) {
		int e = errno;

		if (e == ENOENT && !must_exist)
			return 0;
		gk_errprintf(err, "%s: %s", path, strerror(e));
		return -e;
	}
	while (fgets(line, sizeof(line), f)) {
		char *key, *value, *eq;

		lineno++;
		/* fgets splits a long line; its tail would be read as a line of
		 * its own and give a misleading message. */
		if (!strchr(line, '\n') && !feof(f)) {
			gk_errprintf(err, "%s:%u: line too long", path, lineno);
			ret = -EINVAL;
			break;
		}
		key = trim(line);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			gk_errprintf(err, "%s:%u: expected key = value", path, lineno);
			ret = -EINVAL;
			break;
		}
		*eq = 0;
		key = trim(key);
		value = trim(eq + 1);
		ret = gk_settings_set(s, key, value, &sub);
		if (ret < 0) {
			gk_errprintf(err, "%s:%u: %s", path, lineno, sub.text);
			break;
		}
	}
	fclose(f);
	return ret;
}

int gk_settings_load(struct gk_settings *s, gk_error_t *err)
{
	const char *path = gk_getenv(CONFIG);
	gk_error_t sub;
	int ret;

	gk_settings_defaults(s);
	ret = load_file(s, path && *path ? path : GK_DEFAULT_CONFIG, path && *path, err);
	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < sizeof(conf_keys) / sizeof(conf_keys[0]); i++) {
		const char *v = gk_env_get(conf_keys[i].env);

		if (!v || !*v)
			continue;
		ret = gk_settings_set(s, conf_keys[i].key, v, &sub);
		if (ret < 0) {
			gk_errprintf(err, "%s: %s", gk_env_table[conf_keys[i].env].name, sub.text);
			return ret;
		}
	}
	if (s->task >= s->step_tasks) {
		gk_errprintf(err, GK_ENV(TASK) ": %u is not below " GK_ENV(STEP_TASKS) " (%u)",
			     s->task, s->step_tasks);
		return -EINVAL;
	}
	return 0;
}
