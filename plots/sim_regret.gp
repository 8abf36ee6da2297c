# auto's regret map: auto's simulated time over the best gradsync method's at every (ranks, message size), as a
# heat map (1.0: auto chose the best; the issue's target is at most 1.1).
# Input: regret.csv from bench/sim/scale_report.py
#   platform,np,bytes,best,auto_over_best
# Usage: gnuplot -e "data='regret.csv'; outdir='out'" plots/sim_regret.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
platform = system(sprintf("awk -F, 'NR==2{print $1}' '%s'", data))
if (count(data, '1') == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
set logscale x 2
set logscale y 2
set xrange [5.5:1500]
set xtics (8, 16, 32, 64, 128, 256, 512, 1024)
set yrange [4:33554432]
set ytics ('8 B' 8, '64 B' 64, '512 B' 512, '4 KiB' 4096, '32 KiB' 32768, '256 KiB' 262144, '2 MiB' 2097152, '16 MiB' 16777216)
set xlabel 'ranks p'
set ylabel 'message size'
set cblabel 'auto / best'
set cbrange [0.9:1.5]
set palette defined (0.9 '#0072B2', 1.0 '#ffffff', 1.1 '#E69F00', 1.5 '#D55E00')
set key off
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,600 enhanced font 'DejaVu Sans,11'; set output outdir . '/sim_regret.png' }
    if (fmt eq "svg") { set terminal svg size 1000,600 fixed enhanced font 'DejaVu Sans,11' background '#ffffff'; set output outdir . '/sim_regret.svg' }
    eval title(sprintf("auto against the best gradsync method, simulated on %s", platform))
    plot data using "np":"bytes":"auto_over_best" with points pt 5 ps 4.5 lc palette, \
         '' using "np":"bytes":(sprintf("%.2f", column("auto_over_best"))) with labels font ',8'
    print sprintf("wrote %s/sim_regret.%s", outdir, fmt)
}
