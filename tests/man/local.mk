# The manual pages (man/): each program's options documented, pages render,
# make install puts them into place.
TESTS += %reldir%/documented.sh
EXTRA_DIST += %reldir%/documented.sh
