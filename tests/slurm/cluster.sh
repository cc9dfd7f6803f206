#!/bin/bash
# cluster.sh - a throw-away Slurm cluster on this machine for gpuckpt's end-to-end tests.
#
#   tests/slurm/cluster.sh start [--real-gpu] [--nodes N]
#   tests/slurm/cluster.sh stop
#   tests/slurm/cluster.sh status
#   tests/slurm/cluster.sh crash NODE
#   tests/slurm/cluster.sh revive NODE
#
# start: munged (only if none answers), slurmctld and N (default 2) slurmd "nodes".
# Each daemon lives in its own network namespace with its own hostname; the
# addresses 10.77.0.0/24 exist only inside those namespaces (a bridge in the
# controller's namespace, one veth pair per node), so nothing here ever talks to
# an address the test did not make. Each node gets two fake GPUs (character
# device nodes made with mknod, File= in gres.conf, AutoDetect=off, so jobs get a
# real CUDA_VISIBLE_DEVICES) and its own burst-buffer folder, bind-mounted at the
# same path ($GK_CLUSTER_DIR/bb) in the node's own mount namespace: one path,
# different contents on each node, as with a real node-local NVMe. All nodes
# share $GK_CLUSTER_DIR/shared, the shared checkpoint root. Each node's
# plugin writes its Prometheus metrics to $GK_CLUSTER_DIR/metrics/gpuckpt.prom,
# also a folder of the node's own ($GK_CLUSTER_DIR/nodes/NODE/metrics).
#
# --real-gpu (the GPU machine): one node, File=/dev/nvidia0 (GK_GPU_DEVICE), no network
# namespaces; the node still gets its own mount namespace for the burst buffer.
# GK_GPU_COUNT=N (N > 1): the node has /dev/nvidia0 to /dev/nvidia<N-1> instead.
#
# crash: the node "dies": SIGKILL to its slurmd and every process of its jobs
# at once (everything in its mount namespace), and its burst buffer wiped, as
# after a power loss. Slurm is not told: the test marks the node down, as
# slurmctld itself would once the node stopped answering. revive: its slurmd
# started again (a rebooted node, empty burst buffer).
#
# Client commands (sbatch, srun, scontrol, ...) must run in the controller's
# namespace: start writes wrappers into $GK_CLUSTER_DIR/bin and an env.sh to
# source (PATH, SLURM_CONF). stop ends every process it started, by pid, removes
# the namespaces, the users and munged it made, and the cluster folder. There
# is one cluster at a time; /run/gpuckpt-test-cluster says where it is, so a
# plain `stop` also takes down one left by a demo or a test that was killed.
#
# Environment: GK_CLUSTER_DIR (default: start /tmp/gpuckpt-cluster; stop and
# status the cluster that is set up), GK_PLUGIN (the
# SPANK plugin; default the build's), GK_RUNTIME, GK_STAGE (gpuckpt-stage),
# GK_PLUGIN_ARGS (extra key=value plugin arguments), GK_PLUGSTACK_BEFORE
# (plugstack.conf lines before gpuckpt's), GK_PROLOG_FLAGS (slurm.conf's
# PrologFlags, default Alloc; empty: none), top_srcdir, top_builddir.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
# Where the cluster that is set up lives, whoever set it up (the demo, a test,
# a person): the namespace names are fixed, so there is one at a time, and
# `stop` finds it even after whatever started it was killed.
CURRENT=${GK_CLUSTER_RECORD:-/run/gpuckpt-test-cluster}
if [ -n "${GK_CLUSTER_DIR:-}" ]; then
	C=$GK_CLUSTER_DIR
elif [ "${1:-}" != start ] && [ -s "$CURRENT" ]; then
	C=$(cat "$CURRENT")
else
	C=/tmp/gpuckpt-cluster
fi
: "${GK_PLUGIN:=$top_builddir/spank-plugin/.libs/spank_gpuckpt.so}"
: "${GK_RUNTIME:=$top_builddir/runtime/.libs/libgpuckpt.so}"
: "${GK_STAGE:=$top_builddir/scheduler-hooks/gpuckpt-stage}"
: "${GK_PLUGIN_ARGS:=}"

NS_PREFIX=gpuckpt-
# The GPU of a --real-gpu cluster.
GPU_DEVICE=${GK_GPU_DEVICE:-/dev/nvidia0}
GPU_COUNT=${GK_GPU_COUNT:-1}
CTL=gkctl
NET=10.77.0
CTL_ADDR=$NET.1
# Test users for jobs run as someone other than root (ownership tests).
TEST_USERS="gkuser1 gkuser2"
# Seconds slurmctld gives a preempted job between SIGTERM and SIGKILL; the
# runtime must checkpoint within it. A preempted job whose script waits to be
# requeued (docs/users.md, "Job scripts") waits all of it: each preemption in the tests costs this
# much. The stand-in's checkpoints take well under a second (the tests print
# how long they took): 10 s; a real GPU's (--real-gpu: device memory, CRIU)
# take longer: 20 s. GK_GRACE_TIME sets it.
GRACE_TIME=${GK_GRACE_TIME:-}
# Seconds between SIGTERM and SIGKILL for scontrol requeue / scancel.
KILL_WAIT=${GK_KILL_WAIT:-15}

die() { echo "cluster.sh: $*" >&2; exit 1; }
say() { echo "cluster.sh: $*" >&2; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (it starts slurmctld, slurmd, munged and makes network namespaces)"; }

# Install what is missing from Debian's packages (the tests need nothing else).
ensure_packages() {
	local missing=()
	command -v slurmctld >/dev/null || missing+=(slurmctld)
	command -v slurmd >/dev/null || missing+=(slurmd)
	command -v sbatch >/dev/null || missing+=(slurm-client)
	command -v munged >/dev/null || missing+=(munge)
	command -v ip >/dev/null || missing+=(iproute2)
	command -v unshare >/dev/null || missing+=(util-linux)
	[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so ] ||
		[ -e /usr/lib/slurm-wlm/job_submit_lua.so ] || missing+=(slurm-wlm-basic-plugins)
	if [ ${#missing[@]} -gt 0 ]; then
		say "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 ||
			{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; } ||
			die "apt-get install ${missing[*]} failed"
	fi
}

nodes_list() { cat "$C/nodes.txt"; }
ns() { echo "$NS_PREFIX$1"; }

. "$here/../lib/munged.sh"

start_munge() {
	if gk_munge_answers; then
		say "munged already answers; using it"
		return 0
	fi
	local ok=0
	gk_munged_start "$C/run/munged.out" || ok=$?
	# Recorded first: a failed start still leaves its key for stop to take.
	if [ "$GK_MUNGE_KEY_MADE" = 1 ]; then touch "$C/run/munge-key-made"; fi
	[ $ok -eq 0 ] || die "$GK_MUNGED_WHY"
	echo "$GK_MUNGED_PID" >"$C/run/munged.started"
}

make_users() {
	local u
	: >"$C/users-made"
	for u in $TEST_USERS; do
		if ! getent passwd "$u" >/dev/null; then
			useradd --no-create-home --home-dir /nonexistent --shell /bin/bash "$u"
			echo "$u" >>"$C/users-made"
		fi
	done
}

write_hosts() {
	local f=$1 n i=0
	{
		echo "127.0.0.1 localhost"
		echo "$CTL_ADDR $CTL"
		for n in $(nodes_list); do
			i=$((i + 1))
			echo "$NET.$((10 + i)) $n"
		done
	} >"$f"
}

# One bridge in the controller's namespace, one veth pair per node.
make_network() {
	local n i=0
	ip netns add "$(ns $CTL)"
	echo "$(ns $CTL)" >>"$C/netns-made"
	ip -n "$(ns $CTL)" link set lo up
	ip -n "$(ns $CTL)" link add gkbr0 type bridge
	ip -n "$(ns $CTL)" addr add "$CTL_ADDR/24" dev gkbr0
	ip -n "$(ns $CTL)" link set gkbr0 up
	write_hosts "$C/etc/hosts"
	for n in $(nodes_list); do
		i=$((i + 1))
		ip netns add "$(ns "$n")"
		echo "$(ns "$n")" >>"$C/netns-made"
		ip -n "$(ns "$n")" link set lo up
		ip -n "$(ns $CTL)" link add "gkv$i" type veth peer name eth0 netns "$(ns "$n")"
		ip -n "$(ns $CTL)" link set "gkv$i" master gkbr0 up
		ip -n "$(ns "$n")" addr add "$NET.$((10 + i))/24" dev eth0
		ip -n "$(ns "$n")" link set eth0 up
	done
}

node_addr() {
	local want=$1 n i=0
	if [ "$(cat "$C/mode")" = real ]; then echo 127.0.0.1; return; fi
	for n in $(nodes_list); do
		i=$((i + 1))
		[ "$n" = "$want" ] && { echo "$NET.$((10 + i))"; return; }
	done
	die "no node $want"
}

# enter_cmd NAME: the command prefix that runs a command in NAME's network
# namespace. nsenter rather than `ip netns exec`, which remounts /sys and so
# hides /sys/fs/cgroup, which slurmd needs.
enter_cmd() {
	if [ "$(cat "$C/mode")" = real ]; then echo ""; else echo "nsenter --net=/run/netns/$(ns "$1")"; fi
}

make_fake_gpus() {
	local n
	for n in $(nodes_list); do
		mkdir -p "$C/nodes/$n/dev" "$C/nodes/$n/bb" "$C/nodes/$n/pmix" "$C/nodes/$n/metrics"
		# Major 195 is NVIDIA's; with no driver loaded an open() gets ENXIO, so a
		# job that tries to use one fails plainly instead of reaching a real device.
		[ -e "$C/nodes/$n/dev/nvidia0" ] || mknod -m 0666 "$C/nodes/$n/dev/nvidia0" c 195 0
		[ -e "$C/nodes/$n/dev/nvidia1" ] || mknod -m 0666 "$C/nodes/$n/dev/nvidia1" c 195 1
	done
}

write_config() {
	local n mode real_host gres_files ngpu
	mode=$(cat "$C/mode")
	[ -n "$GRACE_TIME" ] || if [ "$mode" = real ]; then GRACE_TIME=20; else GRACE_TIME=10; fi
	mkdir -p "$C/etc" "$C/state" "$C/log" "$C/jobs" "$C/bb" "$C/shared" "$C/metrics"
	chmod 1777 "$C/jobs"
	chmod 0755 "$C/shared"
	real_host=$(hostname)
	{
		cat <<-EOF
		# Generated by tests/slurm/cluster.sh for gpuckpt's end-to-end tests. Test cluster only.
		ClusterName=gpuckpt-test
		SlurmctldHost=$([ "$mode" = real ] && echo "$real_host(127.0.0.1)" || echo "$CTL($CTL_ADDR)")
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		# A requeued job may start again only after its credential expired (default
		# 120 s); 5 s, the least Slurm takes, lets a requeued test job run again
		# about 7 s later (e2e-requeue.sh prints it).
		AuthInfo=cred_expire=5
		# The prolog (the plugin's stage-in) at allocation, on every node of
		# the job, as etc/slurm.conf.fragment asks of a site (without it a
		# node other than the first runs it only at the job's first task
		# launch there). GK_PROLOG_FLAGS= (empty) leaves it out, as a site
		# that lacks it (e2e-prolog.sh).
		$([ -z "${GK_PROLOG_FLAGS-Alloc}" ] || echo "PrologFlags=${GK_PROLOG_FLAGS-Alloc}")
		StateSaveLocation=$C/state
		SlurmdSpoolDir=$C/spool/%n
		SlurmctldPidFile=$C/run/slurmctld.pid
		SlurmdPidFile=$C/run/slurmd.%n.pid
		SlurmctldLogFile=$C/log/slurmctld.log
		SlurmdLogFile=$C/log/slurmd.%n.log
		SlurmctldDebug=info
		SlurmdDebug=${GK_SLURMD_DEBUG:-verbose}
		SlurmctldPort=6817
		SlurmdPort=6818
		ProctrackType=proctrack/linuxproc
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		GresTypes=gpu
		# No task, MPI, switch, accounting, job completion or accounting-gather
		# plugin: what 22.05 and 24.11 both do when these are not set (24.11 no
		# longer ships the task/none, switch/none, ... plugins that 22.05 takes
		# as names for "none", nor accepts MpiDefault=none).
		SchedulerType=sched/builtin
		# Look at pending jobs every second, so a requeued job starts as soon as
		# it may (its start is held back until its credential expired).
		SchedulerParameters=sched_interval=1
		# The fake nodes claim more CPUs than this machine has.
		SlurmdParameters=config_overrides
		ReturnToService=2
		MinJobAge=600
		# Requeue instead of cancel; preemption by partition priority, the lower
		# partition's jobs requeued after GraceTime.
		JobRequeue=1
		PreemptType=preempt/partition_prio
		PreemptMode=REQUEUE
		KillWait=$KILL_WAIT
		MessageTimeout=10
		PlugStackConfig=$C/etc/plugstack.conf
		EOF
		if [ -f "$C/etc/job_submit.lua" ]; then echo "JobSubmitPlugins=lua"; fi
		if [ -f "$C/etc/cli_filter.lua" ]; then echo "CliFilterPlugins=lua"; fi
		for n in $(nodes_list); do
			if [ "$mode" = real ]; then ngpu=$GPU_COUNT; else ngpu=2; fi
			echo "NodeName=$n NodeAddr=$(node_addr "$n") NodeHostname=$([ "$mode" = real ] && echo "$real_host" || echo "$n") CPUs=4 Gres=gpu:$ngpu State=UNKNOWN"
		done
		local all
		all=$(nodes_list | paste -sd, -)
		echo "PartitionName=low Nodes=$all Default=YES PriorityTier=1 PreemptMode=REQUEUE GraceTime=$GRACE_TIME MaxTime=INFINITE State=UP"
		echo "PartitionName=high Nodes=$all PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP"
	} >"$C/etc/slurm.conf"

	{
		echo "AutoDetect=off"
		for n in $(nodes_list); do
			if [ "$mode" = real ]; then
				gres_files=$GPU_DEVICE
				[ "$GPU_COUNT" -le 1 ] || gres_files="/dev/nvidia[0-$((GPU_COUNT - 1))]"
			else
				gres_files="$C/nodes/$n/dev/nvidia[0-1]"
			fi
			echo "NodeName=$n Name=gpu File=$gres_files"
		done
	} >"$C/etc/gres.conf"

	# srun --mpi=pmix: Slurm's PMIx server puts its clients' folders under
	# /tmp by job and step id, which every node of this cluster shares; each
	# node gets its own at one path instead, bind-mounted like the burst buffer.
	mkdir -p "$C/pmix"
	echo "PMIxCliTmpDirBase=$C/pmix" >"$C/etc/mpi.conf"

	# slurmd reads cgroup.conf even with proctrack/linuxproc; without systemd it
	# must be told not to look for it.
	cat >"$C/etc/cgroup.conf" <<-EOF
	CgroupPlugin=autodetect
	IgnoreSystemd=yes
	EOF

	: >"$C/etc/plugstack.conf"
	local runtime=$GK_RUNTIME
	# A sanitizer build's runtime needs ASan's own runtime loaded before it.
	if [ -n "${ASAN_RUNTIME:-}" ] && [ -f "$ASAN_RUNTIME" ]; then runtime=$ASAN_RUNTIME:$runtime; fi
	# A cluster without the plugin would run every test's jobs untouched.
	[ -f "$GK_PLUGIN" ] || die "no plugin at $GK_PLUGIN (build first, or set GK_PLUGIN)"
	# GK_PLUGSTACK_BEFORE: plugin lines that come before gpuckpt's (pyxis, whose
	# task_init must run first so that gpuckpt's can check inside the container).
	if [ -n "${GK_PLUGSTACK_BEFORE:-}" ]; then echo "$GK_PLUGSTACK_BEFORE" >>"$C/etc/plugstack.conf"; fi
	echo "required $GK_PLUGIN bb_root=$C/bb shared_root=$C/shared runtime=$runtime stage=$GK_STAGE metrics=$C/metrics/gpuckpt.prom $GK_PLUGIN_ARGS" \
		>>"$C/etc/plugstack.conf"
}

write_clients() {
	local cmd mode
	mode=$(cat "$C/mode")
	mkdir -p "$C/bin"
	for cmd in sbatch srun salloc scontrol squeue sinfo scancel sacct sattach; do
		if [ "$mode" = real ]; then
			printf '#!/bin/sh\nSLURM_CONF=%s/etc/slurm.conf exec /usr/bin/%s "$@"\n' "$C" "$cmd" >"$C/bin/$cmd"
		else
			# Inside a job (PATH is passed on to it) the command already runs
			# on a node, in the node's namespace.
			printf '#!/bin/sh\n[ -n "$SLURM_JOB_ID" ] && exec /usr/bin/%s "$@"\nSLURM_CONF=%s/etc/slurm.conf exec %s /usr/bin/%s "$@"\n' \
				"$cmd" "$C" "$(enter_cmd $CTL)" "$cmd" >"$C/bin/$cmd"
		fi
		chmod 0755 "$C/bin/$cmd"
	done
	# nodeexec NODE CMD...: run CMD as root on NODE (its network and mount
	# namespace, and its root: in a chroot, such as tests/slurm/debian-root.sh's,
	# entering the mount namespace alone would land in the machine's own root).
	cat >"$C/bin/nodeexec" <<-EOF
	#!/bin/sh
	node=\$1; shift
	pid=\$(cat "$C/run/slurmd.\$node.pid" 2>/dev/null) || { echo "nodeexec: no node \$node" >&2; exit 1; }
	exec nsenter -t "\$pid" -m -n -u -r "\$@"
	EOF
	chmod 0755 "$C/bin/nodeexec"
	# asuser USER CMD ARGS...: a Slurm client command run as USER (the wrappers
	# above need root to enter the namespace, so privileges are dropped after).
	# CMD with a '/' is another program (the gpuckpt tool): it runs as it is,
	# and finds Slurm's own commands first in its PATH.
	cat >"$C/bin/asuser" <<-EOF
	#!/bin/sh
	u=\$1; cmd=\$2; shift 2
	g=\$(id -g "\$u") || exit 1
	case \$cmd in
	*/*) set -- env PATH=/usr/bin:/bin:/usr/sbin:/sbin "\$cmd" "\$@" ;;
	*) set -- /usr/bin/"\$cmd" "\$@" ;;
	esac
	exec $(enter_cmd $CTL) setpriv --reuid="\$u" --regid="\$g" --init-groups \\
		env HOME=/tmp USER="\$u" LOGNAME="\$u" SLURM_CONF=$C/etc/slurm.conf "\$@"
	EOF
	chmod 0755 "$C/bin/asuser"
	cat >"$C/env.sh" <<-EOF
	# Source this to use the test cluster.
	export SLURM_CONF=$C/etc/slurm.conf
	export PATH=$C/bin:\$PATH
	export GK_CLUSTER_DIR=$C
	EOF
}

wait_pidfile() {
	local f=$1 i
	for i in $(seq 100); do [ -s "$f" ] && return 0; sleep 0.1; done
	return 1
}

# The daemons' own mount namespace: the node's burst buffer at the common path,
# the cluster's /etc/hosts. Mount events do not leak back (propagation slave).
daemon_setup() {
	local node=$1
	if [ -f "$C/etc/hosts" ]; then echo "mount --bind '$C/etc/hosts' /etc/hosts &&"; fi
	if [ -n "$node" ]; then
		echo "mount --bind '$C/nodes/$node/bb' '$C/bb' &&"
		echo "mount --bind '$C/nodes/$node/pmix' '$C/pmix' &&"
		echo "mount --bind '$C/nodes/$node/metrics' '$C/metrics' &&"
	fi
}

start_daemons() {
	local n mode uts
	mode=$(cat "$C/mode")
	export SLURM_CONF=$C/etc/slurm.conf
	if [ "$mode" = real ]; then uts=""; else uts="--uts"; fi
	# The wrappers exec all the way down, so $! is the daemon's own pid.
	$(enter_cmd $CTL) unshare --mount --propagation slave $uts sh -c \
		"${uts:+hostname $CTL &&} $(daemon_setup "") exec slurmctld -D -f '$SLURM_CONF'" \
		>>"$C/log/slurmctld.out" 2>&1 &
	echo $! >"$C/run/slurmctld.started"
	wait_pidfile "$C/run/slurmctld.pid" || die "slurmctld did not start: $(tail -n 5 "$C/log/slurmctld.out" 2>/dev/null)"
	for n in $(nodes_list); do start_slurmd "$n" "$uts"; done
	for n in $(nodes_list); do wait_slurmd "$n"; done
}

# start_slurmd NODE UTS-OPTION: the node's slurmd in its own mount namespace,
# with the namespace's pin: a `sleep` in it that only kill_mntns ends. A
# namespace's number (what readlink shows, and $C/run/NODE.mntns records) is
# given to the next namespace made on this machine as soon as its last process
# is gone: without the pin, stopping a cluster (slurmd first, then what is
# left in its namespace) killed another cluster's node that had just taken
# the number (tests/run-all runs three clusters at once).
start_slurmd() {
	local n=$1 uts=$2
	mkdir -p "$C/spool/$n"
	rm -f "$C/run/$n.pin"
	$(enter_cmd "$n") unshare --mount --propagation slave $uts sh -c \
		"${uts:+hostname $n &&} $(daemon_setup "$n") { sleep infinity </dev/null >/dev/null 2>&1 & echo \$! >'$C/run/$n.pin'; } && exec slurmd -D -N $n -f '$SLURM_CONF'" \
		>>"$C/log/slurmd.$n.out" 2>&1 &
	echo $! >"$C/run/slurmd.$n.started"
}

wait_slurmd() {
	local n=$1
	wait_pidfile "$C/run/slurmd.$n.pid" || die "slurmd $n did not start: $(tail -n 5 "$C/log/slurmd.$n.out" 2>/dev/null)"
	wait_pidfile "$C/run/$n.pin" || die "slurmd $n: its namespace's pin did not start"
	readlink "/proc/$(cat "$C/run/slurmd.$n.started")/ns/mnt" >"$C/run/$n.mntns"
	[ "$(readlink "/proc/$(cat "$C/run/$n.pin")/ns/mnt")" = "$(cat "$C/run/$n.mntns")" ] ||
		die "slurmd $n: its namespace's pin is not in its namespace"
	[ "$(cat "$C/run/$n.mntns")" != "$(readlink /proc/self/ns/mnt)" ] ||
		die "slurmd $n shares this shell's mount namespace"
}

cmd_crash() {
	local n=${1:-}
	need_root
	[ "$(cat "$C/mode" 2>/dev/null)" = ns ] || die "crash: needs a cluster started without --real-gpu"
	nodes_list | grep -qx "$n" || die "crash: no node '$n' (nodes: $(nodes_list | paste -sd' ' -))"
	[ -f "$C/run/$n.mntns" ] || die "crash: $n is not running"
	# Every process of the node at once: slurmd, slurmstepd, the tasks.
	kill_mntns "$(cat "$C/run/$n.mntns")" "$(cat "$C/run/$n.pin" 2>/dev/null)"
	rm -f "$C/run/$n.mntns" "$C/run/$n.pin" "$C/run/slurmd.$n.started" "$C/run/slurmd.$n.pid"
	find "$C/nodes/$n/bb" -mindepth 1 -delete
	say "crashed $n: its processes killed, its burst buffer wiped"
}

cmd_revive() {
	local n=${1:-}
	need_root
	nodes_list | grep -qx "$n" || die "revive: no node '$n'"
	[ ! -f "$C/run/$n.mntns" ] || die "revive: $n is running"
	# What a site's boot must remove before slurmd starts (docs/admins.md,
	# "When a node fails"): slurmd's saved credential state, whose records
	# of the jobs the crash killed never expire (slurmd would skip the
	# prolog of such a job sent back here), and the PMIx sockets of the
	# killed steps (a requeued job's step of the same number would fail:
	# "Cannot bind() UNIX socket ... stepd.slurm.pmix.J.S").
	rm -f "$C/spool/$n"/cred_state* "$C/spool/$n"/stepd.slurm.pmix.*
	export SLURM_CONF=$C/etc/slurm.conf
	start_slurmd "$n" --uts
	wait_slurmd "$n"
	say "revived $n"
}

wait_idle() {
	local i want have
	want=$(nodes_list | wc -l)
	for i in $(seq 300); do
		have=$("$C/bin/sinfo" -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle" { n++ } END { print n + 0 }')
		[ "$have" -ge "$want" ] && return 0
		sleep 0.2
	done
	"$C/bin/sinfo" -N >&2 || true
	return 1
}

cmd_start() {
	local mode=ns nnodes=2 i
	while [ $# -gt 0 ]; do
		case $1 in
		--real-gpu) mode=real; nnodes=1 ;;
		--nodes) nnodes=$2; shift ;;
		*) die "start: unknown option '$1' (expected --real-gpu or --nodes N)" ;;
		esac
		shift
	done
	need_root
	if [ -e "$C/mode" ]; then die "a cluster is already set up in $C (run: $0 stop)"; fi
	if [ -s "$CURRENT" ] && [ "$(cat "$CURRENT")" != "$C" ] && [ -e "$(cat "$CURRENT")/mode" ]; then
		die "another test cluster is set up in $(cat "$CURRENT") (run: $0 stop)"
	fi
	ensure_packages
	[ "$mode" = real ] && { [ -c "$GPU_DEVICE" ] || die "--real-gpu: $GPU_DEVICE is not a character device"; }
	if [ "$mode" = real ] && [ "$GPU_COUNT" -gt 1 ]; then
		[ -c "/dev/nvidia$((GPU_COUNT - 1))" ] || die "--real-gpu: GK_GPU_COUNT=$GPU_COUNT but /dev/nvidia$((GPU_COUNT - 1)) is not a character device"
	fi
	mkdir -p "$C/run"
	echo "$C" >"$CURRENT"
	echo "$mode" >"$C/mode"
	: >"$C/netns-made"
	: >"$C/nodes.txt"
	for i in $(seq "$nnodes"); do echo "gk$i" >>"$C/nodes.txt"; done
	# From here on a failure (a failed command, or die) leaves things half
	# made: take them down again on the way out.
	trap 'say "start failed; cleaning up (GK_KEEP_ON_FAIL=1 keeps $C)"; [ -n "${GK_KEEP_ON_FAIL:-}" ] || cmd_stop >&2 || true' EXIT
	start_munge
	make_users
	make_fake_gpus
	# The optional scheduler hooks, as a site would install them (GK_NO_LUA=1: without).
	mkdir -p "$C/etc"
	if [ -z "${GK_NO_LUA:-}" ]; then
		cp "$top_srcdir/scheduler-hooks/job_submit.lua" "$top_srcdir/scheduler-hooks/cli_filter.lua" "$C/etc/"
	fi
	write_config
	write_clients
	if [ "$mode" = ns ]; then make_network; fi
	start_daemons
	wait_idle || die "nodes did not become idle"
	trap - EXIT
	say "up: $(nodes_list | paste -sd' ' -) ($mode); source $C/env.sh"
}

# kill_pid PID...: TERM to each, wait up to 10 s for them all, then KILL those
# left. Only pids this script recorded. (All at once: each daemon takes a
# second or more to shut down, and every test stops a cluster.)
kill_pid() {
	local pid i left=()
	for pid in "$@"; do
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
		kill -TERM "$pid" 2>/dev/null || true
		left+=("$pid")
	done
	for i in $(seq 100); do
		[ ${#left[@]} -gt 0 ] || return 0
		sleep 0.1
		set -- "${left[@]}"
		left=()
		for pid in "$@"; do if kill -0 "$pid" 2>/dev/null; then left+=("$pid"); fi; done
	done
	for pid in "${left[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}

# kill_mntns NS PIN: SIGKILL every process in mount namespace NS (as readlink
# shows it), whose pin (start_slurmd) is PIN. Only while PIN is alive in NS:
# otherwise the number may already be another namespace's, and nothing is
# killed. All of them stopped first, then killed, the pin last, so that NS
# stays NS until the end: going through /proc takes a while, and a
# slurmstepd that outlived its task by that long reported the step's end to
# slurmctld, which Slurm 26.05 took as the node answering: a node marked down
# (e2e-flush.sh's crash) came back at once, dead, and jobs went to it. A node
# that loses power says nothing more.
kill_mntns() {
	local want=$1 pin=${2:-} p pid pass pids=()
	if [ -z "$pin" ] || [ "$(readlink "/proc/$pin/ns/mnt" 2>/dev/null)" != "$want" ]; then
		say "warning: the pin of mount namespace $want is gone: its processes are not looked for"
		return 0
	fi
	kill -STOP "$pin" 2>/dev/null || true
	# Twice: any process started while the first pass went by.
	for pass in 1 2; do
		for p in /proc/[0-9]*; do
			pid=${p#/proc/}
			[ "$pid" = $$ ] || [ "$pid" = "$pin" ] && continue
			[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$want" ] || continue
			kill -STOP "$pid" 2>/dev/null && pids+=("$pid")
		done
	done
	for pid in ${pids[@]+"${pids[@]}"}; do kill -KILL "$pid" 2>/dev/null || true; done
	kill -KILL "$pin" 2>/dev/null || true
}

cmd_stop() {
	local f n pid u mode pids
	need_root
	if [ ! -d "$C" ]; then
		[ "$(cat "$CURRENT" 2>/dev/null)" != "$C" ] || rm -f "$CURRENT"
		say "nothing to stop in $C"
		return 0
	fi
	mode=$(cat "$C/mode" 2>/dev/null || echo ns)
	if [ -f "$C/run/slurmctld.started" ] && [ -x "$C/bin/scancel" ]; then
		timeout 10 "$C/bin/scancel" --full --signal=KILL --state=RUNNING >/dev/null 2>&1 || true
		timeout 10 "$C/bin/scancel" >/dev/null 2>&1 || true
	fi
	# The slurmds all at once (each takes a second or two to shut down), then
	# slurmctld: a slurmd whose controller went first hangs until KILLed.
	pids=()
	for f in "$C"/run/slurmd.*.started; do
		[ -e "$f" ] || continue
		pids+=("$(cat "$f")")
	done
	kill_pid ${pids[@]+"${pids[@]}"}
	rm -f "$C"/run/slurmd.*.started
	# Job steps (slurmstepd and the tasks) outlive slurmd. Each node's slurmd got
	# a mount namespace of its own at start, so every process still in one of
	# those is one this cluster started.
	for f in "$C"/run/*.mntns; do
		[ -e "$f" ] || continue
		n=$(basename "$f" .mntns)
		kill_mntns "$(cat "$f")" "$(cat "$C/run/$n.pin" 2>/dev/null)"
		rm -f "$f" "$C/run/$n.pin"
	done
	if [ -f "$C/run/slurmctld.started" ]; then
		kill_pid "$(cat "$C/run/slurmctld.started")"
		rm -f "$C/run/slurmctld.started"
	fi
	if [ -f "$C/run/munged.started" ]; then
		kill_pid "$(cat "$C/run/munged.started")"
		rm -f "$C/run/munged.started"
	fi
	if [ -f "$C/netns-made" ]; then
		for n in $(cat "$C/netns-made"); do ip netns del "$n" 2>/dev/null || true; done
	fi
	if [ -f "$C/users-made" ]; then
		for u in $(cat "$C/users-made"); do userdel "$u" 2>/dev/null || true; done
	fi
	if [ -f "$C/run/munge-key-made" ]; then rm -f /etc/munge/munge.key; fi
	# Bind mounts lived in the daemons' own mount namespaces and went with them.
	rm -rf "$C"
	[ "$(cat "$CURRENT" 2>/dev/null)" != "$C" ] || rm -f "$CURRENT"
	say "stopped"
}

cmd_status() {
	local f name
	[ -f "$C/mode" ] || { echo "no cluster in $C"; return 1; }
	echo "cluster: $C ($(cat "$C/mode")), nodes: $(nodes_list | paste -sd' ' -)"
	for f in "$C"/run/*.started; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .started)
		if kill -0 "$(cat "$f")" 2>/dev/null; then echo "$name: running (pid $(cat "$f"))"; else echo "$name: dead"; fi
	done
	"$C/bin/sinfo" -N -o '%N %t %G' 2>&1 || true
	"$C/bin/squeue" 2>&1 || true
}

case ${1:-} in
start) shift; cmd_start "$@" ;;
stop) cmd_stop ;;
status) cmd_status ;;
crash) cmd_crash "${2:-}" ;;
revive) cmd_revive "${2:-}" ;;
*) echo "usage: $0 start [--real-gpu] [--nodes N] | stop | status | crash NODE | revive NODE" >&2; exit 2 ;;
esac
