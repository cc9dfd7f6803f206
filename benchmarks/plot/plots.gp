# plots.gp - the harness's plots (benchmarks/run):
#   gnuplot -e "dat='BASE.dat'; base='BASE'; ckpt=1" plots.gp
# BASE.dat: "program overhead_pct image_mib ckpt_s restore_s" per line, NaN
# where a value is missing. Draws BASE-overhead.png, and, when ckpt is 1,
# BASE-checkpoint.png (checkpoint and restore time against image size).
if (!exists("ckpt")) ckpt = 1
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
	set terminal pngcairo size 1000,600 font ",11"
} else {
	set terminal png size 1000,600
}
set datafile missing "NaN"

set output base."-overhead.png"
set title "gpuckpt runtime overhead per program (median runtime / median native - 1)"
set ylabel "overhead (%)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -35 nomirror
set rmargin 10
set bmargin 6
set grid ytics
set xzeroaxis lt -1
plot dat using 2:xtic(1) notitle lc rgb "#3b6ea8"

if (ckpt) {
	reset
	set output base."-checkpoint.png"
	set title "Checkpoint and restore time against image size"
	set xlabel "checkpoint image (MiB)"
	set ylabel "time (s)"
	set logscale xy
	set grid
	set key top left
	plot dat using 3:4 with points pt 7 ps 1.6 lc rgb "#3b6ea8" title "checkpoint", \
	     dat using 3:5 with points pt 5 ps 1.6 lc rgb "#c0392b" title "restore", \
	     dat using 3:4:1 with labels offset char 1,0.6 font ",9" notitle
}
unset output
