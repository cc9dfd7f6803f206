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

static void report(const char *who, int fd, const char *file)
{
	char link[64], target[256] = "", line[512];
	ssize_t n;
	int mapped = 0;
	FILE *maps = fopen("/proc/self/maps", "r");

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	while (maps && fgets(line, sizeof(line), maps))
		if (strstr(line, file))
			mapped = 1;
	if (maps)
		fclose(maps);
	printf("%s fd %s map %s\n", who, target, mapped ? "yes" : "no");
	fflush(stdout);
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
		printf("child held an outside SIGTERM\n");
		fflush(stdout);
		kill(getpid(), SIGTERM);
		sleep(2);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("child ended by signal %d\n", WTERMSIG(st));
	else
		printf("child exited %d\n", WEXITSTATUS(st));
	report("parent", fd, argv[1]);
	return 0;
}
