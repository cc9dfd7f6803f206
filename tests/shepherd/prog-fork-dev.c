/* A CUDA program that opens and maps a file named like the driver's device
 * files, then forks a child that does not exec, as PyTorch's DataLoader
 * does with its workers: prog-fork-dev FILE. Both print what they hold:
 * "parent|child fd <target of the descriptor> map <yes|no>", where map says
 * whether FILE's mapping is in the process (/proc/self/maps). Under the
 * shepherd (transparent mode) the child must hold /dev/null and no mapping
 * (runtime/core/control/fork_maps.c, tests/shepherd/fork-devices.sh).
 * The child then gets SIGTERM from its own child, as from someone outside
 * (Slurm signals every process of a step), and says "child held an outside
 * SIGTERM" if it is still there half a second later; then it sends itself
 * SIGTERM, which must end it as it would without gpuckpt. The parent prints
 * "child ended by signal N" or "child exited N". */
#include <cuda.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child may use no malloc, and so no stdio: the ASan build's allocator
 * is not made safe across fork (GCC 12's libasan), and a lock another thread
 * of the parent held at the fork (the stand-in's stream worker) hung the
 * child in fgets() for good, one run in a hundred under load. */
static void say(const char *line)
{
	size_t len = strlen(line);

	while (len > 0) {
		ssize_t n = write(1, line, len);

		if (n <= 0)
			return;
		line += n;
		len -= (size_t)n;
	}
}

static void report(const char *who, int fd, const char *file)
{
	static char maps[1 << 20];
	char link[64], target[256] = "", line[512];
	size_t have = 0;
	ssize_t n;
	int m = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	while (m >= 0 && have < sizeof(maps) - 1 &&
	       (n = read(m, maps + have, sizeof(maps) - 1 - have)) > 0)
		have += (size_t)n;
	maps[have] = '\0';
	if (m >= 0)
		close(m);
	snprintf(line, sizeof(line), "%s fd %s map %s\n", who, target,
		 strstr(maps, file) ? "yes" : "no");
	say(line);
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p;
	int fd;
	void *m;
	pid_t pid;
	int st;

	if (argc != 2 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&p, 1 << 20))
		return 2;
	fd = open(argv[1], O_RDWR);
	m = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 3;
	pid = fork();
	if (pid == 0) {
		pid_t g;

		report("child", fd, argv[1]);
		g = fork();
		if (g == 0) {
			kill(getppid(), SIGTERM);
			_exit(0);
		}
		waitpid(g, NULL, 0);
		usleep(500000);
		say("child held an outside SIGTERM\n");
		kill(getpid(), SIGTERM);
		sleep(2);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	{
		char line[64];

		if (WIFSIGNALED(st))
			snprintf(line, sizeof(line), "child ended by signal %d\n", WTERMSIG(st));
		else
			snprintf(line, sizeof(line), "child exited %d\n", WEXITSTATUS(st));
		say(line);
	}
	report("parent", fd, argv[1]);
	return 0;
}
