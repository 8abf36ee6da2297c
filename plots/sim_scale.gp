# Simulated allreduce time against the number of ranks p (log-log), one panel per message size: a line per
# method as simulated, the cost model's prediction dashed in the same colour, and, where given, the emulated
# cluster's measurements as points.
# Input: scale.csv from bench/sim/scale_report.py
#   platform,np,bytes,method,time_us,model_us
# Optional: emulated='a.csv b.csv' (bench_allreduce --csv files measured on the platform's emulated twin).
# Usage: gnuplot -e "data='scale.csv'; outdir='out'" plots/sim_scale.gp
sub_max = 165         # 1500 pixels wide: the subtitle wraps later than on common.gp's 1000
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
sizes = uniqn(data, col("bytes"), '1')
methods = uniq(data, col("method"), '1')
platform = system(sprintf("awk -F, 'NR==2{print $1}' '%s'", data))
if (words(sizes) == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
if (!exists("emulated")) emulated = ''
human(b) = b >= 1048576 ? sprintf("%g MiB", b / 1048576.0) : b >= 1024 ? sprintf("%g KiB", b / 1024.0) : sprintf("%g B", b)
sel(b, m) = where(data, num("bytes") . '==' . b . ' && ' . eq("method", m))
# The emulated runs call Open MPI's MPI_Allreduce 'mpi'; the simulated sweep names it by its selection.
emu(f, b, m) = where(f, num("bytes") . '==' . b . ' && ' . eq("method", m eq 'mpi-ompi' ? 'mpi' : m))
ranks = uniqn(data, col("np"), '1')
pmax = word(ranks, words(ranks)) + 0
rows = int(ceil(words(sizes) / 4.0))
height = 420 * rows + 160
top = 1.0 - (130.0 + 15 * (sub_lines - 1)) / height
cols = words(sizes) < 4 ? words(sizes) : 4

set logscale xy 2
set xrange [1.5:pmax * 1.5]
set logscale y 10
set format y '%g'
set xtics (2, 8, 32, 128, 512) font ',8'
set ytics font ',8'
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1500,height enhanced font 'DejaVu Sans,10'; set output outdir . '/sim_scale.png' }
    if (fmt eq "svg") { set terminal svg size 1500,height fixed enhanced font 'DejaVu Sans,10' background '#ffffff'; set output outdir . '/sim_scale.svg' }
    eval title(sprintf("Allreduce time against ranks on %s: simulated (solid), cost model (dashed), emulated (points)", platform))
    eval sub_label
    set multiplot layout rows, cols margins 0.06, 0.99, 0.1, top spacing 0.05, 0.12
    do for [s=1:words(sizes)] {
        b = word(sizes, s)
        set title human(b + 0) noenhanced
        set xlabel 'ranks p'
        set ylabel (s % cols == 1 || cols == 1 ? 'time, us' : '')
        if (s == 1) { set key left top inside font ',8' samplen 2 spacing 1 } else { unset key }
        plot for [i=1:words(methods)] sel(b, word(methods, i)) using "np":"time_us" with linespoints lt i ps 0.6 \
                 title word(methods, i), \
             for [i=1:words(methods)] sel(b, word(methods, i)) using "np":"model_us" with lines lt i dt 2 lw 1 \
                 notitle, \
             for [f in emulated] for [i=1:words(methods)] emu(f, b, word(methods, i)) using "np":"time_us" \
                 with points lt i pt 6 ps 1.5 notitle
        # Drawn once: a multiplot draws the labels again with every panel.
        unset label 98
        unset label 99
    }
    unset multiplot
    print sprintf("wrote %s/sim_scale.%s", outdir, fmt)
}
