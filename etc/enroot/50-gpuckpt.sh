#!/bin/bash
# enroot hook for gpuckpt: install as /etc/enroot/hooks.d/50-gpuckpt.sh
# (ENROOT_SYSCONF_PATH/hooks.d), mode 0755, on every node that runs pyxis or
# enroot. enroot runs it as the job's user while it sets a container up; pyxis
# starts enroot with the job's environment, where gpuckpt's SPANK plugin put
# GPUCKPT_BIND for tasks with --gpu-checkpoint=on.
#
# It mounts each path of GPUCKPT_BIND at the same path in the container: the
# runtime's bundle folder (read-only; see gpuckpt-bundle), the job's folder on
# the burst buffer (one container serves every task of a step on the node, so
# the job's folder rather than one task's), Munge's socket folder and the
# runtime's site file. The task's LD_PRELOAD and GPUCKPT_* variables need
# nothing: pyxis keeps the task's environment. Containers of tasks without
# checkpointing are left alone.
#
# plugstack.conf must list pyxis before gpuckpt: gpuckpt's task_init then runs
# inside the container and says in the job's output, at the start, when the
# image cannot load the runtime (its glibc is too old, say).
set -euo pipefail

[ "${GPUCKPT_CHECKPOINT-}" = on ] && [ -n "${GPUCKPT_BIND-}" ] || exit 0
bundle=${GPUCKPT_RUNTIME%/*}

IFS=: read -r -a paths <<<"$GPUCKPT_BIND"
for p in "${paths[@]}"; do
	case $p in /*) ;; *) continue ;; esac
	# enroot's fstab: a space or a tab would end the field (the plugin never lists such paths).
	case $p in *[[:space:]]*) continue ;; esac
	if [ -d "$p" ]; then
		kind=dir
	elif [ -e "$p" ]; then
		kind=file
	else
		continue
	fi
	if [ "$p" = "$bundle" ]; then mode=ro; else mode=rw; fi
	printf '%s %s none x-create=%s,rbind,%s,nosuid,nodev\n' "$p" "$p" "$kind" "$mode" >>"$ENROOT_MOUNTS"
done
