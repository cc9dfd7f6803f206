# The manual pages (man/): each program's options documented, pages render,
# make install puts them into place.
TESTS += %reldir%/documented.sh
EXTRA_DIST += %reldir%/documented.sh
# settings.def against gpuckpt.conf(5), spank-gpuckpt(8), docs/users.md and the sources.
TESTS += %reldir%/settings-table.sh
EXTRA_DIST += %reldir%/settings-table.sh
