# Set-up: what `make install` puts where and what the installed example
# configuration names; building out of tree from a source folder that was
# also configured in place; no build products in git.
TESTS += %reldir%/install-paths.sh %reldir%/source-tree.sh
EXTRA_DIST += %reldir%/install-paths.sh %reldir%/source-tree.sh
