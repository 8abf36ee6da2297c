# The headline chart: speedup over serial against processes, measured on one node where that is honest (np 1-2),
# simulated beyond (SimGrid SMPI running gradsync's code to p = 64), and the course lab's figures beside them.
# Input: headline.csv from plots/headline_data.py ('#' lines name the sources)
#   series,kind,platform,method,processes,speedup,low,high,source
# Usage: gnuplot -e "data='headline.csv'; outdir='out'; subtitle='CPU, date'" plots/headline.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
# common.gp's row filter reads the first line as the header: drop the '#' lines first.
hsel(kind, method, platform) = sprintf("< grep -v '^#' '%s' | awk -F, 'NR==1{print; next} $2==\"%s\" && $4==\"%s\" && $3==\"%s\"'", data, kind, method, platform)
if (count(data, '1') == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
set datafile commentschars '#'
set logscale x 2
set logscale y 2
set xrange [0.9:80]
set yrange [0.09:80]
set xtics (1, 2, 4, 8, 10, 16, 32, 64)
set ytics ('0.125' 0.125, '0.25' 0.25, '0.5' 0.5, '1' 1, '2' 2, '4' 4, '8' 8, '16' 16, '32' 32, '64' 64)
set xlabel 'processes'
set ylabel 'speedup over serial (same epochs)'
set key at screen 0.60, screen 0.84 left top vertical Left reverse samplen 3 spacing 1.3 font ',10' width -4
set rmargin at screen 0.58
set lmargin at screen 0.08
set label 1 'ideal: speedup = processes' at 22, 34 right rotate by 33 textcolor rgb '#777777' font ',9'
set label 3 "measured: 2 ranks on 2 cores, median of 3 paired\nruns, bar: their range (beyond 2: oversubscribed)\n\nsimulated: SimGrid SMPI running gradsync's code,\nthe compute timed on the CPU above, a rank a host\n\nsame epochs at every p: the global batch grows\nand the accuracy falls (0.97 serial, 0.88 at 64)" at screen 0.61, screen 0.40 left font ',9' textcolor rgb '#444444'
set label 2 'serial' at 5.5, 0.92 left textcolor rgb '#777777' font ',9'
set arrow 1 from 0.9, 1 to 80, 1 nohead lc rgb '#bbbbbb' dt 3 lw 1
# measured: solid blue/vermilion with the range of the paired runs; simulated: the same colours dashed;
# the parameter server green; the 1 Gbit/s ring grey; the lab's figures: open black markers.
ms = 'lw 2.5 ps 1.4'
do for [fmt in "png svg"] {
    if (fmt eq "png") { eval png('headline') } else { eval svg('headline') }
    eval title('Training speedup over serial: MLP 784-128-10 on MNIST, batch 32 per worker')
    plot x with lines lc rgb '#999999' dt 2 lw 1 notitle, \
         hsel('measured', 'ring', 'one node') using "processes":"speedup":"low":"high" with yerrorlines lt 1 dt 1 @ms pt 7 \
             title 'measured, one node: ring', \
         hsel('measured', 'mpi', 'one node') using "processes":"speedup":"low":"high" with yerrorlines lt 2 dt 1 @ms pt 5 \
             title 'measured, one node: MPI_Allreduce', \
         hsel('simulated', 'ring', 'fattree-10g-1pn') using "processes":"speedup" with linespoints lt 1 dt 2 lw 2 pt 6 ps 1 \
             title 'simulated, 10 Gbit/s fat tree: ring', \
         hsel('simulated', 'mpi', 'fattree-10g-1pn') using "processes":"speedup" with linespoints lt 2 dt 2 lw 2 pt 4 ps 1 \
             title 'simulated, 10 Gbit/s fat tree: MPI_Allreduce', \
         hsel('simulated', 'ps', 'fattree-10g-1pn') using "processes":"speedup" with linespoints lt 3 dt 2 lw 2 pt 8 ps 1 \
             title 'simulated, 10 Gbit/s fat tree: parameter server', \
         hsel('simulated', 'ring', 'flat-1g') using "processes":"speedup" with linespoints lt 8 dt 2 lw 2 pt 6 ps 1 \
             title 'simulated, flat 1 Gbit/s: ring', \
         hsel('lab', 'ring', '24 vCPUs') using "processes":"speedup" with points lc rgb '#000000' pt 13 ps 1.8 lw 2 \
             title 'Python lab: ring, best of 2-10', \
         hsel('lab', 'ps', '24 vCPUs') using "processes":"speedup" with points lc rgb '#000000' pt 12 ps 1.8 lw 2 \
             title 'Python lab: parameter server, best of 2-10', \
         hsel('lab', 'any', '24 vCPUs') using "processes":"speedup" with points lc rgb '#000000' pt 1 ps 2.2 lw 2.5 \
             title 'Python lab: 2 processes'
    unset output
    print sprintf('wrote %s/headline.%s', outdir, fmt)
}
