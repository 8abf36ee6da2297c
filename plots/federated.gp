# Federated averaging: the global model's test accuracy against communication rounds, one line per partition and
# local-epochs/batch pair at one client fraction (each at its best learning rate), with the target as a line.
# Input: curves.csv with series,round,test_accuracy,best_test_accuracy (bench/federated/federated_report.py)
# Usage: gnuplot -e "data='curves.csv'; outdir='DIR'; subtitle='...'; target=0.97; fraction='0.1'" plots/federated.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
if (!exists("target")) target = 0.97
if (!exists("fraction")) fraction = '0.1'

series = system(uniq_cmd(data, col("series"), '1') . " | tr ' ' '~' | tr '\\n' ' '")
name(i) = system(sprintf("echo '%s' | tr '~' ' '", word(series, i)))
sel(i) = where(data, eq("series", name(i)))

eval title(sprintf('Federated averaging: test accuracy against rounds (C = %s)', fraction))
set xlabel 'communication rounds'
set ylabel 'test accuracy of the global model'
set logscale x
set yrange [0.85:1.0]
set key right bottom inside font ',10'
set arrow 1 from graph 0, first target to graph 1, first target nohead dt 2 lc rgb '#777777' lw 1
set label 3 sprintf('target %.2f', target) at graph 0.01, first target offset 0, 0.6 font ',9' textcolor rgb '#555555'
eval png('chart')
plot for [i=1:words(series)] sel(i) using "round":"test_accuracy" with lines lt i title name(i)
eval svg('chart')
replot
eval done('chart')
