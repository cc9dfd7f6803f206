/*
 * driver-swap - what the CUDA driver gives back to a process restored onto
 * another GPU, when that process then maps memory of another process
 * (docs/nccl.md, "Limits"; gk_gpu_shared_move in the shepherd rests on it).
 * No gpuckpt here: the driver's own checkpoint API on live processes.
 *
 *   driver-swap peer ROLE DIR ORDINAL
 *       One of two peers. Makes a cuMemCreate allocation (POSIX descriptor
 *       handle) and a cuMemAlloc one on device ORDINAL, fills them with
 *       1000+ROLE and 2000+ROLE, writes DIR/pidROLE and waits for DIR/go.
 *       Then checks its own memory, exchanges both allocations with the
 *       other peer over DIR/sock (the descriptor with SCM_RIGHTS, the
 *       legacy IPC handle as bytes), maps the other's and reads it. One
 *       "peer R: WHAT: ok|failed ..." line per step.
 *   driver-swap ctl DIR none|same|swap
 *       Waits for both peers' pids; none lets them go at once; same and
 *       swap lock and checkpoint both through the driver, then restore
 *       each onto its own GPU (same) or onto the other one (swap), with
 *       every GPU of the machine paired as the driver wants, unlock, and
 *       let them go.
 *
 * The peers run with CUDA_VISIBLE_DEVICES as the caller sets it; the ctl
 * sees GPUs 0 and 1 of the machine. Built against the driver alone.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int role;

static const char *errname(CUresult r)
{
	const char *s = NULL;

	cuGetErrorName(r, &s);
	return s ? s : "?";
}

/* One line per step; 0 when it went well. */
static int say(const char *what, CUresult r)
{
	printf("peer %d: %s: %s%s%s\n", role, what, r == CUDA_SUCCESS ? "ok" : "failed (",
	       r == CUDA_SUCCESS ? "" : errname(r), r == CUDA_SUCCESS ? "" : ")");
	fflush(stdout);
	return r != CUDA_SUCCESS;
}

static void need(const char *what, CUresult r)
{
	if (say(what, r))
		exit(1);
}

static int send_fd(int s, int fd)
{
	char c = 'f', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec io = {&c, 1};
	struct msghdr m = {0};
	struct cmsghdr *h;

	memset(cbuf, 0, sizeof(cbuf));
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(fd));
	return sendmsg(s, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int s)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec io = {&c, 1};
	struct msghdr m = {0};
	struct cmsghdr *h;
	int fd;

	m.msg_iov = &io;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	if (recvmsg(s, &m, 0) != 1 || !(h = CMSG_FIRSTHDR(&m)) || h->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(h), sizeof(fd));
	return fd;
}

static int full(int fd, void *buf, size_t n, int out)
{
	char *p = buf;

	while (n) {
		ssize_t k = out ? write(fd, p, n) : read(fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int peer(const char *dir, int ord)
{
	const size_t size = 64 << 20;
	CUmemAllocationProp prop = {0};
	CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, ord}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUmemGenericAllocationHandle h, ph;
	CUdeviceptr va, pva, plain, pplain;
	CUipcMemHandle ih, pih;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	char path[600], x = 0;
	unsigned v = 0;
	int fd = -1, pfd, s, c;
	FILE *f;

	need("init", cuInit(0));
	need("device", cuDeviceGet(&dev, ord));
	need("context", cuDevicePrimaryCtxRetain(&ctx, dev));
	need("current", cuCtxSetCurrent(ctx));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = ord;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	need("cuMemCreate", cuMemCreate(&h, size, &prop, 0));
	need("reserve", cuMemAddressReserve(&va, size, 0, 0, 0));
	need("map", cuMemMap(va, size, 0, h, 0));
	need("access", cuMemSetAccess(va, size, &rw, 1));
	need("fill", cuMemsetD32(va, 1000u + (unsigned)role, size / 4));
	need("cuMemAlloc", cuMemAlloc(&plain, 1 << 20));
	need("fill plain", cuMemsetD32(plain, 2000u + (unsigned)role, (1 << 20) / 4));
	need("sync", cuCtxSynchronize());

	snprintf(path, sizeof(path), "%s/pid%d", dir, role);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
		return 1;
	snprintf(path, sizeof(path), "%s/go", dir);
	while (access(path, F_OK) != 0)
		usleep(20000);

	need("own memory read", cuMemcpyDtoH(&v, va, sizeof(v)));
	printf("peer %d: own memory: %s\n", role, v == 1000u + (unsigned)role ? "ok" : "wrong");
	need("export", cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	need("legacy handle", cuIpcGetMemHandle(&ih, plain));

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/sock", dir);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (role == 0) {
		unlink(a.sun_path);
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
			return 1;
		c = accept(s, NULL, NULL);
	} else {
		while (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
			usleep(20000);
		c = s;
	}
	if (c < 0 || send_fd(c, fd) < 0 || (pfd = recv_fd(c)) < 0 ||
	    full(c, &ih, sizeof(ih), 1) < 0 || full(c, &pih, sizeof(pih), 0) < 0)
		return 1;

	/* Every step from here is reported, and the rest still tried. */
	r = cuMemImportFromShareableHandle(&ph, (void *)(long)pfd,
					   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (!say("import", r)) {
		r = cuMemAddressReserve(&pva, size, 0, 0, 0);
		if (r == CUDA_SUCCESS)
			r = cuMemMap(pva, size, 0, ph, 0);
		if (!say("import map", r) && !say("import access", cuMemSetAccess(pva, size, &rw, 1))) {
			v = 0;
			if (!say("import read", cuMemcpyDtoH(&v, pva, sizeof(v))))
				printf("peer %d: import holds the other's: %s\n", role,
				       v == 1001u - (unsigned)role ? "ok" : "wrong");
		}
	}
	if (!say("legacy open", cuIpcOpenMemHandle(&pplain, pih, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))) {
		v = 0;
		if (!say("legacy read", cuMemcpyDtoH(&v, pplain, sizeof(v))))
			printf("peer %d: legacy holds the other's: %s\n", role,
			       v == 2001u - (unsigned)role ? "ok" : "wrong");
	}
	/* Neither leaves before the other has read. */
	if (full(c, &x, 1, 1) < 0 || full(c, &x, 1, 0) < 0)
		return 1;
	printf("peer %d: done\n", role);
	return 0;
}

static int pid_of(const char *dir, int r)
{
	char path[600];
	int pid = 0;

	snprintf(path, sizeof(path), "%s/pid%d", dir, r);
	for (;;) {
		FILE *f = fopen(path, "r");

		if (f) {
			int ok = fscanf(f, "%d", &pid) == 1 && pid > 0;

			fclose(f);
			if (ok)
				return pid;
		}
		usleep(20000);
	}
}

static int ctl(const char *dir, const char *mode)
{
	int pid[2] = {pid_of(dir, 0), pid_of(dir, 1)}, rc = 0, swap = !strcmp(mode, "swap");
	CUuuid u[2];
	CUdevice d;
	char path[600];
	FILE *f;

	if (cuInit(0) != CUDA_SUCCESS)
		return 1;
	for (int i = 0; i < 2; i++)
		if (cuDeviceGet(&d, i) != CUDA_SUCCESS || cuDeviceGetUuid(&u[i], d) != CUDA_SUCCESS)
			return 1;
	if (strcmp(mode, "none") != 0) {
		for (int r = 0; r < 2 && !rc; r++) {
			CUcheckpointLockArgs la = {0};
			CUcheckpointCheckpointArgs ca = {0};

			rc = cuCheckpointProcessLock(pid[r], &la) || cuCheckpointProcessCheckpoint(pid[r], &ca);
		}
		for (int r = 0; r < 2 && !rc; r++) {
			/* Peer r ran on GPU r; every GPU of the machine is paired. */
			int to = swap ? 1 - r : r;
			CUcheckpointGpuPair pairs[2] = {{u[r], u[to]}, {u[1 - r], u[1 - to]}};
			CUcheckpointRestoreArgs ra;
			CUcheckpointUnlockArgs ua = {0};

			memset(&ra, 0, sizeof(ra));
			ra.gpuPairs = pairs;
			ra.gpuPairsCount = 2;
			rc = cuCheckpointProcessRestore(pid[r], &ra) || cuCheckpointProcessUnlock(pid[r], &ua);
		}
		printf("ctl: checkpointed and restored (%s): %s\n", mode, rc ? "failed" : "ok");
	}
	snprintf(path, sizeof(path), "%s/go", dir);
	f = fopen(path, "w");
	if (f)
		fclose(f);
	return rc != 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "peer")) {
		role = atoi(argv[2]) != 0;
		return peer(argv[3], atoi(argv[4]));
	}
	if (argc == 4 && !strcmp(argv[1], "ctl"))
		return ctl(argv[2], argv[3]);
	fprintf(stderr, "usage: driver-swap peer ROLE DIR ORDINAL | driver-swap ctl DIR none|same|swap\n");
	return 2;
}
