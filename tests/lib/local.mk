# Shared test helpers.
EXTRA_DIST += %reldir%/tap.h %reldir%/helpers.sh %reldir%/munged.sh %reldir%/source-tree.sh
