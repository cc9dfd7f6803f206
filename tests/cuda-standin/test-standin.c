/*
 * test-standin.c - the CUDA driver stand-in, through the driver API as a
 * program sees it (linked with -lcuda, run by test-standin.sh against the
 * stand-in). Settings read once at cuInit (CUDA_VISIBLE_DEVICES,
 * GPUCKPT_STANDIN_*) are tested in fresh copies of this program ("--probe").
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define MiB (1024ULL * 1024)
/* The runtime's default placement base; a ThreadSanitizer build needs another one. */
#ifndef FIXED_VA
#define FIXED_VA 0x200000000000ULL
#endif

static const char *errname(CUresult rc)
{
	const char *s = NULL;

	cuGetErrorName(rc, &s);
	return s ? s : "(unknown CUresult)";
}

static void is_rc_(CUresult got, CUresult want, const char *file, int line, const char *desc)
{
	if (!ok_(got == want, file, line, "%s", desc))
		printf("#   got %s, expected %s\n", errname(got), errname(want));
}

#define is_rc(got, want, desc) is_rc_((got), (want), __FILE__, __LINE__, (desc))

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- --probe: what a fresh process sees of the devices ---- */

static int probe_main(void)
{
	CUresult rc = cuInit(0);
	int n = 0;

	printf("init=%s\n", errname(rc));
	if (rc)
		return 0;
	cuDeviceGetCount(&n);
	for (int i = 0; i < n; i++) {
		CUdevice d;
		CUuuid u;
		char name[128];
		size_t total = 0;
		int maj = 0, min = 0;

		cuDeviceGet(&d, i);
		cuDeviceGetUuid(&u, d);
		cuDeviceGetName(name, sizeof(name), d);
		cuDeviceTotalMem(&total, d);
		cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
		cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
		printf("dev %d GPU-", i);
		for (int b = 0; b < 16; b++)
			printf("%02x%s", (unsigned char)u.bytes[b],
			       b == 3 || b == 5 || b == 7 || b == 9 ? "-" : "");
		printf(" %zu %d.%d %s\n", total, maj, min, name);
	}
	return 0;
}

struct probe {
	char init[64];
	int n;
	char uuid[16][48];
	size_t total[16];
	char cc[16][8];
	char name[16][128];
};

/* environ changed as env says ("K=V" sets, "K" unsets), made before a fork:
 * the child of this threaded program may not malloc (setenv does), as a lock
 * another thread held at the fork stays held there (ASan's allocator is not
 * made safe across fork). Freed with free() (one block). */
static char **probe_env(const char *const *env)
{
	size_t n = 0, m = 0, bytes = 0;
	char **out, *at;

	for (char **e = environ; *e; e++, n++)
		bytes += strlen(*e) + 1;
	for (const char *const *e = env; *e; e++, m++)
		bytes += strlen(*e) + 1;
	out = malloc((n + m + 1) * sizeof(*out) + bytes);
	if (!out)
		return NULL;
	at = (char *)(out + n + m + 1);
	n = 0;
	for (char **e = environ; *e; e++) {
		int dropped = 0;

		for (const char *const *c = env; *c && !dropped; c++) {
			size_t k = strcspn(*c, "=");

			dropped = strncmp(*e, *c, k) == 0 && (*e)[k] == '=';
		}
		if (!dropped)
			out[n++] = strcpy(at, *e), at += strlen(at) + 1;
	}
	for (const char *const *c = env; *c; c++)
		if (strchr(*c, '='))
			out[n++] = strcpy(at, *c), at += strlen(at) + 1;
	out[n] = NULL;
	return out;
}

/* Runs this program with --probe under env ("K=V" sets, "K" unsets). */
static int run_probe(const char *const *env, struct probe *p)
{
	char buf[8192], line[256];
	size_t len = 0;
	int fds[2], status;
	char **envp;
	FILE *f;
	pid_t pid;
	ssize_t r;

	memset(p, 0, sizeof(*p));
	envp = probe_env(env);
	if (!envp || pipe(fds)) {
		free(envp);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		free(envp);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execle("/proc/self/exe", "test-standin", "--probe", (char *)NULL, envp);
		_exit(127);
	}
	free(envp);
	close(fds[1]);
	while ((r = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	close(fds[0]);
	buf[len] = '\0';
	waitpid(pid, &status, 0);
	f = fmemopen(buf, len ? len : 1, "r");
	while (f && fgets(line, sizeof(line), f)) {
		int i, off = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "init=%63s", p->init) == 1)
			continue;
		if (sscanf(line, "dev %d %47s %zu %7s %n", &i, p->uuid[p->n], &p->total[p->n],
			   p->cc[p->n], &off) == 4 &&
		    i == p->n) {
			snprintf(p->name[p->n], sizeof(p->name[0]), "%s", line + off);
			p->n++;
		}
	}
	if (f)
		fclose(f);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void test_visible_devices(void)
{
	const char *const none[] = {"CUDA_VISIBLE_DEVICES", NULL};
	struct probe all, p;
	char env1[128], env2[128];
	bool distinct = true;

	ok(run_probe(none, &all) == 0 && strcmp(all.init, "CUDA_SUCCESS") == 0,
	   "probe: cuInit succeeds with the defaults");
	is_int(all.n, 4, "four devices by default");
	for (int i = 0; i < all.n; i++)
		for (int j = i + 1; j < all.n; j++)
			distinct = distinct && strcmp(all.uuid[i], all.uuid[j]) != 0;
	ok(distinct && all.n == 4, "every device has its own UUID");
	ok(all.total[0] == 1024 * MiB && strcmp(all.cc[0], "9.0") == 0,
	   "1 GiB and compute capability 9.0 by default");
	ok(strstr(all.name[2], "stand-in GPU 2") != NULL, "the name says what it is: %s",
	   all.name[2]);

	{
		const char *const env[] = {"CUDA_VISIBLE_DEVICES=2,0", NULL};

		run_probe(env, &p);
		ok(p.n == 2 && strcmp(p.uuid[0], all.uuid[2]) == 0 &&
		       strcmp(p.uuid[1], all.uuid[0]) == 0,
		   "CUDA_VISIBLE_DEVICES=2,0: ordinal 0 is physical 2, ordinal 1 is physical 0");
	}
	snprintf(env1, sizeof(env1), "CUDA_VISIBLE_DEVICES=%s", all.uuid[3]);
	{
		const char *const env[] = {env1, NULL};

		run_probe(env, &p);
		ok(p.n == 1 && strcmp(p.uuid[0], all.uuid[3]) == 0,
		   "a full UUID selects that device");
	}
	/* "GPU-5af057a1-01" is as far as device 1's UUID must go to be unique. */
	snprintf(env2, sizeof(env2), "CUDA_VISIBLE_DEVICES=%.15s,0", all.uuid[1]);
	{
		const char *const env[] = {env2, NULL};

		run_probe(env, &p);
		ok(p.n == 2 && strcmp(p.uuid[0], all.uuid[1]) == 0 &&
		       strcmp(p.uuid[1], all.uuid[0]) == 0,
		   "a unique UUID prefix selects a device (%s)", env2);
	}
	{
		const char *const env[] = {"CUDA_VISIBLE_DEVICES=GPU-5af057a1", NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_NO_DEVICE", "an ambiguous UUID prefix names no device");
	}
	{
		const char *const env[] = {"CUDA_VISIBLE_DEVICES=1,7,2", NULL};

		run_probe(env, &p);
		ok(p.n == 1 && strcmp(p.uuid[0], all.uuid[1]) == 0,
		   "the list ends at the first invalid entry (1,7,2 -> one device)");
	}
	{
		const char *const env[] = {"CUDA_VISIBLE_DEVICES=3,3", NULL};

		run_probe(env, &p);
		is_int(p.n, 1, "a device listed twice ends the list");
	}
	{
		const char *const env[] = {"CUDA_VISIBLE_DEVICES=", NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_NO_DEVICE",
		       "an empty CUDA_VISIBLE_DEVICES hides every device");
	}
	{
		const char *const env[] = {"CUDA_VISIBLE_DEVICES=MIG-0", NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_NO_DEVICE", "MIG identifiers name no stand-in device");
	}
}

static void test_configuration(void)
{
	struct probe p;

	{
		const char *const env[] = {"GPUCKPT_STANDIN_GPUS=2", "CUDA_VISIBLE_DEVICES", NULL};

		run_probe(env, &p);
		is_int(p.n, 2, "GPUCKPT_STANDIN_GPUS=2: two devices");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_GPUS=16", "CUDA_VISIBLE_DEVICES=15",
					   NULL};

		run_probe(env, &p);
		ok(p.n == 1 && strstr(p.name[0], "GPU 15") != NULL, "sixteen devices at most");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_GPUS=17", "CUDA_VISIBLE_DEVICES", NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_INVALID_VALUE", "GPUCKPT_STANDIN_GPUS=17 is refused");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_GPUS=two", "CUDA_VISIBLE_DEVICES",
					   NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_INVALID_VALUE", "GPUCKPT_STANDIN_GPUS=two is refused");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_MEMORY=512M", "CUDA_VISIBLE_DEVICES",
					   NULL};

		run_probe(env, &p);
		ok(p.n == 4 && p.total[0] == 512 * MiB && p.total[3] == 512 * MiB,
		   "GPUCKPT_STANDIN_MEMORY=512M sizes every device");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_MEMORY=1G,1G,64M",
					   "CUDA_VISIBLE_DEVICES=2,0", NULL};

		run_probe(env, &p);
		ok(p.n == 2 && p.total[0] == 64 * MiB && p.total[1] == 1024 * MiB,
		   "a size list sizes each physical device and sets their number");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_MEMORY=1G,64M",
					   "GPUCKPT_STANDIN_GPUS=3", "CUDA_VISIBLE_DEVICES", NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_INVALID_VALUE",
		       "a size list that disagrees with GPUCKPT_STANDIN_GPUS is refused");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_MEMORY=12Q", "CUDA_VISIBLE_DEVICES",
					   NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_INVALID_VALUE", "GPUCKPT_STANDIN_MEMORY=12Q is refused");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_CC=8.0", "CUDA_VISIBLE_DEVICES", NULL};

		run_probe(env, &p);
		ok(p.n == 4 && strcmp(p.cc[1], "8.0") == 0, "GPUCKPT_STANDIN_CC=8.0");
	}
	{
		const char *const env[] = {"GPUCKPT_STANDIN_CC=eight", "CUDA_VISIBLE_DEVICES",
					   NULL};

		run_probe(env, &p);
		is_str(p.init, "CUDA_ERROR_INVALID_VALUE", "GPUCKPT_STANDIN_CC=eight is refused");
	}
}

/* ---- before cuInit ---- */

static void test_before_init(void)
{
	const char *s = NULL;
	int v = 0, n = 0;

	is_rc(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetCount before cuInit");
	is_rc(cuDriverGetVersion(&v), CUDA_SUCCESS, "cuDriverGetVersion works before cuInit");
	is_int(v, 13000, "driver version 13.0");
	cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s);
	is_str(s, "CUDA_ERROR_OUT_OF_MEMORY", "cuGetErrorName");
	is_rc(cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE,
	      "cuGetErrorString refuses a code that is no CUresult");
	is_rc(cuInit(1), CUDA_ERROR_INVALID_VALUE, "cuInit with flags is refused");
	is_rc(cuInit(0), CUDA_SUCCESS, "cuInit");
}

/* ---- devices and contexts ---- */

static void test_devices(void)
{
	char bus[32];
	CUdevice d = -1, back = -1;
	int n = 0, v = -1;

	cuDeviceGetCount(&n);
	is_int(n, 4, "four devices");
	is_rc(cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE, "cuDeviceGetCount(NULL)");
	is_rc(cuDeviceGet(&d, 4), CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet past the last device");
	cuDeviceGet(&d, 1);
	cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d);
	is_int(v, 1, "VMM supported");
	cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d);
	is_int(v, 1, "memory pools supported");
	cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, d);
	is_int(v, 1, "unified addressing");
	is_rc(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, d), CUDA_ERROR_INVALID_VALUE,
	      "an attribute out of range is refused");
	cuDeviceGetPCIBusId(bus, sizeof(bus), d);
	is_str(bus, "0000:11:00.0", "PCI bus id of device 1");
	cuDeviceGetByPCIBusId(&back, bus);
	is_int(back, 1, "cuDeviceGetByPCIBusId finds it again");
}

static void test_no_context(void)
{
	CUcontext c = (CUcontext)1;
	CUdeviceptr p;

	is_rc(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc without a context");
	cuCtxGetCurrent(&c);
	ok(c == NULL, "no current context at first");
	is_rc(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT,
	      "the NULL stream needs a context");
}

struct destroyed_probe {
	CUcontext ctx;
	int step;
	CUresult before, after;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void wait_step(struct destroyed_probe *p, int step)
{
	pthread_mutex_lock(&p->lock);
	while (p->step < step)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

static void set_step(struct destroyed_probe *p, int step)
{
	pthread_mutex_lock(&p->lock);
	p->step = step;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void *other_thread(void *arg)
{
	struct destroyed_probe *p = arg;
	CUdevice d;

	cuCtxSetCurrent(p->ctx);
	p->before = cuCtxGetDevice(&d);
	set_step(p, 1);
	wait_step(p, 2);
	p->after = cuCtxGetDevice(&d);
	return NULL;
}

static void test_contexts(CUcontext primary)
{
	struct destroyed_probe probe = {.lock = PTHREAD_MUTEX_INITIALIZER,
					.cond = PTHREAD_COND_INITIALIZER};
	CUcontext c, cur, popped;
	CUdevice d = -1;
	size_t free0, free1, total;
	CUdeviceptr p;
	pthread_t t;

	is_rc(cuCtxCreate(&c, NULL, 0, 2), CUDA_SUCCESS, "cuCtxCreate on device 2 (no params)");
	cuCtxGetDevice(&d);
	is_int(d, 2, "the new context is current");
	cuMemGetInfo(&free0, &total);
	cuMemAlloc(&p, 64 * MiB);
	cuMemGetInfo(&free1, &total);
	ok(free0 - free1 == 64 * MiB, "cuMemGetInfo counts the context's device memory");
	is_rc(cuCtxPushCurrent(primary), CUDA_SUCCESS, "push the primary context");
	cuCtxGetCurrent(&cur);
	ok(cur == primary, "the pushed context is current");
	cuCtxPopCurrent(&popped);
	cuCtxGetCurrent(&cur);
	ok(popped == primary && cur == c, "pop returns to the created context");

	probe.ctx = c;
	pthread_create(&t, NULL, other_thread, &probe);
	wait_step(&probe, 1);
	is_rc(cuCtxDestroy(c), CUDA_SUCCESS, "cuCtxDestroy");
	set_step(&probe, 2);
	pthread_join(t, NULL);
	is_rc(probe.before, CUDA_SUCCESS, "another thread used the context");
	is_rc(probe.after, CUDA_ERROR_CONTEXT_IS_DESTROYED,
	      "after cuCtxDestroy it is destroyed for that thread");
	cuCtxGetCurrent(&cur);
	ok(cur != c, "cuCtxDestroy popped it from the calling thread");
	is_rc(cuCtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT, "destroying it again is refused");
	cuCtxSetCurrent(c = NULL);
	cuCtxSetCurrent(primary);
	is_rc(cuCtxCreate(&c, NULL, 0, 2), CUDA_SUCCESS, "a new context on device 2");
	cuMemGetInfo(&free1, &total);
	ok(free1 == free0, "the destroyed context's memory went back to the device");
	cuCtxDestroy(c);
	cuCtxSetCurrent(primary);
}

/* ---- memory ---- */

static void test_capacity(void)
{
	CUdeviceptr a, b;
	size_t fr, total;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};

	is_rc(cuMemAlloc(&a, 1024 * MiB + 1), CUDA_ERROR_OUT_OF_MEMORY,
	      "an allocation larger than the device");
	is_rc(cuMemAlloc(&a, 768 * MiB), CUDA_SUCCESS, "768 MiB of 1 GiB");
	is_rc(cuMemAlloc(&b, 300 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "300 MiB more do not fit");
	is_rc(cuMemCreate(&h, 512 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY,
	      "VMM allocations count against the same memory");
	cuMemGetInfo(&fr, &total);
	ok(total == 1024 * MiB && fr == 256 * MiB, "cuMemGetInfo: %zu free of %zu", fr, total);
	is_rc(cuMemFree(a), CUDA_SUCCESS, "cuMemFree");
	is_rc(cuMemFree(a), CUDA_ERROR_INVALID_VALUE, "freeing it again is refused");
	is_rc(cuMemAlloc(&b, 300 * MiB), CUDA_SUCCESS, "after the free it fits");
	cuMemFree(b);
	is_rc(cuMemAlloc(&a, 0), CUDA_ERROR_INVALID_VALUE, "a zero-byte allocation is refused");
	is_rc(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc(NULL, ...)");
}

/* Whether the process can read (write) the byte at p: the kernel says EFAULT if not. */
static bool can_access(const void *p, bool write)
{
	int fds[2];
	bool okay;
	char c = 0;

	if (pipe(fds))
		return false;
	if (write) {
		syscall(SYS_write, fds[1], &c, 1);
		okay = syscall(SYS_read, fds[0], (void *)p, 1) == 1;
	} else {
		okay = syscall(SYS_write, fds[1], p, 1) == 1;
	}
	close(fds[0]);
	close(fds[1]);
	return okay;
}

static void test_vmm(void)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
	CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUmemGenericAllocationHandle h1, h2, back;
	unsigned long long flags = 99;
	CUdeviceptr va, va2, base = 0;
	size_t gran = 0, size = 0, free0, free1, total;
	CUipcMemHandle ipc;
	unsigned char buf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
	unsigned int type = 0;
	int ord = -1;

	cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	is_int(gran, 2 * MiB, "granularity 2 MiB");
	cuMemGetInfo(&free0, &total);
	is_rc(cuMemAddressReserve(&va, 8 * MiB, 64 * MiB, 0, 0), CUDA_SUCCESS,
	      "reserve with 64 MiB alignment");
	ok(va % (64 * MiB) == 0, "... the alignment is honoured (%#llx)", (unsigned long long)va);
	cuMemAddressFree(va, 8 * MiB);
	is_rc(cuMemAddressReserve(&va, 8 * MiB, 3 * MiB, 0, 0), CUDA_ERROR_INVALID_VALUE,
	      "an alignment that is no power of two is refused");
	is_rc(cuMemAddressReserve(&va, 64 * MiB, 0, FIXED_VA, 0), CUDA_SUCCESS,
	      "reserve 64 MiB at a fixed address");
	ok(va == FIXED_VA, "the requested address is honoured (%#llx)", (unsigned long long)va);
	is_rc(cuMemAddressReserve(&va2, 4 * MiB, 0, FIXED_VA, 0), CUDA_SUCCESS,
	      "reserving the same address again succeeds");
	ok(va2 != FIXED_VA && va2 % (2 * MiB) == 0,
	   "... elsewhere, the address being a hint (%#llx)", (unsigned long long)va2);
	/* The H200's rule for hints (vmm.c): small ones go to the pool, others are
	 * rounded up to 32 MiB. */
	{
		CUdeviceptr v3 = 0, want = FIXED_VA + 256 * MiB;

		cuMemAddressReserve(&v3, 16 * MiB, 0, want, 0);
		ok(v3 != want, "a hint for 16 MiB is not taken, as by the driver (%#llx)",
		   (unsigned long long)v3);
		cuMemAddressFree(v3, 16 * MiB);
		cuMemAddressReserve(&v3, 32 * MiB, 0, want + 2 * MiB, 0);
		ok(v3 == want + 32 * MiB, "a hint that is no multiple of 32 MiB is rounded up (%#llx)",
		   (unsigned long long)v3);
		cuMemAddressFree(v3, 32 * MiB);
	}
	is_rc(cuMemCreate(&h1, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE,
	      "cuMemCreate of a size that is not a granularity multiple");
	is_rc(cuMemCreate(&h1, 4 * MiB, &prop, 0), CUDA_SUCCESS, "cuMemCreate 4 MiB");
	cuMemCreate(&h2, 4 * MiB, &prop, 0);
	is_rc(cuMemMap(va, 4 * MiB, 0, h1, 0), CUDA_SUCCESS, "cuMemMap");
	is_rc(cuMemMap(va, 4 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE,
	      "mapping over a mapping is refused");
	is_rc(cuMemMap(va + 60 * MiB, 8 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE,
	      "mapping past the reservation is refused");
	ok(!can_access((void *)va, false), "mapped memory is not accessible before cuMemSetAccess");
	cuMemGetAccess(&flags, &rw.location, va);
	is_int(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE, "cuMemGetAccess: no access yet");
	is_rc(cuMemcpyHtoD(va, buf, sizeof(buf)), CUDA_ERROR_INVALID_VALUE,
	      "a copy into it is refused");
	is_rc(cuMemSetAccess(va, 4 * MiB, &rw, 1), CUDA_SUCCESS, "cuMemSetAccess read/write");
	ok(can_access((void *)va, false) && can_access((void *)va, true),
	   "now readable and writable");
	cuMemGetAccess(&flags, &rw.location, va);
	is_int(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "cuMemGetAccess: read/write");
	cuMemMap(va + 4 * MiB, 4 * MiB, 0, h2, 0);
	cuMemSetAccess(va + 4 * MiB, 4 * MiB, &rw, 1);
	is_rc(cuMemcpyHtoD(va + 4 * MiB - 4, buf, sizeof(buf)), CUDA_SUCCESS,
	      "a copy may cross from one mapping into the adjacent one");
	cuMemcpyDtoH(out, va + 4 * MiB - 4, sizeof(out));
	ok(memcmp(out, buf, sizeof(buf)) == 0 && ((unsigned char *)va)[4 * MiB] == 5,
	   "... and lands at the same bytes as the host sees them");
	cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 5 * MiB);
	cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + 5 * MiB);
	ok(base == va + 4 * MiB && size == 4 * MiB,
	   "the pointer range of VMM memory is its mapping");
	cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va);
	cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va);
	ok(type == CU_MEMORYTYPE_DEVICE && ord == 0, "VMM memory is device memory of device 0");
	is_rc(cuIpcGetMemHandle(&ipc, va), CUDA_ERROR_INVALID_VALUE,
	      "no legacy IPC handle for VMM memory");
	is_rc(cuMemRetainAllocationHandle(&back, (void *)(va + MiB)), CUDA_SUCCESS,
	      "cuMemRetainAllocationHandle");
	ok(back == h1, "... gives the allocation's handle");
	cuMemRelease(back);
	is_rc(cuMemAddressFree(va, 64 * MiB), CUDA_ERROR_INVALID_VALUE,
	      "a reservation with mappings is not freed");
	is_rc(cuMemRelease(h1), CUDA_SUCCESS, "cuMemRelease while mapped");
	ok(can_access((void *)va, false), "the mapping keeps the memory");
	is_rc(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE,
	      "unmapping half a mapping is refused");
	is_rc(cuMemUnmap(va, 8 * MiB), CUDA_SUCCESS, "cuMemUnmap both mappings");
	ok(!can_access((void *)va, false), "unmapped memory is inaccessible again");
	is_rc(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE, "a released handle is gone");
	cuMemRelease(h2);
	cuMemGetInfo(&free1, &total);
	ok(free1 == free0, "unmapped and released VMM memory went back to the device");
	is_rc(cuMemAddressFree(va, 64 * MiB), CUDA_SUCCESS, "cuMemAddressFree");
	cuMemAddressFree(va2, 4 * MiB);
}

/* Peer access between devices 0 and 1 (physical 0 and 1 here), and a route
 * cut with GPUCKPT_STANDIN_NO_PEER. */
#define PEER_TESTS 14
static void test_peer(CUcontext primary)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}};
	CUmemAccessDesc peer = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
				CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUmemGenericAllocationHandle h;
	unsigned long long flags = 0;
	CUcontext ctx1;
	CUdevice dev1;
	CUdeviceptr va;
	int can = -1, n = 0;

	cuDeviceGetCount(&n);
	if (n < 2) {
		for (int i = 0; i < PEER_TESTS; i++)
			skip("peer access needs two emulated devices");
		return;
	}
	cuDeviceGet(&dev1, 1);
	cuDevicePrimaryCtxRetain(&ctx1, dev1);
	is_rc(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS, "cuDeviceCanAccessPeer");
	ok(can == 1, "devices 0 and 1 have a peer route");
	cuDeviceCanAccessPeer(&can, 0, 0);
	ok(can == 0, "a device is not its own peer");
	setenv("GPUCKPT_STANDIN_NO_PEER", "3-2,1-0", 1);
	cuDeviceCanAccessPeer(&can, 0, 1);
	ok(can == 0, "GPUCKPT_STANDIN_NO_PEER=3-2,1-0 cuts the route between 0 and 1");
	is_rc(cuCtxEnablePeerAccess(ctx1, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
	      "... and cuCtxEnablePeerAccess fails");
	cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0);
	cuMemCreate(&h, 2 * MiB, &prop, 0);
	cuMemMap(va, 2 * MiB, 0, h, 0);
	is_rc(cuMemSetAccess(va, 2 * MiB, &peer, 1), CUDA_ERROR_INVALID_DEVICE,
	      "... and so does cuMemSetAccess of device 1's memory for device 0");
	setenv("GPUCKPT_STANDIN_NO_PEER", "0+1", 1);
	is_rc(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_ERROR_INVALID_VALUE,
	      "a malformed GPUCKPT_STANDIN_NO_PEER is refused");
	unsetenv("GPUCKPT_STANDIN_NO_PEER");
	is_rc(cuMemSetAccess(va, 2 * MiB, &peer, 1), CUDA_SUCCESS,
	      "with the route, device 0 gets access to device 1's memory");
	cuMemGetAccess(&flags, &peer.location, va);
	is_int(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "cuMemGetAccess says so");
	is_rc(cuCtxEnablePeerAccess(ctx1, 0), CUDA_SUCCESS, "cuCtxEnablePeerAccess");
	is_rc(cuCtxEnablePeerAccess(ctx1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
	      "twice: already enabled");
	is_rc(cuCtxEnablePeerAccess(primary, 0), CUDA_ERROR_INVALID_DEVICE,
	      "to the current context's own device: refused");
	is_rc(cuCtxDisablePeerAccess(ctx1), CUDA_SUCCESS, "cuCtxDisablePeerAccess");
	is_rc(cuCtxDisablePeerAccess(ctx1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
	      "twice: not enabled");
	cuMemUnmap(va, 2 * MiB);
	cuMemRelease(h);
	cuMemAddressFree(va, 2 * MiB);
	cuDevicePrimaryCtxRelease(dev1);
}

static void test_pointer_attributes(CUcontext primary)
{
	CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					CU_POINTER_ATTRIBUTE_CONTEXT,
					CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
	unsigned long long id1 = 0, id2 = 0;
	CUdeviceptr a, b, m, start = 0;
	unsigned int type = 0;
	CUcontext ctx = NULL;
	size_t size = 0;
	bool managed = true;
	void *host, *hp = NULL, *data[3];
	int ord = 7, local;
	CUipcMemHandle ipc;

	cuMemAlloc(&a, 1000);
	cuMemAlloc(&b, 1000);
	cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 10);
	cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, a + 10);
	cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 10);
	cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 10);
	ok(type == CU_MEMORYTYPE_DEVICE && ctx == primary && start == a && size == 1000,
	   "device memory: type, context and range of an interior pointer");
	ok(a % 256 == 0, "allocations are 256-byte aligned");
	cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, a);
	cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, b);
	ok(id1 && id2 && id1 != id2, "buffer ids differ");
	cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, a);
	ok(!managed, "cuMemAlloc memory is not managed");
	is_rc(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, a),
	      CUDA_ERROR_INVALID_VALUE, "device memory has no host pointer");
	is_rc(cuIpcGetMemHandle(&ipc, a), CUDA_SUCCESS,
	      "a legacy IPC handle for cuMemAlloc memory");
	is_rc(cuIpcOpenMemHandle(&b, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
	      CUDA_ERROR_INVALID_CONTEXT, "a process does not open its own IPC handle");
	cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL);
	cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m);
	ok(managed, "managed memory is reported as managed");
	cuMemAllocHost(&host, 4096);
	cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)host);
	cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)host);
	ok(type == CU_MEMORYTYPE_HOST && hp == host, "page-locked host memory");
	is_rc(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local),
	      CUDA_ERROR_INVALID_VALUE, "an ordinary host pointer is unknown");
	data[0] = &type;
	data[1] = &ctx;
	data[2] = &ord;
	is_rc(cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)&local), CUDA_SUCCESS,
	      "cuPointerGetAttributes accepts an unknown pointer");
	ok(type == 0 && ctx == NULL && ord == -2, "... with empty values");
	cuMemFree(a);
	is_rc(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a),
	      CUDA_ERROR_INVALID_VALUE, "freed memory is unknown");
	cuMemFree(b);
	cuMemFree(m);
	cuMemFreeHost(host);
}

static void test_host_register(void)
{
	static char buf[8192];
	CUdeviceptr d = 0;

	is_rc(cuMemHostRegister(buf, sizeof(buf), 0), CUDA_SUCCESS, "cuMemHostRegister");
	is_rc(cuMemHostRegister(buf + 100, 100, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	      "registering part of it again is refused");
	cuMemHostGetDevicePointer(&d, buf, 0);
	ok(d == (CUdeviceptr)buf, "its device pointer is its address (unified addressing)");
	is_rc(cuMemHostUnregister(buf), CUDA_SUCCESS, "cuMemHostUnregister");
	is_rc(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
	      "unregistering it again is refused");
}

/* ---- modules, kernels, streams, events ---- */

static CUmodule mod;
static CUfunction vec_add, slow_fill, scale, peek, twice_plus;

static void test_modules(void)
{
	static const char not_elf[64] = "// a PTX file, say";
	const char *path = getenv("STANDIN_TEST_MODULE");
	CUmodule m2;
	CUfunction f, again;
	CUdeviceptr g = 0;
	size_t gsize = 0;
	char *image = NULL;
	struct stat st;
	int fd;

	ok(path != NULL, "STANDIN_TEST_MODULE names the test module");
	is_rc(cuModuleLoad(&mod, path ? path : "/nonexistent"), CUDA_SUCCESS, "cuModuleLoad");
	is_rc(cuModuleLoad(&m2, "/nonexistent/kernels.so"), CUDA_ERROR_FILE_NOT_FOUND,
	      "cuModuleLoad of a missing file");
	is_rc(cuModuleGetFunction(&vec_add, mod, "vec_add"), CUDA_SUCCESS, "cuModuleGetFunction");
	cuModuleGetFunction(&again, mod, "vec_add");
	ok(again == vec_add, "the same function handle for the same name");
	cuModuleGetFunction(&slow_fill, mod, "slow_fill");
	cuModuleGetFunction(&scale, mod, "scale");
	cuModuleGetFunction(&peek, mod, "peek");
	cuModuleGetFunction(&twice_plus, mod, "twice_plus");
	is_rc(cuModuleGetFunction(&f, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND,
	      "a missing kernel is not found");
	is_rc(cuModuleGetFunction(&f, mod, "not_a_kernel"), CUDA_ERROR_NOT_FOUND,
	      "a function without argument sizes is no kernel");
	is_rc(cuModuleGetGlobal(&g, &gsize, mod, "scale_factor"), CUDA_SUCCESS,
	      "cuModuleGetGlobal");
	is_int(gsize, 4 * sizeof(int), "a global's size comes from its symbol");
	fd = path ? open(path, O_RDONLY) : -1;
	if (fd >= 0 && fstat(fd, &st) == 0 && (image = malloc((size_t)st.st_size)) &&
	    read(fd, image, (size_t)st.st_size) == st.st_size) {
		is_rc(cuModuleLoadData(&m2, image), CUDA_SUCCESS,
		      "cuModuleLoadData of a shared object image");
		ok(cuModuleGetFunction(&f, m2, "vec_add") == CUDA_SUCCESS && f != vec_add,
		   "... is a module of its own");
		cuModuleUnload(m2);
		is_rc(cuModuleGetFunction(&f, m2, "vec_add"), CUDA_ERROR_INVALID_HANDLE,
		      "an unloaded module's handle is refused");
	} else {
		ok(0, "read %s", path ? path : "(null)");
		ok(0, "cuModuleLoadData (no image)");
		ok(0, "cuModuleLoadData (no image)");
	}
	if (fd >= 0)
		close(fd);
	free(image);
	is_rc(cuModuleLoadData(&m2, not_elf), CUDA_ERROR_INVALID_IMAGE,
	      "an image that is no shared object is refused");
}

static void test_kernels(void)
{
	enum { N = 1000 };
	float a[N], b[N], c[N];
	CUdeviceptr da, db, dc, dg;
	int n = N, ok_all = 1, three = 3, vals[4] = {1, 2, 3, 4};
	void *args[] = {&da, &db, &dc, &n};
	void *sargs[] = {&da, &n};
	void *extra[] = {CU_LAUNCH_PARAM_END};
	size_t gsize;

	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 2.0f * (float)i;
	}
	cuMemAlloc(&da, sizeof(a));
	cuMemAlloc(&db, sizeof(b));
	cuMemAlloc(&dc, sizeof(c));
	cuMemcpyHtoD(da, a, sizeof(a));
	cuMemcpyHtoD(db, b, sizeof(b));
	cuMemsetD32(dc, 0, N);
	is_rc(cuLaunchKernel(vec_add, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL),
	      CUDA_SUCCESS, "cuLaunchKernel vec_add");
	n = 5; /* argument values were copied at launch */
	cuMemcpyDtoH(c, dc, sizeof(c));
	for (int i = 0; i < N; i++)
		ok_all = ok_all && c[i] == 3.0f * (float)i;
	ok(ok_all, "vec_add computed c = a + b for all %d elements", N);
	is_rc(cuLaunchKernel(vec_add, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE, "a block of 2048 threads is refused");
	is_rc(cuLaunchKernel(vec_add, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE, "an empty grid is refused");
	is_rc(cuLaunchKernel(vec_add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra),
	      CUDA_ERROR_NOT_SUPPORTED, "arguments through 'extra' are not supported");
	is_rc(cuLaunchKernel((CUfunction)&n, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_HANDLE, "a made-up function handle is refused");
	/* The module global as device memory: set it, and a kernel sees it. */
	cuModuleGetGlobal(&dg, &gsize, mod, "scale_factor");
	cuMemcpyHtoD(dg, &three, sizeof(three));
	cuMemcpyHtoD(da, vals, sizeof(vals));
	n = 4;
	cuLaunchKernel(scale, 1, 1, 1, 1, 1, 1, 0, NULL, sargs, NULL);
	cuMemcpyDtoH(vals, da, sizeof(vals));
	ok(vals[0] == 3 && vals[3] == 12, "a kernel reads the global written through its pointer");
	cuMemFree(da);
	cuMemFree(db);
	cuMemFree(dc);
}

/*
 * Libraries and kernels, as the CUDA runtime (cudart 12 and later) loads
 * and launches its kernels: a CUkernel is a handle of its own, named by
 * cuKernelGetName and not by cuFuncGetName; cuKernelGetFunction gives its
 * CUfunction in the current context; a launch takes the CUkernel cast to a
 * CUfunction (the gpuckpt runtime must tell the two apart: state/kstop.c).
 */
static void test_libraries(CUcontext primary)
{
	const char *path = getenv("STANDIN_TEST_MODULE"), *name = NULL;
	CUresult (*launch_ptsz)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				unsigned, unsigned, CUstream, void **, void **) = NULL;
	CUdriverProcAddressQueryResult st;
	CUlibrary lib;
	CUkernel k, again;
	CUfunction f = NULL, f2 = NULL, fother = NULL;
	CUcontext other;
	CUdeviceptr d;
	int v = 7, n = 1, ms = 0, out = 0;
	void *args[] = {&d, &v, &n, &ms};

	is_rc(
	    cuLibraryLoadFromFile(&lib, path ? path : "/nonexistent", NULL, NULL, 0, NULL, NULL, 0),
	    CUDA_SUCCESS, "cuLibraryLoadFromFile");
	is_rc(cuLibraryGetKernel(&k, lib, "slow_fill"), CUDA_SUCCESS, "cuLibraryGetKernel");
	cuLibraryGetKernel(&again, lib, "slow_fill");
	ok(again == k, "the same CUkernel for the same name");
	is_rc(cuLibraryGetKernel(&again, lib, "not_a_kernel"), CUDA_ERROR_NOT_FOUND,
	      "a library's function without argument sizes is no kernel");
	ok(cuKernelGetName(&name, k) == CUDA_SUCCESS && name && !strcmp(name, "slow_fill"),
	   "cuKernelGetName names the CUkernel (slow_fill)");
	is_rc(cuFuncGetName(&name, (CUfunction)k), CUDA_ERROR_INVALID_HANDLE,
	      "cuFuncGetName of a CUkernel: CUDA_ERROR_INVALID_HANDLE, as driver 580 answers");
	is_rc(cuKernelGetFunction(&f, k), CUDA_SUCCESS, "cuKernelGetFunction");
	cuKernelGetFunction(&f2, k);
	ok(f && f == f2 && (void *)f != (void *)k && cuFuncGetName(&name, f) == CUDA_SUCCESS &&
	       !strcmp(name, "slow_fill"),
	   "... one CUfunction per context, not the CUkernel, named by cuFuncGetName");
	cuMemAlloc(&d, sizeof(int));
	cuMemsetD32(d, 0, 1);
	is_rc(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS,
	      "cuLaunchKernel takes a CUkernel for the CUfunction, as cudart passes it");
	cuMemcpyDtoH(&out, d, sizeof(out));
	is_int(out, 7, "... and runs the kernel");
	v = 8;
	cuGetProcAddress("cuLaunchKernel", (void **)&launch_ptsz, 12000,
			 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
	ok(launch_ptsz &&
	       launch_ptsz((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS &&
	       cuStreamSynchronize(CU_STREAM_PER_THREAD) == CUDA_SUCCESS &&
	       cuMemcpyDtoH(&out, d, sizeof(out)) == CUDA_SUCCESS && out == 8,
	   "so does cuLaunchKernel_ptsz");
	cuMemFree(d);
	if (cuCtxCreate(&other, NULL, 0, 1) == CUDA_SUCCESS) {
		ok(cuKernelGetFunction(&fother, k) == CUDA_SUCCESS && fother && fother != f,
		   "in another context, the CUkernel has another CUfunction");
		cuCtxDestroy(other);
	} else {
		ok(0, "cuCtxCreate on device 1");
	}
	cuCtxSetCurrent(primary);
	is_rc(cuLibraryUnload(lib), CUDA_SUCCESS, "cuLibraryUnload");
	is_rc(cuKernelGetName(&name, k), CUDA_ERROR_INVALID_HANDLE,
	      "an unloaded library's CUkernel is refused");
	is_rc(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_HANDLE, "... by a launch too");
	is_rc(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE,
	      "... and so is its CUfunction (the library's module went with it)");
	ok(cuGetProcAddress("cuKernelGetName", (void **)&launch_ptsz, 12030, 0, &st) ==
		   CUDA_SUCCESS &&
	       (void *)launch_ptsz == (void *)cuKernelGetName,
	   "cuGetProcAddress finds cuKernelGetName (CUDA 12.3)");
}

static CUresult launch_slow(CUstream s, CUdeviceptr p, int value, int n, int ms)
{
	void *args[] = {&p, &value, &n, &ms};

	return cuLaunchKernel(slow_fill, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static void test_stream_order(void)
{
	enum { N = 256 };
	CUstream s, s2, nb;
	CUevent start, end, e;
	CUdeviceptr d, d2, d3;
	int *pinned, host[N], all;
	float ms = 0;
	double t0;

	cuStreamCreate(&s, 0);
	cuStreamCreate(&s2, 0);
	cuMemAlloc(&d, N * sizeof(int));
	cuMemAlloc(&d2, N * sizeof(int));
	cuMemAlloc(&d3, N * sizeof(int));
	cuMemsetD32(d, 0, N);
	cuMemAllocHost((void **)&pinned, N * sizeof(int));
	memset(pinned, 0, N * sizeof(int));

	/* A slow kernel then an asynchronous copy: the copy waits for the kernel. */
	cuEventCreate(&start, 0);
	cuEventCreate(&end, 0);
	cuEventRecord(start, s);
	launch_slow(s, d, 7, N, 200);
	is_rc(cuMemcpyDtoHAsync(pinned, d, N * sizeof(int), s), CUDA_SUCCESS,
	      "an asynchronous copy after a slow kernel");
	cuEventRecord(end, s);
	is_rc(cuStreamQuery(s), CUDA_ERROR_NOT_READY, "the stream is busy");
	is_rc(cuEventQuery(end), CUDA_ERROR_NOT_READY, "the event is not reached yet");
	ok(pinned[0] == 0, "the copy has not happened yet");
	is_rc(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY,
	      "no elapsed time before both events completed");
	is_rc(cuEventSynchronize(end), CUDA_SUCCESS, "cuEventSynchronize");
	is_rc(cuEventQuery(end), CUDA_SUCCESS, "the event is reached");
	all = 1;
	for (int i = 0; i < N; i++)
		all = all && pinned[i] == 7;
	ok(all, "the copy saw what the kernel wrote");
	cuEventElapsedTime(&ms, start, end);
	ok(ms >= 150.0f && ms < 5000.0f, "elapsed time between the events: %.1f ms", (double)ms);
	is_rc(cuStreamQuery(s), CUDA_SUCCESS, "the stream is idle");

	/* Across streams: s2 waits for an event of s, as recorded at the time of the wait. */
	cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
	launch_slow(s, d, 5, N, 200);
	cuEventRecord(e, s);
	is_rc(cuStreamWaitEvent(s2, e, 0), CUDA_SUCCESS, "cuStreamWaitEvent");
	cuEventRecord(e, s2); /* re-recording must not change the wait above */
	cuMemcpyDtoDAsync(d2, d, N * sizeof(int), s2);
	cuStreamSynchronize(s2);
	cuMemcpyDtoH(host, d2, sizeof(host));
	ok(host[0] == 5 && host[N - 1] == 5, "the copy on the other stream waited for the kernel");
	is_rc(cuEventElapsedTime(&ms, e, e), CUDA_ERROR_INVALID_HANDLE,
	      "no elapsed time for an event without timing");

	/* The legacy default stream waits for the blocking streams' earlier work. */
	launch_slow(s, d, 9, N, 200);
	cuMemcpyDtoH(host, d, sizeof(host));
	ok(host[0] == 9, "a synchronous copy on the NULL stream waited for a blocking stream");
	/* ... and blocking streams wait for it. */
	launch_slow(NULL, d, 11, N, 200);
	cuMemcpyDtoDAsync(d3, d, N * sizeof(int), s2);
	cuStreamSynchronize(s2);
	cuMemcpyDtoH(host, d3, sizeof(host));
	ok(host[0] == 11, "a blocking stream waited for the NULL stream");
	/* A non-blocking stream is exempt both ways. */
	cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING);
	launch_slow(nb, d2, 1, N, 800);
	t0 = now_ms();
	cuMemcpyDtoH(host, d3, sizeof(host));
	ok(now_ms() - t0 < 600 && cuStreamQuery(nb) == CUDA_ERROR_NOT_READY,
	   "the NULL stream does not wait for a non-blocking stream");
	is_rc(cuStreamDestroy(nb), CUDA_SUCCESS, "cuStreamDestroy with work queued");
	is_rc(cuStreamQuery(nb), CUDA_ERROR_INVALID_HANDLE,
	      "a destroyed stream's handle is refused");
	cuCtxSynchronize();
	cuMemcpyDtoH(host, d2, sizeof(host));
	ok(host[0] == 1, "the destroyed stream's queued work ran");

	is_rc(cuStreamSynchronize((CUstream)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE,
	      "a made-up stream handle is refused");
	is_rc(cuEventQuery((CUevent)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE,
	      "a made-up event handle is refused");
	cuEventDestroy(start);
	cuEventDestroy(end);
	cuEventDestroy(e);
	cuStreamDestroy(s);
	cuStreamDestroy(s2);
	cuMemFree(d);
	cuMemFree(d2);
	cuMemFree(d3);
	cuMemFreeHost(pinned);
}

static void test_stream_ordered_alloc(void)
{
	CUmemoryPool pool, pool2 = NULL;
	cuuint64_t used = 0;
	CUdeviceptr p;
	CUstream s;
	unsigned char host[4096];
	unsigned int type;

	cuStreamCreate(&s, 0);
	cuDeviceGetDefaultMemPool(&pool, 0);
	is_rc(cuMemAllocAsync(&p, 4096, s), CUDA_SUCCESS, "cuMemAllocAsync");
	cuPointerGetAttribute(&pool2, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p);
	ok(pool2 == pool, "it comes from the device's default pool");
	cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
	ok(used == 4096, "the pool counts it (%llu bytes)", (unsigned long long)used);
	launch_slow(s, p, 0x01010101, 1024, 100);
	cuMemsetD8Async(p, 0xab, 4096, s);
	cuMemcpyDtoHAsync(host, p, sizeof(host), s); /* pageable: returns when done */
	ok(host[0] == 0xab && host[4095] == 0xab,
	   "a copy into pageable memory returns with the data");
	is_rc(cuMemFreeAsync(p, s), CUDA_SUCCESS, "cuMemFreeAsync");
	is_rc(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
	      CUDA_ERROR_INVALID_VALUE, "the pointer is invalid for later work at once");
	cuStreamSynchronize(s);
	cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
	is_int(used, 0, "the memory went back when the stream reached the free");
	is_rc(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE, "a second cuMemFreeAsync is refused");
	cuStreamDestroy(s);
}

typedef CUresult (*sync_fn)(CUstream);

static void test_proc_address(void)
{
	CUdriverProcAddressQueryResult st;
	Dl_info info;
	void *fn = NULL, *self;
	struct {
		const char *name;
		int version;
		cuuint64_t flags;
		const char *want;
	} cases[] = {
	    {"cuMemAlloc", 12000, 0, "cuMemAlloc_v2"},
	    {"cuCtxCreate", 13000, 0, "cuCtxCreate_v4"},
	    {"cuCtxCreate", 12000, 0, "cuCtxCreate_v3"},
	    {"cuCtxCreate", 4000, 0, "cuCtxCreate_v2"},
	    {"cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	     "cuMemcpyHtoD_v2_ptds"},
	    {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	     "cuLaunchKernel_ptsz"},
	    {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuLaunchKernel"},
	    {"cuMemAlloc", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2"},
	    {"cuEventElapsedTime", 12000, 0, "cuEventElapsedTime"},
	    {"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"},
	    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
	};
	sync_fn ptsz_sync;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CUresult rc =
		    cuGetProcAddress(cases[i].name, &fn, cases[i].version, cases[i].flags, &st);
		const char *got = rc == CUDA_SUCCESS && dladdr(fn, &info) ? info.dli_sname : NULL;

		ok(got && strcmp(got, cases[i].want) == 0 && st == CU_GET_PROC_ADDRESS_SUCCESS,
		   "cuGetProcAddress(%s, %d, %#llx) -> %s", cases[i].name, cases[i].version,
		   (unsigned long long)cases[i].flags, got ? got : errname(rc));
	}
	is_rc(cuGetProcAddress("cuMemAllocAsync", &fn, 11010, 0, &st), CUDA_ERROR_NOT_FOUND,
	      "a version before the function existed");
	is_int(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "... is 'version not sufficient'");
	is_rc(cuGetProcAddress("cuNoSuchFunction", &fn, 12000, 0, &st), CUDA_ERROR_NOT_FOUND,
	      "an unknown name is not found");
	ok(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && fn == NULL,
	   "... with status 'symbol not found' and no pointer");
	is_rc(cuGetProcAddress("cuMemAlloc", &fn, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE,
	      "a version above the driver's is refused");
	is_rc(cuGetExportTable((const void **)&fn, NULL), CUDA_ERROR_NOT_SUPPORTED,
	      "cuGetExportTable is not supported");
	/* The per-thread variants exist and behave. */
	cuGetProcAddress("cuStreamSynchronize", &fn, 12000,
			 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
	*(void **)&ptsz_sync = fn;
	is_rc(fn ? ptsz_sync(NULL) : CUDA_ERROR_NOT_FOUND, CUDA_SUCCESS,
	      "cuStreamSynchronize_ptsz on the per-thread stream");
	/* Only cu* is exported. */
	self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	ok(self && dlsym(self, "cuInit") && !dlsym(self, "si_check_init") &&
	       !dlsym(self, "si_stream_submit"),
	   "the library exports cu* and nothing of its own");
	if (self)
		dlclose(self);
}

struct ptds_result {
	CUcontext ctx;
	CUresult rc;
	int value;
};

static void *ptds_thread(void *arg)
{
	struct ptds_result *r = arg;
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUdriverProcAddressQueryResult st;
	CUdeviceptr d;
	int v = 42, n = 1, ms = 50;
	void *args[] = {&d, &v, &n, &ms};

	cuCtxSetCurrent(r->ctx);
	cuGetProcAddress("cuLaunchKernel", (void **)&launch, 12000,
			 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
	cuGetProcAddress("cuMemcpyDtoH", (void **)&dtoh, 12000,
			 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
	cuMemAlloc(&d, sizeof(int));
	cuMemsetD32(d, 0, 1);
	r->rc = launch(slow_fill, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
	dtoh(&r->value, d, sizeof(int)); /* same per-thread stream: after the kernel */
	cuMemFree(d);
	return NULL;
}

static void test_per_thread_stream(CUcontext primary)
{
	struct ptds_result r = {.ctx = primary, .value = 0};
	pthread_t t;

	pthread_create(&t, NULL, ptds_thread, &r);
	pthread_join(t, NULL);
	is_rc(r.rc, CUDA_SUCCESS, "cuLaunchKernel_ptsz on a thread's per-thread stream");
	is_int(r.value, 42, "cuMemcpyDtoH_v2_ptds on that stream saw the kernel's result");
}

/*
 * A kernel reading memory no device may read faults, as on a GPU: its
 * context gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS (every later call there
 * returns it; questions about the context itself are still answered), and
 * other contexts go on.
 */
static void test_kernel_fault(CUcontext primary)
{
	CUcontext broken;
	CUdevice dev;
	CUdeviceptr d = 0, out = 0, more = 0;
	CUstream s;
	CUfunction f;
	CUmodule m;
	void *host = NULL;
	long offset = 3;
	int vals[8] = {0, 1, 2, 3, 4, 5, 6, 7}, got = -1;
	void *args[] = {&d, &offset, &out};

	cuDeviceGet(&dev, 0);
	cuCtxCreate(&broken, NULL, 0, dev);
	cuModuleLoad(&m, getenv("STANDIN_TEST_MODULE"));
	cuModuleGetFunction(&f, m, "peek");
	cuMemAlloc(&d, sizeof(vals));
	cuMemAlloc(&out, sizeof(int));
	cuMemcpyHtoD(d, vals, sizeof(vals));
	cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
	cuMemcpyDtoH(&got, out, sizeof(got));
	ok(got == 3, "a kernel may read inside an allocation (read %d)", got);
	offset = -(1L << 20); /* 4 MiB before it: nothing there */
	is_rc(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS,
	      "a launch that will fault is accepted (it runs later)");
	is_rc(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS,
	      "reading outside device memory faults: cuCtxSynchronize returns "
	      "CUDA_ERROR_ILLEGAL_ADDRESS");
	is_rc(cuMemAlloc(&more, 64), CUDA_ERROR_ILLEGAL_ADDRESS, "the error is sticky: cuMemAlloc");
	ok(cuStreamCreate(&s, 0) == CUDA_ERROR_ILLEGAL_ADDRESS &&
	       cuMemHostAlloc(&host, 4096, 0) == CUDA_ERROR_ILLEGAL_ADDRESS &&
	       cuMemcpyDtoH(&got, d, sizeof(got)) == CUDA_ERROR_ILLEGAL_ADDRESS,
	   "... cuStreamCreate, cuMemHostAlloc, cuMemcpyDtoH");
	offset = 0;
	cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
	is_rc(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS, "... and it stays");
	is_rc(cuCtxGetDevice(&dev), CUDA_SUCCESS, "the broken context still says its device");
	cuCtxSetCurrent(primary);
	is_rc(cuMemAlloc(&more, 64), CUDA_SUCCESS, "another context goes on");
	cuMemFree(more);
	is_rc(cuCtxDestroy(broken), CUDA_SUCCESS, "the broken context can be destroyed");
	cuCtxSetCurrent(primary);
}

/*
 * The importing side of test_ipc, in a process of its own: opens the handle
 * given in hex, checks the exporter's pattern, writes its own, and says on
 * stdout what it saw, one word per check.
 */
static int ipc_child_main(const char *hex)
{
	CUipcMemHandle h;
	CUcontext ctx;
	CUdevice dev;
	CUdeviceptr d = 0, base = 0;
	size_t size = 0;
	unsigned char buf[8192];
	bool same = true;

	for (size_t i = 0; i < sizeof(h.reserved); i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return 2;
		h.reserved[i] = (char)v;
	}
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx))
		return 3;
	if (cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS) {
		printf("open-failed\n");
		return 0;
	}
	printf("opened\n");
	if (!cuMemGetAddressRange(&base, &size, d + 100) && base == d && size == sizeof(buf))
		printf("range\n");
	if (!cuMemcpyDtoH(buf, d, sizeof(buf))) {
		for (size_t i = 0; i < sizeof(buf); i++)
			same = same && buf[i] == (unsigned char)(i * 7 + 1);
		if (same)
			printf("read\n");
	}
	if (!cuMemsetD8(d + 4096, 0xab, 4096))
		printf("wrote\n");
	if (!cuIpcCloseMemHandle(d))
		printf("closed\n");
	if (cuIpcCloseMemHandle(d) == CUDA_ERROR_INVALID_VALUE)
		printf("closed-once\n");
	fflush(stdout);
	return 0;
}

#define IPC_TESTS 9

/* Legacy IPC between two processes: an importer sees and changes the exporter's memory. */
static void test_ipc(void)
{
	unsigned char buf[8192], back[8192];
	char hex[2 * sizeof(CUipcMemHandle) + 1], out[512] = "";
	CUipcMemHandle h, bad;
	CUdeviceptr d, other;
	size_t len = 0;
	bool ok_after = true;
	int fds[2], status = -1;
	pid_t pid;
	ssize_t r;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	cuMemAlloc(&d, sizeof(buf));
	cuMemcpyHtoD(d, buf, sizeof(buf));
	is_rc(cuIpcGetMemHandle(&h, d), CUDA_SUCCESS, "ipc: export cuMemAlloc memory");
	cuMemcpyDtoH(back, d, sizeof(back));
	ok(!memcmp(buf, back, sizeof(buf)), "ipc: exporting keeps the contents");
	memset(&bad, 0, sizeof(bad));
	is_rc(cuIpcOpenMemHandle(&other, bad, 0), CUDA_ERROR_INVALID_VALUE,
	      "ipc: a handle that is not one is refused");
	for (size_t i = 0; i < sizeof(h.reserved); i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)h.reserved[i]);
	if (pipe(fds) == 0 && (pid = fork()) >= 0) {
		if (pid == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			close(fds[1]);
			execl("/proc/self/exe", "test-standin", "--ipc-child", hex, (char *)NULL);
			_exit(127);
		}
		close(fds[1]);
		while (len < sizeof(out) - 1 &&
		       (r = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
			len += (size_t)r;
		out[len] = '\0';
		close(fds[0]);
		waitpid(pid, &status, 0);
	}
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(out, "opened\n"),
	   "ipc: another process opens the handle");
	if (!strstr(out, "opened\n"))
		printf("# importer said: %s (status %d)\n", out, status);
	ok(strstr(out, "range\n") != NULL, "ipc: the opened range is the exported allocation");
	ok(strstr(out, "read\n") != NULL, "ipc: the importer reads the exporter's data");
	ok(strstr(out, "wrote\n") && strstr(out, "closed\n") && strstr(out, "closed-once\n"),
	   "ipc: the importer writes, closes once, and a second close is refused");
	cuMemcpyDtoH(back, d, sizeof(back));
	for (size_t i = 0; i < sizeof(back); i++)
		ok_after = ok_after && back[i] == (i >= 4096 ? 0xab : buf[i]);
	ok(ok_after, "ipc: the exporter sees the importer's write");
	is_rc(cuMemFree(d), CUDA_SUCCESS, "ipc: exported memory is freed as usual");
}

/* ---- stream capture and graphs ---- */

struct end_capture_call {
	CUstream stream;
	CUgraph graph;
	CUresult rc;
};

static void *end_capture_thread(void *arg)
{
	struct end_capture_call *c = arg;

	c->rc = cuStreamEndCapture(c->stream, &c->graph);
	return NULL;
}

/* cuStreamEndCapture(stream) as another thread calls it. */
static CUresult end_capture_elsewhere(CUstream stream, CUgraph *graph)
{
	struct end_capture_call c = {.stream = stream, .graph = NULL, .rc = CUDA_ERROR_UNKNOWN};
	pthread_t t;

	if (pthread_create(&t, NULL, end_capture_thread, &c))
		return CUDA_ERROR_UNKNOWN;
	pthread_join(t, NULL);
	*graph = c.graph;
	return c.rc;
}

static CUstreamCaptureStatus capture_status(CUstream s)
{
	CUstreamCaptureStatus st = (CUstreamCaptureStatus)-1;

	cuStreamIsCapturing(s, &st);
	return st;
}

/* Each launch recorded, not run; the graph replays them in order. */
static void test_capture_graph(void)
{
	CUstream s;
	CUgraph g = NULL, g2;
	CUgraphExec x = NULL;
	CUdeviceptr d, flag;
	int n = 4, v = 1, host[4], all;
	unsigned char fb = 0;
	void *args[] = {&d, &v, &n};

	cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	cuMemAlloc(&d, sizeof(host));
	cuMemAlloc(&flag, 1);
	cuMemsetD32(d, 5, 4);
	cuMemsetD8(flag, 0, 1);
	is_rc(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
	      CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "capture: the legacy stream cannot capture");
	is_rc(cuStreamBeginCapture(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE,
	      "capture: an unknown mode is refused");
	is_int(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE,
	       "capture: a new stream captures not");
	is_rc(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS,
	      "capture: cuStreamBeginCapture_v2 on a stream");
	is_int(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE, "capture: ... is active");
	is_rc(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE,
	      "capture: beginning again on a capturing stream is an illegal state");
	is_rc(cuLaunchKernel(twice_plus, 1, 1, 1, 4, 1, 1, 0, s, args, NULL), CUDA_SUCCESS,
	      "capture: a launch into the capture");
	v = 2; /* argument values are copied when recorded */
	cuLaunchKernel(twice_plus, 1, 1, 1, 4, 1, 1, 0, s, args, NULL);
	is_rc(cuMemsetD8Async(flag, 0x11, 1, s), CUDA_SUCCESS, "capture: an async memset into it");
	usleep(20000);
	cuMemcpyDtoH(host, d, sizeof(host));
	cuMemcpyDtoH(&fb, flag, 1);
	ok(host[0] == 5 && fb == 0, "capture: nothing captured has run (%d, %#x)", host[0], fb);
	is_rc(end_capture_elsewhere(s, &g2), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
	      "capture: a global capture ended by another thread: wrong thread");
	is_int(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE, "capture: ... and it goes on");
	is_rc(cuStreamEndCapture(s, &g), CUDA_SUCCESS, "capture: cuStreamEndCapture");
	ok(g != NULL, "capture: ... gives a graph");
	is_int(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE,
	       "capture: ... and the stream is free");
	is_rc(cuStreamEndCapture(s, &g2), CUDA_ERROR_ILLEGAL_STATE,
	      "capture: ending where none is open is an illegal state");
	is_rc(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS,
	      "capture: cuGraphInstantiateWithFlags");
	is_rc(cuGraphLaunch(x, s), CUDA_SUCCESS, "capture: cuGraphLaunch");
	is_rc(cuStreamSynchronize(s), CUDA_SUCCESS, "capture: ... then synchronise the stream");
	cuMemcpyDtoH(host, d, sizeof(host));
	cuMemcpyDtoH(&fb, flag, 1);
	all = 1;
	for (int i = 0; i < 4; i++)
		all = all && host[i] == (5 * 2 + 1) * 2 + 2;
	ok(all && fb == 0x11, "capture: the graph ran the launches in order, and the memset");
	is_rc(cuGraphDestroy(g), CUDA_SUCCESS, "capture: cuGraphDestroy");
	is_rc(cuGraphLaunch(x, s), CUDA_SUCCESS,
	      "capture: an instantiated graph outlives its graph");
	cuStreamSynchronize(s);
	cuMemcpyDtoH(host, d, sizeof(host));
	is_int(host[3], (24 * 2 + 1) * 2 + 2, "capture: ... and runs again");
	is_rc(cuGraphExecDestroy(x), CUDA_SUCCESS, "capture: cuGraphExecDestroy");
	is_rc(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_HANDLE,
	      "capture: a destroyed graph exec is refused");
	is_rc(cuGraphDestroy(g), CUDA_ERROR_INVALID_HANDLE, "capture: so is a destroyed graph");
	is_rc(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_ERROR_INVALID_HANDLE,
	      "capture: ... also to instantiate");
	cuMemFree(d);
	cuMemFree(flag);
	cuStreamDestroy(s);
}

/*
 * What a checkpoint must not do: synchronise the context (or a capturing
 * stream) while a capture is open. The driver refuses and the capture is
 * lost, which is what broke XLA's command buffers on an H200.
 */
static void test_capture_invalidated(void)
{
	CUstream s, t, blocking;
	CUgraph g = (CUgraph)&g;
	CUdeviceptr d;
	CUstreamCaptureStatus st;
	CUevent e;
	int n = 1, v = 1;
	void *args[] = {&d, &v, &n};

	cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	cuStreamCreate(&t, CU_STREAM_NON_BLOCKING);
	cuStreamCreate(&blocking, 0);
	cuMemAlloc(&d, sizeof(int));
	cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
	cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_RELAXED);
	cuLaunchKernel(twice_plus, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
	is_rc(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	      "capture: cuCtxSynchronize during a capture is refused");
	ok(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED &&
	       capture_status(t) == CU_STREAM_CAPTURE_STATUS_INVALIDATED,
	   "capture: ... and invalidates every capture of the context (global and relaxed)");
	is_rc(cuLaunchKernel(twice_plus, 1, 1, 1, 1, 1, 1, 0, s, args, NULL),
	      CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "capture: a launch into it is refused");
	is_rc(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
	      "capture: cuStreamEndCapture of an invalidated capture");
	ok(g == NULL, "capture: ... gives no graph");
	is_int(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE, "capture: ... and ends it");
	is_rc(end_capture_elsewhere(t, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
	      "capture: a relaxed capture may be ended by any thread");
	is_rc(cuCtxSynchronize(), CUDA_SUCCESS, "capture: with none open, cuCtxSynchronize works");

	cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL);
	is_rc(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	      "capture: cuStreamSynchronize of a capturing stream is refused");
	ok(capture_status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED &&
	       capture_status(t) == CU_STREAM_CAPTURE_STATUS_ACTIVE,
	   "capture: ... and invalidates its capture only");
	is_rc(end_capture_elsewhere(s, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
	      "capture: a thread-local capture ended by another thread: wrong thread");
	cuStreamEndCapture(s, &g);
	cuEventCreate(&e, 0);
	is_rc(cuEventRecord(e, t), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	      "capture: work the stand-in does not record (an event) is refused");
	is_int(capture_status(t), CU_STREAM_CAPTURE_STATUS_INVALIDATED,
	       "capture: ... and invalidates the capture");
	cuStreamEndCapture(t, &g);
	cuEventDestroy(e);

	cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL);
	is_rc(cuStreamIsCapturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
	      "capture: the legacy stream asked while a blocking stream captures");
	cuStreamEndCapture(blocking, &g);
	is_rc(cuGraphDestroy(g), CUDA_SUCCESS, "capture: an empty capture gives an empty graph");
	is_rc(cuStreamIsCapturing(NULL, &st), CUDA_SUCCESS,
	      "capture: ... then the legacy stream answers");
	cuMemFree(d);
	cuStreamDestroy(s);
	cuStreamDestroy(t);
	cuStreamDestroy(blocking);
}

typedef CUresult (*begin_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph *);
typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus *);

/* The per-thread stream captures too (_ptsz), found through cuGetProcAddress. */
static void test_capture_ptsz(void)
{
	CUdriverProcAddressQueryResult q;
	begin_fn begin = NULL;
	end_fn end = NULL;
	is_capturing_fn is = NULL;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUgraph g = NULL;
	Dl_info info;
	const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

	cuGetProcAddress("cuStreamBeginCapture", (void **)&begin, 12000, pt, &q);
	cuGetProcAddress("cuStreamEndCapture", (void **)&end, 12000, pt, &q);
	cuGetProcAddress("cuStreamIsCapturing", (void **)&is, 12000, pt, &q);
	ok(begin && dladdr((void *)begin, &info) &&
	       strcmp(info.dli_sname, "cuStreamBeginCapture_v2_ptsz") == 0,
	   "capture: cuGetProcAddress(cuStreamBeginCapture, per-thread) -> _v2_ptsz");
	if (!begin || !end || !is) {
		ok(0, "capture: the _ptsz entry points are found");
		ok(0, "capture: the _ptsz entry points are found");
		return;
	}
	is_rc(begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS,
	      "capture: the per-thread stream begins a capture (_ptsz, NULL stream)");
	ok(is(NULL, &st) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
	       end(NULL, &g) == CUDA_SUCCESS && g && cuGraphDestroy(g) == CUDA_SUCCESS,
	   "capture: ... is capturing and ends with a graph");
}

static void test_capture(void)
{
	test_capture_graph();
	test_capture_invalidated();
	test_capture_ptsz();
}

int main(int argc, char **argv)
{
	CUcontext primary;
	CUdevice dev0;

	if (argc > 1 && strcmp(argv[1], "--probe") == 0)
		return probe_main();
	if (argc > 2 && strcmp(argv[1], "--ipc-child") == 0)
		return ipc_child_main(argv[2]);
	plan(265 + PEER_TESTS + IPC_TESTS);
	test_before_init();
	test_visible_devices();
	test_configuration();
	test_devices();
	test_no_context();
	cuDeviceGet(&dev0, 0);
	is_rc(cuDevicePrimaryCtxRetain(&primary, dev0), CUDA_SUCCESS,
	      "retain device 0's primary context");
	cuCtxSetCurrent(primary);
	test_contexts(primary);
	test_capacity();
	test_vmm();
	test_peer(primary);
	test_pointer_attributes(primary);
	test_ipc();
	test_host_register();
	test_modules();
	test_kernels();
	test_libraries(primary);
	test_stream_order();
	test_stream_ordered_alloc();
	test_proc_address();
	test_per_thread_stream(primary);
	test_capture();
	test_kernel_fault(primary);
	is_rc(cuModuleUnload(mod), CUDA_SUCCESS, "cuModuleUnload");
	is_rc(cuDevicePrimaryCtxRelease(dev0), CUDA_SUCCESS, "release the primary context");
	is_rc(cuDevicePrimaryCtxRelease(dev0), CUDA_ERROR_INVALID_CONTEXT,
	      "releasing it once more is refused");
	return done_testing();
}
