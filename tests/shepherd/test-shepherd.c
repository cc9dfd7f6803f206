/*
 * test-shepherd - the shepherd's checks that need neither CRIU nor a GPU:
 * the socket's message vocabulary (every malformed message refused), the
 * socket's peers (another uid, a process outside the task's tree), the tree's
 * owner check (a process that changed uid, or kept root as its saved uid),
 * the limits, the GPU pairs, how restore gives the program its stdio, the
 * capabilities CRIU needs. The seal's own tests are tests/image/test-seal.
 */
#include "config.h"
#include "image/image.h"
#include "common/log.h"
#include "shepherd/shepherd.h"
#include "tap.h"
#include "common/error.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static gk_error_t err;

/* ---- messages ---- */

static void messages(void)
{
	static const char *const bad[] = {
	    "",
	    "\n",
	    "HELLO",
	    "HELLO 1",
	    "HELLO 2 app",
	    "HELLO 1 App",
	    "HELLO 1 app ",
	    " HELLO 1 app",
	    "HELLO  1 app",
	    "HELLO 1 app\n\n",
	    "HELLO 1 app\r",
	    "HELLO 1 transparentx",
	    "hello 1 app",
	    "READY",
	    "READY .tmp.ckpt.000003.node1.42",
	    "READY .tmp.ckpt.000003.node1.42 2",
	    "READY .tmp.ckpt.000003.node1.42 01",
	    "READY .tmp.ckpt.000003.node1.42 1 1",
	    "READY ckpt.000003 1",
	    "READY ../ckpt.000003 1",
	    "READY .tmp.ckpt.000003/../../etc 1",
	    "READY .tmp.ckpt.000003.node1..42 1",
	    "READY .tmp.ckpt.0000\x01.node1.42 1",
	    "READY .tmp.ckpt.000003.nöde.42 1",
	    "READY\t.tmp.ckpt.000003.node1.42 1",
	    "LOCKED",
	    "ABORT because",
	    "REFUSE",
	    "REFUSE ",
	    "REFUSE uvm",
	    "REFUSE managed memory",
	    "REFUSE Managed",
	    "REFUSE  ipc",
	    "REFUSE broken",
	    "REFUSE broken ",
	    "REFUSE broken cuda_error_illegal_address",
	    "REFUSE broken CUDA_ERROR_ILLEGAL ADDRESS",
	    "REFUSE broken CUDA-ERROR",
	    "REFUSE broken "
	    "CUDA_ERROR_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "REFUSE broken unknown CUDA_ERROR_ASSERT",
	};
	struct gk_msg m;
	char big[GK_PROTO_MSG_MAX + 2];
	size_t refused = 0;

	ok(gk_msg_parse("HELLO 1 app", 11, &m) == 0 && m.type == GK_MSG_HELLO_APP, "HELLO 1 app");
	ok(gk_msg_parse("HELLO 1 transparent\n", 20, &m) == 0 && m.type == GK_MSG_HELLO_TRANSPARENT,
	   "HELLO 1 transparent, with one trailing newline");
	ok(gk_msg_parse("READY .tmp.ckpt.000003.node-1.42 1", 34, &m) == 0 &&
	       m.type == GK_MSG_READY && !strcmp(m.name, ".tmp.ckpt.000003.node-1.42") &&
	       m.assisted == 1,
	   "READY <name> 1");
	ok(gk_msg_parse("READY .tmp.ckpt.000003.node1.42 0", 33, &m) == 0 && m.assisted == 0,
	   "READY <name> 0");
	ok(gk_msg_parse("REFUSE managed", 14, &m) == 0 && m.type == GK_MSG_REFUSE &&
	       strstr(m.refused, "managed") && gk_msg_parse("REFUSE ipc", 10, &m) == 0 &&
	       m.type == GK_MSG_REFUSE && strstr(m.refused, "IPC"),
	   "REFUSE managed, REFUSE ipc: the shepherd's own words for them");
	ok(gk_msg_parse("REFUSE broken CUDA_ERROR_ILLEGAL_ADDRESS", 40, &m) == 0 &&
	       m.type == GK_MSG_REFUSE && !strcmp(m.broken, "CUDA_ERROR_ILLEGAL_ADDRESS") &&
	       gk_msg_parse("REFUSE broken unknown", 21, &m) == 0 && !strcmp(m.broken, "unknown") &&
	       gk_msg_parse("REFUSE managed", 14, &m) == 0 && !m.broken[0],
	   "REFUSE broken <CUDA error name>: a broken context, with the error's name");
	ok(gk_msg_parse("REFUSE opencl", 13, &m) == 0 && m.type == GK_MSG_REFUSE &&
	       strstr(m.refused, "OpenCL") && !m.broken[0] &&
	       gk_msg_parse("REFUSE opencl gpu", 17, &m) == -EPROTO &&
	       gk_msg_parse("REFUSE OpenCL", 13, &m) == -EPROTO,
	   "REFUSE opencl: OpenCL state CRIU cannot carry, in the shepherd's own words");
	ok(gk_msg_parse("REFUSE capture", 14, &m) == 0 && m.type == GK_MSG_REFUSE &&
	       strstr(m.refused, "stream capture") && !m.broken[0] &&
	       gk_msg_parse("REFUSE capture 3", 16, &m) == -EPROTO,
	   "REFUSE capture: a CUDA stream capture that did not end, in the shepherd's own words");
	ok(gk_msg_parse("REFUSE nccl-set", 15, &m) == 0 && m.type == GK_MSG_REFUSE &&
	       m.refused_why && strstr(m.refused_why, "GPUCKPT_TASKS=nccl") &&
	       gk_msg_parse("REFUSE nccl", 11, &m) == 0 && !m.refused_why &&
	       gk_msg_parse("REFUSE nccl-set 2", 17, &m) == -EPROTO,
	   "REFUSE nccl-set: a part that could not be one of its step's set, as a whole reason");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gk_msg_parse(bad[i], strlen(bad[i]), &m) == -EPROTO)
			refused++;
		else
			printf("#   accepted: '%s'\n", bad[i]);
	}
	ok(refused == sizeof(bad) / sizeof(bad[0]), "every malformed message is refused (%zu)",
	   refused);
	ok(gk_msg_parse("HELLO 1 app\0junk", 16, &m) == -EPROTO, "a NUL inside is refused");
	memset(big, 'A', sizeof(big));
	ok(gk_msg_parse(big, GK_PROTO_MSG_MAX + 1, &m) == -EPROTO,
	   "a packet over %d bytes is refused", GK_PROTO_MSG_MAX);
}

/* ---- socket peers ---- */

static int connect_to(const char *name)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, strlen(name));
	if (connect(fd, (struct sockaddr *)&sa,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Accept what is pending, after waiting for it. */
static int accept_one(int listener, uid_t uid, pid_t prog, pid_t *peer)
{
	struct pollfd pf = {.fd = listener, .events = POLLIN};
	int conn = -1;

	if (poll(&pf, 1, 5000) != 1)
		return -2;
	if (gk_sock_accept(listener, uid, prog, &conn, peer) < 0)
		return -3;
	return conn;
}

/* A peer that connects, then waits for the test to let it go. */
static pid_t peer_as(const char *name, uid_t uid, int *go)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;
		int fd;

		close(p[1]);
		if (uid != 0 && setuid(uid) < 0)
			_exit(1);
		fd = connect_to(name);
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(fd >= 0 ? 0 : 1);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static void finish(pid_t pid, int go)
{
	close(go);
	waitpid(pid, NULL, 0);
}

static void peers(void)
{
	struct passwd *nobody = getpwnam("nobody");
	char name[108];
	pid_t pid, other, peer;
	int listener, conn, go, go2;

	listener = gk_sock_listen(name, sizeof(name), &err);
	ok(listener >= 0 && gk_sock_name_ok(name), "listen on an abstract name (%s)", name);
	if (geteuid() != 0 || !nobody) {
		for (int i = 0; i < 3; i++)
			skip("needs root (a peer of another uid)");
		close(listener);
		return;
	}
	/* The task's program itself, but of another uid: closed. */
	pid = peer_as(name, nobody->pw_uid, &go);
	conn = accept_one(listener, 0, pid, &peer);
	ok(pid > 0 && conn == -1, "a peer of another uid is closed");
	finish(pid, go);

	/* The job's uid (root here), but outside the task's tree (the tree's
	 * root is another process): closed. */
	other = peer_as("gpuckpt-test-nobody-listens", 0, &go2);
	pid = peer_as(name, 0, &go);
	conn = accept_one(listener, 0, other, &peer);
	ok(pid > 0 && other > 0 && conn == -1, "a peer outside the task's tree is closed");
	finish(pid, go);
	finish(other, go2);

	/* The job's uid, the task's program: accepted. */
	pid = peer_as(name, 0, &go);
	conn = accept_one(listener, 0, pid, &peer);
	ok(pid > 0 && conn >= 0 && peer == pid, "a peer of the job's uid in the task's tree is "
						"accepted");
	if (conn >= 0)
		close(conn);
	finish(pid, go);
	close(listener);
}

/* ---- the tree's owners ---- */

static pid_t child_with_ids(uid_t r, uid_t e, uid_t s, gid_t g, int *go)
{
	int p[2], q[2];
	pid_t pid;
	char c;

	if (pipe(p) < 0 || pipe(q) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		close(q[0]);
		if (setresgid(g, g, g) < 0 || setresuid(r, e, s) < 0)
			_exit(1);
		close(q[1]); /* ready */
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	close(q[1]);
	if (read(q[0], &c, 1) < 0)
		c = 0;
	close(q[0]);
	*go = p[1];
	return pid;
}

static void tree(void)
{
	struct passwd *nobody = getpwnam("nobody");
	pid_t pids[16], list[16];
	size_t n = 0;
	int go[3];
	uid_t u;
	gid_t g;

	if (geteuid() != 0 || !nobody) {
		for (int i = 0; i < 5; i++)
			skip("needs root to make processes of another uid");
		return;
	}
	u = nobody->pw_uid;
	g = nobody->pw_gid;
	pids[0] = child_with_ids(u, u, u, g, &go[0]);
	pids[1] = child_with_ids(u, u, 0, g, &go[1]);
	pids[2] = child_with_ids(0, 0, 0, 0, &go[2]);
	ok(gk_tree_list(getpid(), list, 16, &n, &err) == 0 && n >= 4 && list[0] == getpid(),
	   "the tree lists this process and its children");
	ok(gk_tree_check_owner(&pids[0], 1, u, g, &err) == 0,
	   "a process of the job's user, in every id, passes");
	gk_errprintf(&err, "none");
	ok(gk_tree_check_owner(pids, 2, u, g, &err) == -EPERM && strstr(err.text, "saved") &&
	       strstr(err.text, "uid 0"),
	   "a process that kept root as its saved uid is refused: %s", err.text);
	{
		char want[32];

		snprintf(want, sizeof(want), "pid %d", (int)pids[2]);
		ok(gk_tree_check_owner(&pids[2], 1, u, g, &err) == -EPERM && strstr(err.text, want),
		   "a process of another uid is refused, naming it: %s", err.text);
	}
	/* Each child holds the others' pipes too: end them by pid. */
	for (int i = 0; i < 3; i++) {
		close(go[i]);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	/* pids[0] is gone now, as a short-lived child of the program can be
	 * between the listing and the check. */
	ok(gk_tree_check_owner(&pids[0], 1, u, g, &err) == 0,
	   "a process that ended since the tree was listed is passed over, not an error");
}

/* ---- what the shepherd refuses: MIG capabilities open, an MPS daemon ---- */

static void limits(void)
{
	char dir[] = "/tmp/gk-caps.XXXXXX", file[64], path[256], prefix[64];
	pid_t self = getpid(), found = 0, child;
	int fd, go[2];

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		ok(0, "mkdtemp: %s", strerror(errno));
	} else {
		snprintf(file, sizeof(file), "%s/nvidia-cap7", dir);
		snprintf(prefix, sizeof(prefix), "%s/", dir);
		fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		ok(gk_tree_find_open(&self, 1, prefix, &found, path, sizeof(path)) == 1 &&
		       found == self && !strcmp(path, file),
		   "a process with a descriptor open under the prefix is found: %s", path);
		close(fd);
		ok(gk_tree_find_open(&self, 1, prefix, &found, path, sizeof(path)) == 0,
		   "and not once it is closed");
		unlink(file);
		rmdir(dir);
	}
	/* A process named like the MPS daemons (comm is the program's name). */
	if (pipe(go) < 0) {
		ok(0, "pipe: %s", strerror(errno));
		ok(0, "pipe: %s", strerror(errno));
		return;
	}
	child = fork();
	if (child == 0) {
		char c;

		close(go[1]);
		prctl(PR_SET_NAME, "gk-fake-mps-ctl");
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	for (int i = 0; i < 100 && gk_find_process("gk-fake-mps") != child; i++)
		usleep(10000);
	ok(gk_find_process("gk-fake-mps") == child, "a process is found by the start of its name");
	close(go[1]);
	waitpid(child, NULL, 0);
	ok(gk_find_process("gk-fake-mps") == 0, "and not once it ended");
}

/* ---- MIG, asked of the driver (the stand-in plays both answers) ---- */

/*
 * In a child (the stand-in reads its machine once, at cuInit): the table
 * filled from the stand-in's libcuda.so.1 with what gk_cudackpt_mig uses,
 * GPUCKPT_STANDIN_MIG set to `mig` (NULL: unset). The answer and the
 * instance's name come back through a pipe as "<rc> <name>".
 */
static int ask_mig(const char *mig, char *out, size_t outlen)
{
	const char *dir = getenv("top_builddir");
	int p[2], status;
	ssize_t len;
	pid_t pid;

	if (!dir || pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct gk_cudackpt c;
		char lib[4096], name[64];
		int r = -100;

		close(p[0]);
		memset(&c, 0, sizeof(c));
		name[0] = '\0';
		if (mig)
			setenv("GPUCKPT_STANDIN_MIG", mig, 1);
		else
			unsetenv("GPUCKPT_STANDIN_MIG");
		setenv("GPUCKPT_STANDIN_GPUS", "3", 1);
		unsetenv("CUDA_VISIBLE_DEVICES");
		snprintf(lib, sizeof(lib), "%s/tests/cuda-standin/.libs/libcuda.so.1", dir);
		c.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
#define LOAD(f) memcpy(&c.f, (void *[]){dlsym(c.lib, #f)}, sizeof(void *))
		if (c.lib) {
			LOAD(cuInit);
			LOAD(cuGetErrorName);
			LOAD(cuGetErrorString);
			LOAD(cuDeviceGetCount);
			LOAD(cuDeviceGet);
			memcpy(&c.cuDeviceGetUuid, (void *[]){dlsym(c.lib, "cuDeviceGetUuid")},
			       sizeof(void *));
			memcpy(&c.uuid_v2, (void *[]){dlsym(c.lib, "cuDeviceGetUuid_v2")},
			       sizeof(void *));
		}
#undef LOAD
		if (c.cuInit && c.cuDeviceGetUuid && c.uuid_v2 && c.cuInit(0) == CUDA_SUCCESS)
			r = gk_cudackpt_mig(&c, name, &err);
		dprintf(p[1], "%d %s", r, name);
		_exit(0);
	}
	close(p[1]);
	len = read(p[0], out, outlen - 1);
	out[len > 0 ? len : 0] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	return 0;
}

static void mig(void)
{
	char got[128];

	ask_mig(NULL, got, sizeof(got));
	ok(!strcmp(got, "0 "), "no MIG instance: the driver's two UUIDs agree (%s)", got);
	ask_mig("1", got, sizeof(got));
	ok(!strncmp(got, "1 MIG-", 6), "a MIG instance: named by its own UUID (%s)", got);
	ask_mig("7", got, sizeof(got));
	ok(!strcmp(got, "0 "), "an ordinal the driver does not list is no instance (%s)", got);
}

/* ---- the GPUs of the node and the driver's restore pairs ---- */

#define UA "GPU-aaaaaaaa-0000-0000-0000-000000000000"
#define UB "GPU-bbbbbbbb-0000-0000-0000-000000000000"
#define UC "GPU-cccccccc-0000-0000-0000-000000000000"
#define UD "GPU-dddddddd-0000-0000-0000-000000000000"

static int pair_is(const CUcheckpointGpuPair *p, const char *from, const char *to)
{
	char a[64], b[64];

	gk_uuid_format(&p->oldUuid, a);
	gk_uuid_format(&p->newUuid, b);
	return !strcmp(a, from) && !strcmp(b, to);
}

static void gpu_pairs(void)
{
	char proc[] = "/tmp/gk-proc.XXXXXX", path[512], node[4][64];
	struct gk_gpu a = {UA, "H200"}, b = {UB, "H200"}, c = {UC, "H200"};
	char n_ab[2][64] = {UA, UB}, n_cd[2][64] = {UC, UD}, n_abc[3][64] = {UA, UB, UC};
	CUcheckpointGpuPair p[8];
	size_t n = 0;
	FILE *f;
	int r;

	if (!mkdtemp(proc)) {
		ok(0, "mkdtemp: %s", strerror(errno));
	} else {
		/* Written in the reverse of PCI order: the list comes back sorted. */
		const char *bus[2] = {"0000:c1:00.0", "0000:41:00.0"}, *uuid[2] = {UB, UA};

		for (int i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "mkdir -p %s/driver/nvidia/gpus/%s", proc, bus[i]);
			if (system(path) != 0)
				printf("# %s failed\n", path);
			snprintf(path, sizeof(path), "%s/driver/nvidia/gpus/%s/information", proc,
				 bus[i]);
			f = fopen(path, "w");
			if (f) {
				fprintf(f, "Model: \t\t NVIDIA H200\nGPU UUID: \t\t %s\nBus Location: "
					   "\t %s\n",
					uuid[i], bus[i]);
				fclose(f);
			}
		}
		r = gk_node_gpus(proc, node, 4, &n);
		ok(r == 0 && n == 2 && !strcmp(node[0], UA) &&
		       !strcmp(node[1], UB),
		   "the node's GPUs are read from driver/nvidia/gpus, in PCI order (%zu)", n);
		snprintf(path, sizeof(path), "rm -rf '%s'", proc);
		if (system(path) != 0)
			printf("# cannot remove %s\n", proc);
	}
	r = gk_gpu_pairs(&a, 1, n_ab, 2, &b, 1, n_ab, 2, p, 8, &err);
	ok(r == 2 && pair_is(&p[0], UA, UB) && pair_is(&p[1], UB, UA),
	   "same node, the job moved from GPU A to B: A->B and B->A (every GPU paired)");
	r = gk_gpu_pairs(&b, 1, n_ab, 2, &c, 1, n_cd, 2, p, 8, &err);
	ok(r == 2 && pair_is(&p[0], UB, UC) && pair_is(&p[1], UA, UD),
	   "another node: the job's GPU first, the others in order");
	ok(gk_gpu_pairs(&a, 1, NULL, 0, &b, 1, n_ab, 2, p, 8, &err) == 1 && pair_is(&p[0], UA, UB),
	   "a seal without the node's GPUs: the job's GPUs alone");
	ok(gk_gpu_pairs(&a, 1, n_ab, 2, &b, 1, n_abc, 3, p, 8, &err) == -ENODEV &&
	       strstr(err.text, "had 2 GPU(s) and this one has 3"),
	   "a node with another number of GPUs is refused: %s", err.text);
	ok(gk_gpu_pairs(&a, 1, n_ab, 2, &b, 0, n_ab, 2, p, 8, &err) == -ENODEV,
	   "fewer GPUs than the checkpoint used is refused: %s", err.text);
}

/* How restore hands the program its stdio back (stdio.c). */
static void stdio_plans(void)
{
	struct gk_seal s;
	char a[3][4200];
	enum gk_stdio_how h[3];

	memset(&s, 0, sizeof(s));
	snprintf(s.stdio[0], sizeof(s.stdio[0]), "/dev/null");
	snprintf(s.stdio[1], sizeof(s.stdio[1]), "/bb/77/slurm-77.out");
	snprintf(s.stdio[2], sizeof(s.stdio[2]), "pipe:[4242]");
	s.have_stdio_task = 1;
	snprintf(s.stdio_task[0], sizeof(s.stdio_task[0]), "null");
	snprintf(s.stdio_task[1], sizeof(s.stdio_task[1]), "file");
	snprintf(s.stdio_task[2], sizeof(s.stdio_task[2]), "pipe");
	for (int i = 0; i < 3; i++)
		h[i] = gk_stdio_plan(&s, i, a[i], sizeof(a[i]));
	ok(h[0] == GK_STDIO_CRIU && h[1] == GK_STDIO_INHERIT &&
	       !strcmp(a[1], "fd[11]:bb/77/slurm-77.out") && h[2] == GK_STDIO_INHERIT &&
	       !strcmp(a[2], "fd[12]:pipe:[4242]"),
	   "stdio: the task's file and pipe are inherited, a file by its path from the root; "
	   "its /dev/null is CRIU's to reopen (%s %s)",
	   a[1], a[2]);
	snprintf(s.stdio_task[1], sizeof(s.stdio_task[1]), "%s", "");
	snprintf(s.stdio_task[0], sizeof(s.stdio_task[0]), "tty");
	snprintf(s.stdio[0], sizeof(s.stdio[0]), "/dev/pts/3");
	ok(gk_stdio_plan(&s, 1, a[1], sizeof(a[1])) == GK_STDIO_CRIU &&
	       gk_stdio_plan(&s, 0, a[0], sizeof(a[0])) == GK_STDIO_TERMINAL,
	   "stdio: a file the program opened itself is CRIU's to reopen; a terminal is "
	   "handed over as CRIU's stdin");
	s.have_stdio_task = 0;
	ok(gk_stdio_plan(&s, 2, a[2], sizeof(a[2])) == GK_STDIO_INHERIT &&
	       !strcmp(a[2], "fd[12]:pipe:[4242]") &&
	       gk_stdio_plan(&s, 1, a[1], sizeof(a[1])) == GK_STDIO_CRIU,
	   "stdio: a seal from before the kinds were recorded: its pipes are inherited, as "
	   "then");
}

/* The capabilities CRIU needs, from crafted status files. */
static int caps_of(const char *capeff, long uid, gk_error_t *why)
{
	char path[] = "/tmp/gk-caps.XXXXXX";
	int fd = mkstemp(path), ret;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		return -EIO;
	fprintf(f, "Name:\tprobe\nCapInh:\t0000000000000000\n");
	if (capeff)
		fprintf(f, "CapEff:\t%s\n", capeff);
	fprintf(f, "CapBnd:\t000001ffffffffff\n");
	fclose(f);
	ret = gk_criu_caps(path, uid, why);
	unlink(path);
	return ret;
}

static void capabilities(void)
{
	gk_error_t why;

	ok(caps_of("000001ffffffffff", -1, &why) == 0,
	   "capabilities: a root with all of them may run CRIU for anyone");
	ok(caps_of("000001fffeffffff", -1, &why) == 0 && caps_of("000001fffeffffff", 1000, &why) == 0,
	   "capabilities: without CAP_SYS_RESOURCE (the GPU machine's root) CRIU runs for anyone: "
	   "as the job's user it reads its own resource limits");
	ok(caps_of("000001ffffffff7f", 0, &why) == 0 &&
	       caps_of("000001ffffffff7f", 1000, &why) == -EPERM &&
	       strstr(why.text, "CAP_SETUID missing") && strstr(why.text, "as the job's user"),
	   "capabilities: CAP_SETUID, which root's own jobs do not need, and another user's do "
	   "(%s)",
	   why.text);
	ok(caps_of("000001ffffdfffff", -1, &why) == 0 &&
	       caps_of("000000ffffdfffff", 0, &why) == -EPERM &&
	       strstr(why.text, "CAP_SYS_ADMIN missing") &&
	       caps_of("000000ffffffffff", 1000, &why) == -EPERM &&
	       strstr(why.text, "CAP_CHECKPOINT_RESTORE missing"),
	   "capabilities: CAP_CHECKPOINT_RESTORE stands in for CAP_SYS_ADMIN, and without both "
	   "CAP_SYS_ADMIN is named; another user's job needs CAP_CHECKPOINT_RESTORE itself");
	ok(caps_of("000001fffff7ff3f", -1, &why) == -EPERM &&
	       strstr(why.text, "CAP_SYS_PTRACE, CAP_SETUID, CAP_SETGID missing") &&
	       strstr(why.text, "seize"),
	   "capabilities: several missing are all named, the first one's consequence said (%s)",
	   why.text);
	ok(caps_of(NULL, -1, &why) == -EINVAL && strstr(why.text, "no CapEff line") &&
	       gk_criu_caps("/nonexistent/status", -1, &why) == -ENOENT,
	   "capabilities: a status without CapEff, or none, is an error, not a pass");
}

/* What an NCCL rank's restore refuses (gk_gpu_shared_move): only the moves
 * the driver cannot carry for memory shared between processes. */
static void shared_moves(void)
{
	struct gk_gpu a = {UA, "H200"}, b = {UB, "H200"}, c = {UC, "H200"};
	struct gk_gpu ab[2] = {{UA, "H200"}, {UB, "H200"}}, ba[2] = {{UB, "H200"}, {UA, "H200"}};
	char n_ab[2][64] = {UA, UB}, n_cd[2][64] = {UC, UD};
	gk_error_t e;

	e.text[0] = 0;
	ok(gk_gpu_shared_move(&a, 1, &b, 1, n_ab, 2, &e) == -EXDEV &&
	       strstr(e.text, "saw 1 of the node's 2 GPUs and would move off " UA),
	   "one GPU per rank, moved onto the other GPU of the same node: refused: %s", e.text);
	ok(gk_gpu_shared_move(&a, 1, &a, 1, n_ab, 2, &e) == 0,
	   "one GPU per rank, restored onto the same GPU: allowed");
	ok(gk_gpu_shared_move(ab, 2, ba, 2, n_ab, 2, &e) == 0,
	   "every GPU of the node seen, restored in the other order: allowed (shown on the GPUs)");
	ok(gk_gpu_shared_move(&a, 1, &c, 1, n_cd, 2, &e) == 0,
	   "one GPU per rank, restored onto another node's GPU: allowed (its old GPU is not here)");
	ok(gk_gpu_shared_move(&a, 1, &b, 1, NULL, 0, &e) == 0,
	   "an older seal, without the node's GPUs: nothing to go by, nothing refused");
}

int main(void)
{
	plan(12 + 4 + 5 + 4 + 3 + 6 + 5 + 6 + 3 + 1);
	gk_log_set_level(GK_LOG_ERROR);
	messages();
	peers();
	tree();
	limits();
	mig();
	gpu_pairs();
	shared_moves();
	capabilities();
	stdio_plans();
	ok(!gk_sock_name_ok("") && !gk_sock_name_ok("a/b") && !gk_sock_name_ok("a b") &&
	       gk_sock_name_ok("gpuckpt-shepherd.1.ab"),
	   "socket names are checked");
	return done_testing();
}
