# Simulated training against the number of ranks p, the course lab's chart past this machine: speedup over the
# serial run for the same epochs (left) and simulated time to the target test accuracy (right), a line per run
# (synchronization and mode), the ideal speedup dashed.
# Input: sim_train.csv from bench/sim/train_report.py
#   platform,run,np,epochs,time_s,speedup,test_accuracy,time_to_target_s,sync_s
# Usage: gnuplot -e "data='sim_train.csv'; outdir='out'" plots/sim_speedup.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
runs = uniq(data, col("run"), col("run") . '!="serial"')
platform = system(sprintf("awk -F, 'NR==2{print $1}' '%s'", data))
if (words(runs) == 0) { print sprintf("%s: no parallel runs in %s", ARG0, data); exit status 1 }
sel(r) = where(data, eq("run", r))
set logscale x 2
set xrange [1.5:90]
set xtics (2, 4, 8, 16, 32, 64)
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1400,600 enhanced font 'DejaVu Sans,10'; set output outdir . '/sim_speedup.png' }
    if (fmt eq "svg") { set terminal svg size 1400,600 fixed enhanced font 'DejaVu Sans,10' background '#ffffff'; set output outdir . '/sim_speedup.svg' }
    eval title(sprintf("Simulated training on %s: MLP-128, batch 32 per worker, constant total work", platform))
    set multiplot layout 1, 2 margins 0.06, 0.99, 0.1, 0.84 spacing 0.07, 0.1
    set title 'speedup over serial (same epochs)'
    set xlabel 'ranks p'
    set ylabel 'speedup'
    set logscale y 2
    set key left top inside font ',8' samplen 2 spacing 1 maxrows 8
    plot for [i=1:words(runs)] sel(word(runs, i)) using "np":"speedup" with linespoints lt i dt 1 + (i - 1) / 8 \
             ps 0.7 title word(runs, i), \
         x with lines lc rgb '#999999' dt 2 lw 1 title 'ideal'
    set title 'simulated time to the target accuracy (a gap: not reached)'
    set ylabel 'seconds'
    unset key
    plot for [i=1:words(runs)] sel(word(runs, i)) using "np":"time_to_target_s" with linespoints lt i \
             dt 1 + (i - 1) / 8 ps 0.7 title word(runs, i)
    unset multiplot
    print sprintf("wrote %s/sim_speedup.%s", outdir, fmt)
}
