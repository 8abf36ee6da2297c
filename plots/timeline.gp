# A Gantt chart of a trace window: one band per rank, its compute track above (forward and backward passes, the waits
# for communication) and its communication track below (each allreduce from start to completion). Where an allreduce
# bar sits under a forward or backward bar, communication overlapped computation.
# Input: timeline.csv from plots/trace_to_timeline.py (a `train --trace` file)
#   rank,row,kind,step,start_ms,end_ms
# Usage: gnuplot -e "data='timeline.csv'; outdir='out'; subtitle='...'" plots/timeline.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

ranks = int(system(sprintf("awk -F, 'NR>1 && $1+1>n{n=$1+1} END{print n+0}' '%s'", data)))
if (ranks == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
steps = system(sprintf("awk -F, 'NR>1{if(a==\"\"||$4<a)a=$4; if($4>b)b=$4} END{print a \"..\" b}' '%s'", data))

eval title(sprintf('Timeline of steps %s on %d ranks (compute above, communication below each rank)', steps, ranks))
set xlabel 'time (ms, rank 0 clock)'
set yrange [2 * ranks : 0]
set ytics () noenhanced
do for [r=0:ranks-1] { set ytics add (sprintf('rank %d', r) 2 * r + 0.5) }
set grid xtics noytics
set style fill solid 0.9 noborder
set key outside right top vertical nobox

bar(kind) = where(data, eq('kind', kind))
half = 0.2
eval png('timeline')
plot bar('forward') using (($5+$6)/2):2:(($6-$5)/2):(half) with boxxyerror lc 1 title 'forward', \
     bar('backward') using (($5+$6)/2):2:(($6-$5)/2):(half) with boxxyerror lc 3 title 'backward', \
     bar('wait') using (($5+$6)/2):2:(($6-$5)/2):(half) with boxxyerror lc 8 title 'waiting for communication', \
     bar('push-pull') using (($5+$6)/2):2:(($6-$5)/2):(half) with boxxyerror lc 4 title 'push/pull (parameter server)', \
     bar('allreduce') using (($5+$6)/2):2:(($6-$5)/2):(half) with boxxyerror lc 2 title 'allreduce in flight'
eval svg('timeline')
replot
eval done('timeline')
