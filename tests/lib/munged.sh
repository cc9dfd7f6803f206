# munged.sh - the one way the tests start a munged of their own where none
# answers: tests/run-all (for the whole run), helpers.sh's gk_munged (a test
# run by itself) and tests/slurm/cluster.sh (a cluster) source it.
#
#   gk_munge_answers        0 when `munge -n | unmunge` works
#   gk_munged_start LOG     0 when one answers, after starting munged (as the
#                           munge user, in the foreground, its output
#                           appended to LOG) where none did. Sets
#                           GK_MUNGED_PID (empty when it started none),
#                           GK_MUNGE_KEY_MADE (1 when it made the key) and,
#                           on failure, GK_MUNGED_WHY (munged's own last
#                           lines: why it did not start).
#
# Files left in /run/munge by a munged that ran as root (its socket, its
# lock, its pid file) stop every later munged run as the munge user:
# "Failed to create "/run/munge/munge.socket.2.lock": Permission denied".
# Since none answers, none uses them: they are given to the munge user
# before the start. (That is how a CI machine once ran without munged: every
# signed checkpoint then waited 2 s for libmunge's retries, and every
# Slurm cluster failed to start.)

gk_munge_answers() {
	command -v munge >/dev/null && munge -n 2>/dev/null | unmunge >/dev/null 2>&1
}

gk_munged_start() {
	local log=$1 fd
	GK_MUNGED_PID= GK_MUNGE_KEY_MADE=0 GK_MUNGED_WHY=
	gk_munge_answers && return 0
	if ! command -v munged >/dev/null || ! getent passwd munge >/dev/null; then
		GK_MUNGED_WHY="munge is not installed (no munged or no munge user)"
		return 1
	fi
	if [ ! -s /etc/munge/munge.key ]; then
		mkdir -p /etc/munge
		mungekey --create --keyfile=/etc/munge/munge.key &&
			chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key ||
			{ GK_MUNGED_WHY="mungekey could not make /etc/munge/munge.key"; return 1; }
		GK_MUNGE_KEY_MADE=1
	fi
	mkdir -p /run/munge /var/log/munge /var/lib/munge
	chown munge:munge /run/munge /var/log/munge /var/lib/munge
	find /run/munge /var/lib/munge /var/log/munge -mindepth 1 -maxdepth 1 ! -user munge \
		-exec chown -h munge:munge {} + 2>/dev/null
	# In the foreground under setpriv (which execs), so $! is munged itself;
	# without the descriptors above 2 the caller holds, so that a munged
	# left running holds no caller's lock (flock /tmp/gk-cluster.lock ...)
	# or pipe open.
	(
		for fd in $(ls /proc/$BASHPID/fd); do
			[ "$fd" -gt 2 ] && [ "$fd" != 255 ] && eval "exec $fd>&-"
		done 2>/dev/null
		exec setpriv --reuid=munge --regid=munge --clear-groups /usr/sbin/munged --foreground
	) >>"$log" 2>&1 </dev/null &
	GK_MUNGED_PID=$!
	for _ in $(seq 100); do
		gk_munge_answers && return 0
		kill -0 "$GK_MUNGED_PID" 2>/dev/null || break
		sleep 0.1
	done
	gk_munge_answers && return 0
	GK_MUNGED_WHY="munged did not start: $(grep -E 'Error|Failed' "$log" 2>/dev/null | tail -n 2 | tr "\n" " " || true)"
	kill "$GK_MUNGED_PID" 2>/dev/null || true
	GK_MUNGED_PID=
	return 1
}
