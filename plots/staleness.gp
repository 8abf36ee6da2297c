# Parameter-server throughput (left axis) and measured staleness (right axis) vs the SSP staleness bound;
# ASP (bound -1 = unbounded) sits in its own slot at the right end of the axis.
# Input: staleness CSV  method,np,staleness_bound,images_per_s,staleness_mean,staleness_max,test_accuracy,clock_gap_max
# Two kinds of staleness: of a gradient, counted in server updates made since its worker pulled (grows with W),
# and the SSP clock gap, the steps a worker ran ahead of the slowest when released (what the bound s limits).
# Usage: gnuplot -e "data='staleness.csv'; outdir='out'; subtitle='...'; cores=2" plots/staleness.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

# Bounds are usually 0,1,2,4,8...: equally spaced categories read better than a linear axis.
ssp = num("staleness_bound") . '>=0'
asp = num("staleness_bound") . '<0'
bounds = uniqn(data, col("staleness_bound"), ssp)
nb = words(bounds)
has_asp = count(data, asp) > 0
if (nb == 0 && !has_asp) { print sprintf("%s: no data rows in %s", ARG0, data); exit status 1 }
array B[nb > 0 ? nb : 1]
do for [i=1:nb] { B[i] = word(bounds, i) + 0 }
slot(b, i) = i > nb ? NaN : (B[i] == b ? i : slot(b, i + 1))
xpos(b) = b < 0 ? nb + 1 : slot(b, 1)

set xtics () scale 0
do for [i=1:nb] { set xtics add (word(bounds, i) i) }
if (has_asp) {
    set xtics add ('ASP (unbounded)' nb + 1)
    if (nb > 0) { set arrow 1 from nb + 0.5, graph 0 to nb + 0.5, graph 1 nohead dt 3 lc rgb '#999999' }
}
set xrange [0.5 : nb + (has_asp ? 1 : 0) + 0.5]

nps = uniqn(data, col("np"), '1')
over(n) = n + 0 > cores
npkey(n) = sprintf('np=%s%s', n, over(n) ? ', oversubscribed' : '')
sel(n, cond) = where(data, eq("np", n) . ' && ' . cond)
bx(x) = xpos(column("staleness_bound"))
lz(v) = v > 0 ? v : 0.5   # log axis: show zero at the bottom

eval title('Parameter server: throughput and staleness vs staleness bound')
set xlabel 'SSP staleness bound s (steps a worker may run ahead of the slowest)'
set ylabel 'throughput (images/s, all workers)'
set y2label 'staleness (log scale; 0 drawn at 0.5)'
set yrange [0:*]
set logscale y2
set y2range [0.4:*]
set ytics nomirror
set y2tics
set border 11
set key below horizontal maxrows 3 width 2
set bmargin 11      # room for the xlabel and the key below it

eval png('staleness')
# Solid = throughput (left axis); dashed open = mean staleness, x = max staleness (right axis).
plot for [i=1:words(nps)] sel(word(nps, i), ssp) using (bx(0)):"images_per_s" smooth unique \
         with linespoints lt i title 'throughput, ' . npkey(word(nps, i)), \
     for [i=1:words(nps)] sel(word(nps, i), asp) using (bx(0)):"images_per_s" with points lt i ps 1.6 notitle, \
     for [i=1:words(nps)] sel(word(nps, i), ssp) using (bx(0)):(lz(column("staleness_mean"))) smooth unique axes x1y2 \
         with linespoints dt 2 pt 6 ps 1.4 lt i title 'mean gradient staleness (server updates), ' . npkey(word(nps, i)), \
     for [i=1:words(nps)] sel(word(nps, i), asp) using (bx(0)):(lz(column("staleness_mean"))) axes x1y2 \
         with points pt 6 ps 1.6 lw 2 lt i notitle, \
     for [i=1:words(nps)] sel(word(nps, i), '1') using (bx(0)):(lz(column("staleness_max"))) axes x1y2 \
         with points pt 2 ps 1.2 lw 1.5 lt i notitle, \
     keyentry with points pt 2 ps 1.2 lw 1.5 lc rgb '#555555' title 'max gradient staleness (server updates)', \
     for [i=1:words(nps)] sel(word(nps, i), '1') using (bx(0)):(lz(column("clock_gap_max"))) axes x1y2 \
         with points pt 7 ps 1.3 lc rgb '#c0392b' notitle, \
     keyentry with points pt 7 ps 1.3 lc rgb '#c0392b' title 'max clock gap (steps ahead of the slowest)', \
     where(data, ssp) using (bx(0)):(lz(column("staleness_bound"))) smooth unique axes x1y2 \
         with lines dt 3 lw 1.5 lc rgb '#555555' title (nb > 0 ? 'bound s: the clock gap must stay at or below it' : '')
eval svg('staleness')
replot
eval done('staleness')
