# source-tree.sh - sourced by tests/run-all and ./demo, which build out of
# tree. A source folder that was also configured in place (docs/admins.md's
# `./configure && make && sudo make install` in it) cannot be: configure
# refuses ("source directory already configured"), and make would take the
# objects lying in the source folder for its own. Such a tree is built from a
# copy of its sources instead, and its own build is left as it is.
#
# gk_others_reach DIR: can a user other than root reach DIR? The Slurm tests
# and the demo run jobs as test users, which run the build's programs and
# preload its runtime; a build under a folder closed to others (/root, a 0700
# home) fails every such job. Returns 1, having said why and what to do.
gk_others_reach() {
	if ! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$1" 2>/dev/null; then
		echo "$1 cannot be reached by other users (a folder on the way, like /root or a" \
			"0700 home, is closed to them), and the Slurm test jobs run as test users:" \
			"put the sources (or --build DIR) under a folder others can read, such as" \
			"/opt or /srv" >&2
		return 1
	fi
}

# gk_vpath_source TOP COPY: prints the folder to run configure from (TOP, or
# COPY refreshed from TOP), with configure generated in it. Returns 1, having
# said why, when TOP is configured in place and is not a git checkout (only
# git tells the sources from what the build made).
gk_vpath_source() {
	local top=$1 copy=$2
	if [ -f "$top/config.status" ]; then
		if ! command -v git >/dev/null || ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
			echo "$top is configured in place (config.status) and is not a git checkout:" \
				"run 'make distclean' there, or use another copy of the sources" >&2
			return 1
		fi
		echo "$top is configured in place: building from a copy of its sources in $copy" >&2
		mkdir -p "$copy" || return 1
		# The files git knows (as they are now, changed or not) and the new
		# ones it does not ignore; tar keeps their times, so an unchanged
		# file is not rebuilt.
		(cd "$top" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
			tar --null -T - -cf -) | tar -C "$copy" -xf - || return 1
		top=$copy
	fi
	local out
	out=$(cd "$top" && ./autogen.sh 2>&1) || { echo "$out" >&2; return 1; }
	echo "$top"
}
