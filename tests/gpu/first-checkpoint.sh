#!/bin/bash
# first-checkpoint.sh BUILD - where a checkpoint's time goes, the first one of
# a process against the later ones. A measurement for the GPU machine, not a
# test: it prints the runtime's and the shepherd's timing lines and passes or
# fails nothing.
#
# Why: under Slurm the first transparent checkpoint of particlefilter took
# 3.98 s ("wrote 59776552 bytes"), the second 1.02 s for the same bytes
# (issue 12). The runtime logs each phase at info level: hello, gate, drain,
# image, seal and release (transparent), draining, image and commit
# (application mode), the copy threads' staging set-up, device waits,
# checksums and writes, and the commit's manifest, signature and sync.
#
# Runs, each with about 60 MB of device memory (as particlefilter), into a
# folder on disk (/var/tmp) and one in /dev/shm:
#   app          heat-drv: SIGUSR1, SIGUSR1, SIGTERM (three checkpoints in one process)
#   transparent  examples/unaware under gpuckpt-shepherd run: SIGUSR1, SIGUSR1,
#                SIGTERM; then gpuckpt-shepherd restore and SIGUSR1, SIGTERM
#                (needs CRIU 4: GK_CRIU, /usr/local/sbin/criu or /opt/criu)
# Before each signal, the kernel's dirty and writeback page counts (a disk
# still busy with earlier writes, the build's say, slows an fsync).
B=${1:?usage: first-checkpoint.sh BUILD-FOLDER}
B=$(cd "$B" && pwd)
RT=$B/runtime/.libs/libgpuckpt.so
SHEP=$B/runtime/gpuckpt-shepherd
HEAT=$B/examples/heat/heat-drv
CUBIN=$B/examples/heat/heat_kernels.cubin
UNAWARE=$B/examples/unaware/unaware
W=$(mktemp -d /tmp/gk-first.XXXXXX)
trap 'rm -rf "$W"' EXIT
export GPUCKPT_LOG_LEVEL=info

for f in "$RT" "$HEAT" "$CUBIN"; do
	[ -e "$f" ] || { echo "first-checkpoint: $f is not built"; exit 1; }
done
CRIU=${GK_CRIU:-}
if [ -z "$CRIU" ] && [ -x /usr/local/sbin/criu ]; then
	CRIU=/usr/local/sbin/criu
elif [ -z "$CRIU" ] && [ -x /opt/criu/usr/sbin/criu ]; then
	CRIU=$W/criu
	printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/criu/usr/lib/x86_64-linux-gnu:/opt/criu/lib/x86_64-linux-gnu exec /opt/criu/usr/sbin/criu "$@"\n' >"$CRIU"
	chmod 0755 "$CRIU"
fi

dirty() { awk '/^(Dirty|Writeback):/ {printf "%s %s kB  ", $1, $2}' /proc/meminfo; }
wait_line() { # FILE REGEX SECONDS [FROM-LINE]
	for _ in $(seq $(($3 * 10))); do
		tail -n +"${4:-1}" "$1" 2>/dev/null | grep -Eq "$2" && return 0
		sleep 0.1
	done
	echo "  (no '$2' in $1 after $3 s)"
	return 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# show FILE FROM: the timing lines of FILE from line FROM on.
show() {
	tail -n +"$2" "$1" | grep -E "wrote [0-9]+ bytes|phases:|draining [0-9.]+ s|image: files|transfer: |sealed: manifest|committed: runtime|restored ckpt|device memory loaded|no checkpoint|failed|error" |
		sed 's/^/    /'
}

echo "== $(nvidia-smi -L | head -n 1); $(uname -r); $(date -u +%FT%TZ)"
for where in /var/tmp /dev/shm; do
	echo "== application mode (heat-drv, 2 x 31 MB), checkpoints in $where"
	d=$where/gk-first-app.$$
	rm -rf "$d"; mkdir -p "$d"
	log=$W/app.err
	LD_PRELOAD=$RT GPUCKPT_DIR=$d "$HEAT" --module "$CUBIN" --size 2800 --steps 100000 \
		--report-every 10 --delay-ms 20 >"$W/app.out" 2>"$log" &
	pid=$!
	n=0
	for sig in USR1 USR1 TERM; do
		n=$((n + 1))
		wait_line "$W/app.out" "step $((n * 50))$" 60
		from=$(($(wc -l <"$log") + 1))
		echo "  #$n SIG$sig: $(dirty)"
		t0=$(now)
		kill -"$sig" "$pid"
		if [ "$sig" = TERM ]; then
			wait "$pid"
		else
			for _ in $(seq 300); do [ -e "$d/ckpt.$(printf %06d $n)" ] && break; sleep 0.1; done
		fi
		echo "    (signal to commit: $(since "$t0") s, seen from outside)"
		show "$log" "$from"
	done
	rm -rf "$d"

	if [ -z "$CRIU" ] || [ ! -x "$SHEP" ] || [ ! -x "$UNAWARE" ]; then
		echo "== transparent mode: skipped (CRIU 4, gpuckpt-shepherd or examples/unaware missing)"
		continue
	fi
	echo "== transparent mode (examples/unaware under gpuckpt-shepherd, ~64 MB), checkpoints in $where"
	d=$where/gk-first-t.$$
	rm -rf "$d"; mkdir -p "$d"
	out=$W/t.out log=$W/t.err
	: >"$log"
	"$SHEP" run --criu "$CRIU" --dir "$d" --uid 0 --gid 0 -- env LD_PRELOAD="$RT" \
		GPUCKPT_LOG_LEVEL=info "$UNAWARE" --size 8000000 --steps 100000 --report-every 10 \
		--delay-ms 20 --out "$W/t.file" >"$out" 2>"$log" &
	spid=$!
	n=0
	for sig in USR1 USR1 TERM; do
		n=$((n + 1))
		wait_line "$out" "step $((n * 50))$" 120
		from=$(($(wc -l <"$log") + 1))
		echo "  #$n SIG$sig: $(dirty)"
		t0=$(now)
		kill -"$sig" "$spid"
		wait_line "$log" "committed|no checkpoint of|failed" 120 "$from" >/dev/null
		echo "    (signal to commit: $(since "$t0") s, seen from outside)"
		[ "$sig" = TERM ] && wait "$spid"
		sleep 0.5
		show "$log" "$from"
	done
	echo "  restore:"
	: >"$log"
	"$SHEP" restore --criu "$CRIU" --dir "$d" --uid 0 --gid 0 >>"$out" 2>"$log" &
	spid=$!
	wait_line "$log" "restored ckpt|restore: " 120 >/dev/null
	sleep 1
	show "$log" 1
	for sig in USR1 TERM; do
		n=$((n + 1))
		before=$(grep -c "step" "$out")
		for _ in $(seq 200); do [ "$(grep -c "step" "$out")" -gt $((before + 2)) ] && break; sleep 0.1; done
		from=$(($(wc -l <"$log") + 1))
		echo "  #$n after the restore, SIG$sig: $(dirty)"
		t0=$(now)
		kill -"$sig" "$spid"
		wait_line "$log" "committed|no checkpoint of|failed" 120 "$from" >/dev/null
		echo "    (signal to commit: $(since "$t0") s, seen from outside)"
		[ "$sig" = TERM ] && wait "$spid"
		sleep 0.5
		show "$log" "$from"
	done
	rm -rf "$d"
done
