/* A CUDA program that knows nothing of gpuckpt: on SIGTERM it must end as it
 * would without gpuckpt, with one line saying no checkpoint was taken.
 * With --managed it also holds managed memory, and with --pool-export it has
 * tried to share pool memory with another process: transparent mode must
 * refuse to checkpoint either (tests/shepherd/agent.sh). On a real GPU,
 * --ipc-export FILE writes a legacy IPC handle of its memory to FILE (run it
 * without the runtime) and --ipc-open FILE opens one: the case of a process
 * holding another's memory. --vmm-export FILE and --vmm-import FILE do the
 * same through a POSIX file descriptor (cuMemExportToShareableHandle, the way
 * NCCL shares memory between a node's processes): FILE holds "pid fd", and
 * the importer takes the descriptor with pidfd_getfd(2). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* An exported allocation's descriptor; the importer writes nothing. */
static int vmm_export(CUdevice dev, const char *file)
{
	CUmemAllocationProp prop = {0};
	CUmemGenericAllocationHandle h;
	size_t gran = 0;
	int fd = -1;
	FILE *f;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
	    cuMemCreate(&h, gran, &prop, 0) ||
	    cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ||
	    !(f = fopen(file, "w")))
		return -1;
	fprintf(f, "%ld %d\n", (long)getpid(), fd);
	return fclose(f) ? -1 : 0;
}

static int vmm_import(const char *file)
{
	CUmemGenericAllocationHandle h;
	long pid;
	int fd, pidfd, mine;
	FILE *f = fopen(file, "r");

	if (!f || fscanf(f, "%ld %d", &pid, &fd) != 2)
		return -1;
	fclose(f);
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	mine = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (mine < 0)
		return -1;
	return cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)mine,
					      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		       ? -1
		       : 0;
}

int main(int argc, char **argv)
{
	int managed = argc > 1 && !strcmp(argv[1], "--managed");
	int pool_export = argc > 1 && !strcmp(argv[1], "--pool-export");
	const char *ipc_export = argc > 2 && !strcmp(argv[1], "--ipc-export") ? argv[2] : NULL;
	const char *ipc_open = argc > 2 && !strcmp(argv[1], "--ipc-open") ? argv[2] : NULL;
	const char *vmm_out = argc > 2 && !strcmp(argv[1], "--vmm-export") ? argv[2] : NULL;
	const char *vmm_in = argc > 2 && !strcmp(argv[1], "--vmm-import") ? argv[2] : NULL;
	CUipcMemHandle h;
	FILE *f;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d, m;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&d, 1024) ||
	    (managed && cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL))) {
		fprintf(stderr, "prog-unaware: CUDA setup failed\n");
		return 1;
	}
	if (pool_export) {
		CUmemPoolPtrExportData data;

		/* Whether the export worked or not, the process may now share
		 * memory with another: the runtime must not let it be dumped. */
		cuMemPoolExportPointer(&data, d);
	}
	if (ipc_export) {
		if (cuIpcGetMemHandle(&h, d) || !(f = fopen(ipc_export, "wb")) ||
		    fwrite(&h, sizeof(h), 1, f) != 1 || fclose(f)) {
			fprintf(stderr, "prog-unaware: cannot export an IPC handle to %s\n", ipc_export);
			return 1;
		}
	}
	if (ipc_open) {
		CUdeviceptr other;

		if (!(f = fopen(ipc_open, "rb")) || fread(&h, sizeof(h), 1, f) != 1 ||
		    cuIpcOpenMemHandle(&other, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) {
			fprintf(stderr, "prog-unaware: cannot open the IPC handle in %s\n", ipc_open);
			return 1;
		}
		fclose(f);
	}
	if ((vmm_out && vmm_export(dev, vmm_out) < 0) || (vmm_in && vmm_import(vmm_in) < 0)) {
		fprintf(stderr, "prog-unaware: cannot share memory through %s\n",
			vmm_out ? vmm_out : vmm_in);
		return 1;
	}
	printf("prog-unaware: ready\n");
	fflush(stdout);
	for (int i = 0; i < 600; i++)
		usleep(100000);
	return 0;
}
