/*
 * cmd_inspect.c - `gpuckpt inspect`: what a checkpoint holds, for a person
 * deciding whether it is the one to restore (or for a script, as JSON: the
 * manifest under "manifest", as runtime/image/manifest.schema.json describes
 * it; tests/image/manifest-schema.sh validates it).
 */
#include "config.h"
#include "cli/cli.h"
#include "image/image.h"
#include "common/log.h"
#include "image/ckptname.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char inspect_help[] =
    "NAME\n"
    "    gpuckpt inspect - show what a checkpoint holds\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt inspect [--json] DIR\n"
    "\n"
    "DESCRIPTION\n"
    "    Prints a summary of the checkpoint in directory DIR: its sequence\n"
    "    number, label and step, when and where it was written, the Slurm job,\n"
    "    step, task and restart count, who signed it, the GPUs it was taken on\n"
    "    (ordinal, name, UUID, compute capability, memory, and the peer access\n"
    "    between them that a restore must find again) and totals; then\n"
    "    every device allocation (device, address, size, order, kind, and the\n"
    "    data files holding its bytes: a large one is cut across several) and\n"
    "    every registered host region; and, when the process had device memory\n"
    "    of other processes open through CUDA IPC, each such open (its number,\n"
    "    address and size, and the address it has in its exporter), which a\n"
    "    restart must open again in the same order.\n"
    "\n"
    "    The manifest, the ownership of the files (by the owner of DIR) and the\n"
    "    signature are checked; the data is not read (use gpuckpt verify).\n"
    "    A DIR of root's whose manifest names another user is a copy root holds\n"
    "    for that user (the shared root): it is shown as that user's checkpoint,\n"
    "    signed by them and held by root.\n"
    "\n"
    "OPTIONS\n"
    "    --json\n"
    "        Print one JSON object: {\"path\", \"owner\", \"held_by_root\",\n"
    "        \"signature\", \"signed_by\", \"totals\": {...}, \"manifest\": {...}}, where\n"
    "        \"manifest\" is the checkpoint's manifest as validated, as the\n"
    "        format's specification describes it (runtime/image/FORMAT.md and\n"
    "        manifest.schema.json in the source): the stored one for formats 2\n"
    "        to 4 (keys the format does not name left out), a format 1 manifest\n"
    "        in its format 2 form. The other keys describe the directory and are\n"
    "        not part of the format.\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the checkpoint was shown\n"
    "    1   it is not a readable, well-formed checkpoint\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt inspect /bb/1234/ckpt.000007\n"
    "    gpuckpt inspect --json /bb/1234/ckpt.000007 | jq '.manifest.allocations | length'\n";

enum { OPT_JSON = 1 };

static const struct cli_opt inspect_opts[] = {
    {"json", 0, 0, OPT_JSON},
    {NULL, 0, 0, 0},
};

struct totals {
	uint64_t alloc_bytes, region_bytes, file_bytes;
};

static void count(const struct gk_manifest *m, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < m->nallocs; i++)
		t->alloc_bytes += m->allocs[i].size;
	for (size_t i = 0; i < m->nregions; i++)
		t->region_bytes += m->regions[i].size;
	for (size_t i = 0; i < m->nfiles; i++)
		t->file_bytes += m->files[i].size;
}

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

static void print_summary(const char *dir, const struct gk_manifest *m, const char *sig,
			  uid_t owner, int held)
{
	char a[32], b[32], c[32], who[64];
	struct totals t;

	count(m, &t);
	/* Everything below comes from the manifest, which whoever wrote the
	 * checkpoint chose: shown through cli_printable. */
	printf("Checkpoint %s\n", cli_printable(dir));
	printf("  sequence      %" PRIu64 "\n", m->sequence);
	printf("  label         %s\n", m->label[0] ? cli_printable(m->label) : "-");
	printf("  step          %" PRId64 "\n", m->step);
	printf("  created       %s (written in %.2f s)\n", cli_printable(m->created),
	       m->write_seconds);
	gk_user_name(m->uid, who, sizeof(who));
	printf("  written by    %s (uid %u), pid %d on %s\n", cli_printable(who), (unsigned)m->uid,
	       (int)m->pid, cli_printable(m->hostname));
	if (m->slurm)
		printf("  slurm         job %s, step %s, task %d, restart count %d\n",
		       cli_printable(m->job_id), cli_printable(m->step_id), m->task, m->restart_count);
	else
		printf("  slurm         - (not run under Slurm)\n");
	gk_user_name(owner, who, sizeof(who));
	if (strcmp(sig, "signed") == 0)
		printf("  signed by     %s (uid %u)\n", who, (unsigned)owner);
	else if (strcmp(sig, "unchecked") == 0)
		printf("  signed by     not checked: munged is not reachable\n");
	else
		printf("  signed by     unsigned\n");
	if (held)
		printf("  held by       root (a copy kept for %s, as on the shared root)\n", who);
	gk_size_format(a, sizeof(a), t.alloc_bytes, GK_SIZE_UNIT);
	gk_size_format(b, sizeof(b), t.region_bytes, GK_SIZE_UNIT);
	gk_size_format(c, sizeof(c), t.file_bytes, GK_SIZE_UNIT);
	printf("  totals        %zu GPU%s, %zu allocation%s (%s), %zu host region%s (%s), "
	       "%zu file%s (%s)\n",
	       m->ndevices, plural(m->ndevices), m->nallocs, plural(m->nallocs), a, m->nregions,
	       plural(m->nregions), b, m->nfiles, plural(m->nfiles), c);
	gk_size_format(a, sizeof(a), m->chunk_size, GK_SIZE_UNIT);
	gk_size_format(b, sizeof(b), m->va_size, GK_SIZE_UNIT);
	printf("  chunk size    %s\n", a);
	printf("  reserved VA   0x%" PRIx64 ", %s\n", m->va_base, b);
	if (m->version >= 3) {
		printf("  format        %d, id %s\n", m->version, cli_printable(m->id));
		if (m->increment) {
			printf("  increment     %u: its unchanged chunks lie in", m->increment);
			for (size_t i = 0; i < m->nrefs; i++)
				printf("%s " GK_CKPT_FMT, i ? "," : "", m->refs[i].sequence);
			printf(" (all needed to restore it)\n");
		} else {
			printf("  increment     - (it holds all its data)\n");
		}
	} else {
		printf("  format        %d\n", m->version);
	}
}

static void print_devices(const struct gk_manifest *m)
{
	printf("\nGPUs\n");
	if (m->ndevices == 0) {
		printf("  (none)\n");
		return;
	}
	printf("  %-4s %-28s %-41s %-5s %-10s %s\n", "DEV", "NAME", "UUID", "CC", "MEMORY",
	       "MAPPED");
	for (size_t i = 0; i < m->ndevices; i++) {
		const struct gk_device_rec *d = &m->devices[i];
		char mem[32], mapped[32], cc[16];

		gk_size_format(mem, sizeof(mem), d->total_memory, GK_SIZE_UNIT);
		gk_size_format(mapped, sizeof(mapped), d->mapped_bytes, GK_SIZE_UNIT);
		snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
		printf("  %-4d %-28s %-41s %-5s %-10s %s\n", d->ordinal, cli_printable(d->name),
		       cli_printable(d->uuid), cc, mem, mapped);
	}
	/* Format 4: what a restore must find a peer route for. */
	for (size_t i = 0; i < m->ndevices; i++) {
		const struct gk_device_rec *d = &m->devices[i];

		if (!d->peer_access)
			continue;
		printf("  peer access to device %d's memory from device", d->ordinal);
		for (int p = 0, n = 0; p < GK_PEER_ORDINALS; p++)
			if (d->peer_access >> p & 1)
				printf("%s %d", n++ ? "," : "", p);
		printf("\n");
	}
}

static void print_allocs(const struct gk_manifest *m)
{
	printf("\nAllocations\n");
	if (m->nallocs == 0) {
		printf("  (none)\n");
		return;
	}
	printf("  %-4s %-18s %-12s %-8s %-6s %s\n", "DEV", "ADDRESS", "SIZE", "ORDER", "KIND",
	       "FILES");
	for (size_t i = 0; i < m->nallocs; i++) {
		const struct gk_alloc_rec *a = &m->allocs[i];
		char size[32], addr[24];

		gk_size_format(size, sizeof(size), a->size, GK_SIZE_UNIT);
		snprintf(addr, sizeof(addr), "0x%" PRIx64, a->address);
		printf("  %-4d %-18s %-12s %-8" PRIu64 " %-6s", a->device, addr, size, a->order,
		       cli_printable(a->kind));
		/* An allocation cut into parts lies in several files, in order;
		 * an increment's unchanged parts in earlier checkpoints'. Each
		 * file is named once, where it first holds a part. */
		for (uint32_t k = 0, shown = 0; k < a->nparts; k++) {
			const struct gk_part *p = &a->parts[k];
			uint32_t j = 0;

			while (j < k && !(a->parts[j].zero == p->zero &&
					  a->parts[j].sequence == p->sequence &&
					  !strcmp(a->parts[j].file, p->file)))
				j++;
			if (j < k)
				continue;
			if (p->zero) /* format 5: all zero, in no file */
				printf("%s(zeros)", shown++ ? ", " : " ");
			else if (p->sequence)
				printf("%s" GK_CKPT_FMT "/%s", shown++ ? ", " : " ", p->sequence,
				       cli_printable(p->file));
			else
				printf("%s%s", shown++ ? ", " : " ", cli_printable(p->file));
		}
		printf("\n");
	}
}

static void print_regions(const struct gk_manifest *m)
{
	printf("\nHost regions\n");
	if (m->nregions == 0) {
		printf("  (none)\n");
		return;
	}
	printf("  %-24s %-12s %s\n", "NAME", "SIZE", "FILE");
	for (size_t i = 0; i < m->nregions; i++) {
		char size[32];

		gk_size_format(size, sizeof(size), m->regions[i].size, GK_SIZE_UNIT);
		printf("  %-24s %-12s %s\n", cli_printable(m->regions[i].name), size,
		       cli_printable(m->regions[i].file));
	}
}

/* Format 6: not saved here, but opened again by the restarted program. */
static void print_imports(const struct gk_manifest *m)
{
	if (!m->nimports)
		return;
	printf("\nCUDA IPC imports (other processes' memory; the restart opens them again, "
	       "in this order)\n");
	printf("  %-6s %-18s %-12s %s\n", "OPEN", "ADDRESS", "SIZE", "IN ITS EXPORTER");
	for (size_t i = 0; i < m->nimports; i++) {
		const struct gk_import_rec *r = &m->imports[i];
		char size[32];

		gk_size_format(size, sizeof(size), r->size, GK_SIZE_UNIT);
		printf("  %-6llu 0x%-16llx %-12s 0x%llx\n", (unsigned long long)r->ordinal,
		       (unsigned long long)r->address, size,
		       (unsigned long long)r->exporter_address);
	}
}

static int print_json(const char *dir, const struct gk_manifest *m, const char *sig, uid_t owner,
		      int held)
{
	json_object *top, *manifest, *totals;
	struct totals t;
	char *text;
	size_t len;

	if (gk_manifest_to_json(m, &text, &len) < 0) {
		gk_error("inspect: %s: out of memory", dir);
		return GK_EXIT_BAD;
	}
	manifest = json_tokener_parse(text);
	free(text);
	if (!manifest) {
		gk_error("inspect: %s: cannot re-read the manifest", dir);
		return GK_EXIT_BAD;
	}
	count(m, &t);
	top = json_object_new_object();
	json_object_object_add(top, "path", json_object_new_string(dir));
	json_object_object_add(top, "owner", cli_user_json(owner));
	json_object_object_add(top, "held_by_root", json_object_new_boolean(held));
	json_object_object_add(top, "signature", json_object_new_string(sig));
	json_object_object_add(top, "signed_by",
			       strcmp(sig, "signed") == 0 ? cli_user_json(owner) : NULL);
	totals = json_object_new_object();
	json_object_object_add(totals, "devices", json_object_new_int64((int64_t)m->ndevices));
	json_object_object_add(totals, "allocations", json_object_new_int64((int64_t)m->nallocs));
	json_object_object_add(totals, "allocation_bytes",
			       json_object_new_int64((int64_t)t.alloc_bytes));
	json_object_object_add(totals, "host_regions", json_object_new_int64((int64_t)m->nregions));
	json_object_object_add(totals, "host_region_bytes",
			       json_object_new_int64((int64_t)t.region_bytes));
	json_object_object_add(totals, "file_bytes", json_object_new_int64((int64_t)t.file_bytes));
	json_object_object_add(top, "totals", totals);
	json_object_object_add(top, "manifest", manifest);
	cli_print_json(top);
	return GK_EXIT_OK;
}

static int inspect_run(int argc, char **argv)
{
	struct gk_load_opts lo = {0};
	struct gk_manifest *m = NULL;
	const char *arg, *dir = NULL, *sig;
	gk_error_t err;
	struct cli_args a;
	uid_t owner;
	int json = 0, is_signed = 0, id, ret, held, fd, parentfd;

	cli_args_init(&a, &gk_cmd_inspect, argc, argv);
	while ((id = cli_next(&a, inspect_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			return cli_print_help(&gk_cmd_inspect);
		case CLI_ERROR:
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (dir)
				return cli_usage_error(
				    &gk_cmd_inspect,
				    "one checkpoint directory at a time ('%s' and '%s')", dir, arg);
			dir = arg;
			break;
		case OPT_JSON:
			json = 1;
			break;
		}
	}
	if (!dir)
		return cli_usage_error(&gk_cmd_inspect, "missing the checkpoint directory DIR");
	/* Whoever owns the directory: inspect is for looking, by its owner or
	 * by an administrator; restore and verify are where the owner is
	 * required to be someone in particular. Opened once (as root: no link
	 * a user made on the way, cli_open_ckpt), with the folder above it,
	 * where an increment's earlier checkpoints are; all read through them. */
	fd = cli_open_ckpt(dir, &parentfd, &err);
	if (fd < 0) {
		gk_error("inspect: %s: %s", cli_printable(dir), cli_printable(err.text));
		return GK_EXIT_BAD;
	}
	cli_load_opts_at(fd, GK_UID_OF_MANIFEST, &lo);
	ret = gk_image_open_in(parentfd, fd, dir, &lo, &m, &is_signed, &err);
	if (ret < 0) {
		gk_error("inspect: %s: %s", cli_printable(dir), cli_printable(err.text));
		close(fd);
		close(parentfd);
		return GK_EXIT_BAD;
	}
	owner = lo.held_by_root ? m->uid : lo.uid;
	held = lo.held_by_root && owner != 0;
	sig = cli_signature_state_at(fd, is_signed);
	close(fd);
	close(parentfd);
	if (json) {
		ret = print_json(dir, m, sig, owner, held);
	} else {
		print_summary(dir, m, sig, owner, held);
		print_devices(m);
		print_allocs(m);
		print_regions(m);
		print_imports(m);
		ret = GK_EXIT_OK;
	}
	gk_manifest_free(m);
	return ret;
}

const struct gk_cmd gk_cmd_inspect = {
    .name = "inspect",
    .summary = "show what a checkpoint holds: job, GPUs, allocations, host regions",
    .help = inspect_help,
    .run = inspect_run,
};
