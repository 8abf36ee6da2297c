# A Gantt chart of a trace window: one band per rank, its compute track on top (forward and backward passes, the waits
# for communication, push/pull) and its communication track under it (each allreduce from start to completion).
# Where an allreduce bar sits under a forward or backward bar, communication overlapped computation.
# Input: timeline.csv from plots/trace_to_timeline.py (a `train --trace` file)
#   rank,row,kind,step,start_ms,end_ms   (row 2*rank + 0.25: compute, 2*rank + 0.75: communication; row 0 on top)
# Usage: gnuplot -e "data='timeline.csv'; outdir='out'; subtitle='...'" plots/timeline.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

ranks = int(system(sprintf("awk -F, 'NR>1 && $1+1>n{n=$1+1} END{print n+0}' '%s'", data)))
if (ranks == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
steps = system(sprintf("awk -F, 'NR>1{if(a==\"\"||$4<a)a=$4; if($4>b)b=$4} END{print a \"..\" b}' '%s'", data))

# The CSV spaces ranks 2 rows apart; drawn 1.4 apart, the bands keep a gap without leaving half the chart empty.
band = 1.4
ypos(rank, row) = row - (2 - band) * rank
eval title(sprintf('Timeline of steps %s on %d ranks: compute on top, allreduces in flight under it', steps, ranks))
set xlabel 'time (ms, rank 0 clock)'
set yrange [band * (ranks - 1) + 1.05 : -0.05]
set ytics () noenhanced scale 0
do for [r=0:ranks-1] {
    set ytics add (sprintf('rank %d compute', r) ypos(r, 2 * r + 0.25), sprintf('rank %d allreduce', r) ypos(r, 2 * r + 0.75))
}
set grid xtics noytics
set style fill solid 0.9 noborder
set key outside right top vertical nobox

# Every kind trace_to_timeline.py writes, in the key's order, with its colour (common.gp's linetypes) and name; the key
# lists only the kinds in this window (a ring run has no push/pull), and a kind not named here is drawn grey.
known = 'forward backward wait push-pull server-apply checkpoint allreduce'
array KCOL[7] = [1, 3, 8, 4, 5, 7, 2]
array KNAME[7] = ['forward', 'backward', 'waiting for communication', 'push/pull (parameter server)', \
                  'server applying the update', 'checkpoint', 'allreduce in flight']
others = uniq(data, col("kind"), col("kind") . ' !~ /^(' . system(sprintf("echo '%s' | tr ' ' '|'", known)) . ')$/')
present(k) = count(data, eq('kind', k)) > 0
bar(kind) = where(data, eq('kind', kind))
half = 0.2
# Only kinds with rows are plotted: an empty selection gives gnuplot an all-NaN row to stumble on.
eval png('timeline')
plot for [i=1:words(known)] for [q=1:present(word(known, i))] bar(word(known, i)) \
         using (($5+$6)/2):(ypos($1, $2)):(($6-$5)/2):(half) with boxxyerror lc KCOL[i] title KNAME[i], \
     for [i=1:words(others)] bar(word(others, i)) \
         using (($5+$6)/2):(ypos($1, $2)):(($6-$5)/2):(half) with boxxyerror lc rgb '#bbbbbb' title word(others, i)
eval svg('timeline')
replot
eval done('timeline')
