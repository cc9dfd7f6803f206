# docs: README.md and docs/ point only at what exists, the troubleshooting
# guide explains every warning and error of the sources, and the performance
# tables are what docs/gen-performance.sh generates (each takes seconds).
TESTS += %reldir%/links.sh
TESTS += %reldir%/messages.sh
TESTS += %reldir%/performance.sh
EXTRA_DIST += %reldir%/links.sh %reldir%/messages.sh %reldir%/performance.sh
