/*
 * init.c - cuInit, cuDriverGetVersion, and the emulated machine read from the
 * environment once: GPUCKPT_STANDIN_GPUS, GPUCKPT_STANDIN_MEMORY,
 * GPUCKPT_STANDIN_CC and CUDA_VISIBLE_DEVICES (see README.md).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "standin.h"

struct si_state si;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

struct machine {
	int nphys;
	size_t memory[SI_MAX_DEVICES];
	int cc_major, cc_minor;
	CUuuid uuid[SI_MAX_DEVICES];
};

void si_uuid_format(const CUuuid *uuid, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)uuid->bytes;

	snprintf(buf, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/* "512M", "1G", "1GiB", "65536": bytes, or 0 if malformed. */
static unsigned long long parse_size(const char *s, const char **end)
{
	unsigned long long v, mult = 1;
	char *e;

	if (!isdigit((unsigned char)*s))
		return 0;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno)
		return 0;
	switch (toupper((unsigned char)*e)) {
	case 'K':
		mult = 1ULL << 10;
		break;
	case 'M':
		mult = 1ULL << 20;
		break;
	case 'G':
		mult = 1ULL << 30;
		break;
	case 'T':
		mult = 1ULL << 40;
		break;
	}
	if (mult != 1) {
		e++;
		if (e[0] == 'i' && e[1] == 'B')
			e += 2;
		else if (e[0] == 'B')
			e++;
	}
	*end = e;
	if (v > ~0ULL / mult)
		return 0;
	return v * mult;
}

static int parse_gpus(const char *v, int *n)
{
	char *e;
	long x;

	errno = 0;
	x = strtol(v, &e, 10);
	if (errno || e == v || *e || x < 1 || x > SI_MAX_DEVICES) {
		si_msg("cuInit: GPUCKPT_STANDIN_GPUS=%s: want a device count from 1 to %d", v,
		       SI_MAX_DEVICES);
		return -EINVAL;
	}
	*n = (int)x;
	return 0;
}

/* One size for every device, or one per physical device. */
static int parse_memory(const char *v, bool count_given, struct machine *m)
{
	size_t sizes[SI_MAX_DEVICES];
	const char *p = v;
	int n = 0;

	for (;;) {
		const char *end;
		unsigned long long sz = parse_size(p, &end);

		if (!sz || (*end && *end != ',')) {
			si_msg("cuInit: GPUCKPT_STANDIN_MEMORY=%s: entry %d is not a size such as "
			       "512M or 1G",
			       v, n + 1);
			return -EINVAL;
		}
		if (n == SI_MAX_DEVICES) {
			si_msg("cuInit: GPUCKPT_STANDIN_MEMORY=%s: more than %d devices", v,
			       SI_MAX_DEVICES);
			return -EINVAL;
		}
		sizes[n++] = sz;
		if (!*end)
			break;
		p = end + 1;
	}
	if (n == 1) {
		for (int i = 0; i < SI_MAX_DEVICES; i++)
			m->memory[i] = sizes[0];
		return 0;
	}
	if (count_given && n != m->nphys) {
		si_msg("cuInit: GPUCKPT_STANDIN_MEMORY=%s lists %d devices but "
		       "GPUCKPT_STANDIN_GPUS is %d",
		       v, n, m->nphys);
		return -EINVAL;
	}
	m->nphys = n;
	memcpy(m->memory, sizes, sizeof(sizes[0]) * (size_t)n);
	return 0;
}

static int parse_cc(const char *v, struct machine *m)
{
	int maj, min, len = 0;

	if (sscanf(v, "%2d.%1d%n", &maj, &min, &len) != 2 || v[len] || maj < 1 || min < 0) {
		si_msg("cuInit: GPUCKPT_STANDIN_CC=%s: want a compute capability such as 8.0", v);
		return -EINVAL;
	}
	m->cc_major = maj;
	m->cc_minor = min;
	return 0;
}

/* A CUDA_VISIBLE_DEVICES entry: an index, or a UUID ("GPU-...", a unique prefix will do). */
static int parse_visible_entry(const char *tok, size_t len, const struct machine *m)
{
	char buf[64], id[48];
	int found = -1;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, tok, len);
	buf[len] = '\0';
	if (isdigit((unsigned char)buf[0])) {
		char *e;
		long x = strtol(buf, &e, 10);

		return *e || x >= m->nphys ? -1 : (int)x;
	}
	if (len < 5 || strncasecmp(buf, "GPU-", 4) != 0)
		return -1; /* MIG-... and anything else: not a device here */
	for (int i = 0; i < m->nphys; i++) {
		si_uuid_format(&m->uuid[i], id, sizeof(id));
		if (strncasecmp(id, buf, len) == 0) {
			if (found >= 0)
				return -1; /* ambiguous prefix */
			found = i;
		}
	}
	return found;
}

/*
 * Like the real driver: the list ends at the first entry that names no device
 * (or one already listed); a set but empty variable hides every device.
 */
static int parse_visible(const char *v, const struct machine *m, int *phys)
{
	bool seen[SI_MAX_DEVICES] = {false};
	const char *p = v;
	int n = 0;

	while (*p) {
		const char *start, *end, *comma = strchr(p, ',');
		int idx;

		start = p;
		end = comma ? comma : p + strlen(p);
		while (start < end && isspace((unsigned char)*start))
			start++;
		while (end > start && isspace((unsigned char)end[-1]))
			end--;
		idx = parse_visible_entry(start, (size_t)(end - start), m);
		if (idx < 0 || seen[idx])
			break;
		seen[idx] = true;
		phys[n++] = idx;
		if (!comma)
			break;
		p = comma + 1;
	}
	return n;
}

static CUresult read_machine(struct machine *m, int *phys, int *nvis)
{
	const char *gpus = getenv("GPUCKPT_STANDIN_GPUS");
	const char *mem = getenv("GPUCKPT_STANDIN_MEMORY");
	const char *cc = getenv("GPUCKPT_STANDIN_CC");
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");

	m->nphys = SI_DEFAULT_DEVICES;
	m->cc_major = 9;
	m->cc_minor = 0;
	for (int i = 0; i < SI_MAX_DEVICES; i++)
		m->memory[i] = SI_DEFAULT_MEMORY;
	if (gpus && parse_gpus(gpus, &m->nphys))
		return CUDA_ERROR_INVALID_VALUE;
	if (mem && parse_memory(mem, gpus != NULL, m))
		return CUDA_ERROR_INVALID_VALUE;
	if (cc && parse_cc(cc, m))
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < m->nphys; i++) {
		unsigned char *b = (unsigned char *)m->uuid[i].bytes;

		memset(b, 0, sizeof(m->uuid[i].bytes));
		b[0] = 0x5a;
		b[1] = 0xf0;
		b[2] = 0x57;
		b[3] = 0xa1;
		b[4] = (unsigned char)i;
		b[15] = (unsigned char)i;
	}
	if (visible) {
		*nvis = parse_visible(visible, m, phys);
	} else {
		*nvis = m->nphys;
		for (int i = 0; i < m->nphys; i++)
			phys[i] = i;
	}
	return *nvis ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

static void do_init(void)
{
	struct machine m;
	int phys[SI_MAX_DEVICES];
	int nvis = 0;

	si.init_rc = read_machine(&m, phys, &nvis);
	if (si.init_rc != CUDA_SUCCESS)
		return;
	si.ndev = nvis;
	for (int d = 0; d < nvis; d++) {
		struct si_device *dev = &si.dev[d];
		int p = phys[d];

		dev->phys = p;
		/* GPUCKPT_STANDIN_NAME: one name for every device, as a node of
		 * one model shows them (the shepherd restores only onto a GPU of
		 * the same name). Read at the first cuInit, like the others. */
		if (getenv("GPUCKPT_STANDIN_NAME") && getenv("GPUCKPT_STANDIN_NAME")[0])
			snprintf(dev->name, sizeof(dev->name), "%s", getenv("GPUCKPT_STANDIN_NAME"));
		else
			snprintf(dev->name, sizeof(dev->name), "gpuckpt stand-in GPU %d (host memory)",
				 p);
		dev->uuid = m.uuid[p];
		dev->total = m.memory[p];
		atomic_init(&dev->used, 0);
		dev->cc_major = m.cc_major;
		dev->cc_minor = m.cc_minor;
		dev->pci_bus = 0x10 + p;
	}
	si_ctx_init_primaries();
	atomic_store(&si.ready, true);
}

CUresult cuInit(unsigned int Flags)
{
	if (Flags != 0)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "flags=%u", Flags);
	pthread_once(&init_once, do_init);
	SI_RETF(si.init_rc, "devices=%d", si.ndev);
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	*driverVersion = SI_DRIVER_VERSION;
	SI_RETF(CUDA_SUCCESS, "%d", SI_DRIVER_VERSION);
}

CUresult si_check_init(void)
{
	return atomic_load(&si.ready) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult si_check_device(CUdevice dev)
{
	CUresult rc = si_check_init();

	if (rc)
		return rc;
	return dev < 0 || dev >= si.ndev ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult si_charge(int dev, size_t n)
{
	struct si_device *d = &si.dev[dev];
	size_t used = atomic_load(&d->used);

	do {
		if (n > d->total - used)
			return CUDA_ERROR_OUT_OF_MEMORY;
	} while (!atomic_compare_exchange_weak(&d->used, &used, used + n));
	return CUDA_SUCCESS;
}

void si_uncharge(int dev, size_t n)
{
	atomic_fetch_sub(&si.dev[dev].used, n);
}
