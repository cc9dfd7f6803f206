/*
 * exec_guard.c - a line in the job's output when the task's own process
 * starts a program whose environment no longer preloads the runtime: a
 * wrapper such as `env -i`, or one that builds an environment of its own.
 * That program, and what it starts, will not be checkpointed; the job is told
 * at its start rather than finding out when it is preempted (README.md,
 * "Containers": no silent loss).
 *
 * Only the task's own process (SLURM_TASK_PID) speaks, once: the program the
 * user asked to checkpoint is started there (srun env -i ./prog, a wrapper
 * that ends in exec). Children that a program starts with environments of
 * their own are helpers as often as not, and a line for each would bury the
 * output; they are not seen. The exec itself goes ahead as asked.
 *
 * The exec functions also run in children of vfork(): those are never the
 * task's process, and go on to the real function without doing anything
 * else. The real functions are looked up once, at load.
 */
#include "config.h"

#include "core/driver/driver.h"
#include "core/interpose/exec_guard.h"
#include "common/log.h"
#include "core/state/runtime.h"
#include "common/export.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

static struct {
	pid_t task_pid; /* 0: nothing to guard in this process */
	int noted;
	char who[96]; /* "job 12 step.0 task 3", from the environment at load */
} g;

/* glibc's own function (looked up at load; again if an exec came first). */
static void *real(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = gk_real_dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

static void *real_execve, *real_execvpe, *real_execv, *real_execvp;

__attribute__((constructor)) static void resolve(void)
{
	real(&real_execve, "execve");
	real(&real_execvpe, "execvpe");
	real(&real_execv, "execv");
	real(&real_execvp, "execvp");
}

void gk_exec_guard_arm(void)
{
	const char *pid = getenv("SLURM_TASK_PID"), *job = getenv("SLURM_JOB_ID"),
		   *step = getenv("SLURM_STEP_ID"), *task = getenv("SLURM_PROCID");
	char *end;
	long n;

	/* Checkpointing is on in this process (the plugin set it up) and it is a task's. */
	if (!gk_rt.settings_ok || !gk_rt.enabled || !gk_rt.settings.dir[0] || !pid)
		return;
	errno = 0;
	n = strtol(pid, &end, 10);
	if (errno || *end || n <= 0 || n != (long)getpid())
		return;
	g.task_pid = (pid_t)n;
	if (step)
		snprintf(g.who, sizeof(g.who), "job %s step.%s task %s", job ? job : "?", step,
			 task ? task : "?");
	else
		snprintf(g.who, sizeof(g.who), "job %s", job ? job : "?");
}

/* Does this environment still preload the runtime? */
static int preloads_runtime(char *const envp[])
{
	if (!envp)
		return 0;
	for (char *const *e = envp; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) == 0 && strstr(*e + 11, "libgpuckpt.so"))
			return 1;
	return 0;
}

static void check(const char *file, char *const envp[])
{
	if (!g.task_pid || g.noted || getpid() != g.task_pid || preloads_runtime(envp))
		return;
	g.noted = 1;
	gk_error("%s: %s starts %s without the gpuckpt runtime (its environment no longer "
		 "preloads it, as after env -i): it will not be checkpointed",
		 g.who, program_invocation_short_name, file);
}

/*
 * The four vector forms differ only in the function passed on to and in
 * where the new program's environment is: their argument (execve, execvpe)
 * or ours (execv, execvp). One body, so that what is checked before the
 * exec cannot drift between them.
 */
static int pass_on(void **slot, const char *name, const char *file, char *const argv[],
		   char *const envp[], int own_env)
{
	void *fn = real(slot, name);

	check(file, own_env ? envp : environ);
	if (!fn)
		return errno = ENOSYS, -1;
	if (own_env)
		return ((execve_fn)fn)(file, argv, envp);
	return ((execv_fn)fn)(file, argv);
}

GK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return pass_on(&real_execve, "execve", path, argv, envp, 1);
}

GK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return pass_on(&real_execvpe, "execvpe", file, argv, envp, 1);
}

GK_EXPORT int execv(const char *path, char *const argv[])
{
	return pass_on(&real_execv, "execv", path, argv, NULL, 0);
}

GK_EXPORT int execvp(const char *file, char *const argv[])
{
	return pass_on(&real_execvp, "execvp", file, argv, NULL, 0);
}

/*
 * The list forms: the arguments up to the NULL gathered into a vector on the
 * stack (as glibc does), then the vector form. *envp gets what follows the
 * NULL (execle's environment) when envp is not NULL.
 */
static size_t count_args(const char *arg0, va_list ap)
{
	size_t n = 0;

	if (arg0)
		for (n = 1; va_arg(ap, const char *); n++)
			;
	return n;
}

static void fill_args(const char *arg0, va_list ap, char **argv, size_t n, char *const **envp)
{
	argv[0] = (char *)arg0;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	if (arg0)
		(void)va_arg(ap, char *); /* the NULL */
	argv[n] = NULL;
	if (envp)
		*envp = va_arg(ap, char *const *);
}

enum list_form { LIST_EXECL, LIST_EXECLP, LIST_EXECLE };

/* The three list forms share the two passes over their arguments (one to
 * size the vector, one to fill it); only the vector form called differs. */
static int pass_on_list(enum list_form form, const char *file, const char *arg, va_list ap)
{
	char *const *envp = NULL;
	va_list count;
	size_t n;

	va_copy(count, ap);
	n = count_args(arg, count);
	va_end(count);
	{
		char *argv[n + 1];

		fill_args(arg, ap, argv, n, form == LIST_EXECLE ? &envp : NULL);
		switch (form) {
		case LIST_EXECLP:
			return execvp(file, argv);
		case LIST_EXECLE:
			return execve(file, argv, envp);
		default:
			return execv(file, argv);
		}
	}
}

/*
 * The list forms' entry points. va_start needs each function's own last named
 * argument, so each must be a variadic function of its own: one macro makes
 * the three, which differ only in their name and the form they pass on.
 */
#define LIST_FORM_ENTRY(name, form)                                                                \
	GK_EXPORT int name(const char *file, const char *arg, ...)                                 \
	{                                                                                          \
		va_list ap;                                                                        \
		int ret;                                                                           \
                                                                                                   \
		va_start(ap, arg);                                                                 \
		ret = pass_on_list(form, file, arg, ap);                                           \
		va_end(ap);                                                                        \
		return ret;                                                                        \
	}

LIST_FORM_ENTRY(execl, LIST_EXECL)
LIST_FORM_ENTRY(execlp, LIST_EXECLP)
LIST_FORM_ENTRY(execle, LIST_EXECLE)
