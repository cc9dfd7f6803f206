# libFuzzer targets for what root-run code parses from user-written files:
# the manifest and the transparent seal. run.sh builds them with clang and
# runs each for FUZZ_SECONDS (default 60) from the corpora kept here; it
# skips, saying why, without clang and libFuzzer.
TESTS += %reldir%/run.sh
EXTRA_DIST += %reldir%/run.sh %reldir%/fuzz-manifest.c %reldir%/fuzz-seal.c \
	%reldir%/corpus
