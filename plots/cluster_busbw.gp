# Emulated cluster: measured allreduce bus bandwidth (points) against the alpha-beta-gamma model's prediction
# (lines of the same colour), per method, with the link rate as a dashed line.
# Input: model_vs_measured.csv from bench/cluster/fit_cost_model.py
#   method,np,bytes,measured_us,model,predicted_us,error_pct,measured_busbw_gbps,predicted_busbw_gbps
# Each method is drawn against its own model: gradsync's ring (any chunk size) against "ring-chunked", mpi-ring
# against "ring", mpi (Open MPI's default choice) against "rabenseifner", ps and ps-shardedK against theirs.
# Usage: gnuplot -e "data='model_vs_measured.csv'; outdir='out'; link=0.125; name='cluster_busbw'" plots/cluster_busbw.gp
#   link: the link rate in GB/s (1 Gbit/s = 0.125), drawn as a line; name: output file name without extension.
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
if (!exists("link")) link = 0.125
if (!exists("name")) name = 'cluster_busbw'

m_ = col("method")
mo_ = col("model")
own_model = '(' . m_ . ' ~ /^ring/ && ' . mo_ . '=="ring-chunked") || (' . m_ . '=="mpi-ring" && ' . mo_ . '=="ring") || (' \
          . m_ . '=="mpi" && ' . mo_ . '=="rabenseifner") || (' . m_ . ' ~ /^ps/ && ' . mo_ . '==' . m_ . ')'
methods = uniq(data, col("method"), own_model)
if (words(methods) == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
np = uniq(data, col("np"), '1')

hb(b) = b >= 2**30 ? sprintf("%.0fGiB", b / 2.0**30) : b >= 2**20 ? sprintf("%.0fMiB", b / 2.0**20) : \
        b >= 2**10 ? sprintf("%.0fKiB", b / 2.0**10) : sprintf("%.0fB", b)
stats data using "bytes" nooutput
emin = floor(log(STATS_min) / log(2) + 1e-9)
emax = ceil(log(STATS_max) / log(2) - 1e-9)
set logscale x 2
set xrange [2.0**emin / 1.5 : 2.0**emax * 1.5]
set xtics ()
do for [e=emin:emax:(emax - emin > 14 ? 2 : 1)] { set xtics add (hb(2**e) 2.0**e) }
set logscale y 10
set format y '%g'
set xlabel 'message size (bytes of float32 data per rank)'
set ylabel 'bus bandwidth (GB/s, 1 GB = 10^9 B)'
set key left top inside title 'points measured, lines model'
eval title(sprintf("Emulated cluster, np = %s: measured vs predicted bus bandwidth", word(np, 1)))
sel(m) = where(data, eq("method", m) . ' && (' . own_model . ')')
eval png(name)
plot for [i=1:words(methods)] sel(word(methods, i)) using "bytes":"measured_busbw_gbps" smooth unique \
         with points lt i title word(methods, i), \
     for [i=1:words(methods)] sel(word(methods, i)) using "bytes":"predicted_busbw_gbps" smooth unique \
         with lines lt i notitle, \
     link with lines lc rgb '#444444' dt 2 lw 1.5 title sprintf('link %.3f GB/s', link)
eval svg(name)
replot
eval done(name)
