# Allreduce bus bandwidth vs message size, one line per method; one chart per np (busbw_npN.png/svg),
# because busbw is normalised per np and mixing np on one axis invites wrong comparisons.
# Input: bench_allreduce CSV  method,np,bytes,count,chunk_bytes,time_us,algbw_gbps,busbw_gbps,wrong
# Usage: gnuplot -e "data='allreduce.csv'; outdir='out'; subtitle='...'; cores=2" plots/busbw.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

# busbw = algbw * 2(P-1)/P is 0 for np = 1, which a log axis cannot show.
nps = uniqn(data, col("np"), num("np") . '>=2')
if (words(nps) == 0) { print sprintf("%s: no rows with np >= 2 in %s", ARG0, data); exit status 1 }

# Powers of two with binary-prefix labels, as message sizes are chosen.
hb(b) = b >= 2**30 ? sprintf("%.0fGiB", b / 2.0**30) : b >= 2**20 ? sprintf("%.0fMiB", b / 2.0**20) : \
        b >= 2**10 ? sprintf("%.0fKiB", b / 2.0**10) : sprintf("%.0fB", b)
stats data using "bytes" nooutput
emin = floor(log(STATS_min) / log(2) + 1e-9)
emax = ceil(log(STATS_max) / log(2) - 1e-9)
estep = (emax - emin) > 14 ? 2 : 1        # keep at most ~13 labels on the axis
set logscale x 2
set xrange [2.0**emin / 1.5 : 2.0**emax * 1.5]
set xtics ()
do for [e=emin:emax:estep] { set xtics add (hb(2**e) 2.0**e) }
set mxtics 1

set logscale y 10
set format y '%g'
set xlabel 'message size (bytes of float32 data per rank)'
set ylabel 'bus bandwidth (GB/s, 1 GB = 10^9 B)'
set key right bottom inside title 'method'   # curves rise with size: lower right stays empty


do for [n in nps] {
    methods = uniq(data, col("method"), eq("np", n))
    bad = count(data, eq("np", n) . ' && ' . num("wrong") . '!=0')
    oversub = (n + 0 > cores)
    eval title(sprintf("Allreduce bus bandwidth, np = %s%s", n, \
                       oversub ? sprintf(' (oversubscribed: np > %d cores, not honest timing)', cores) : ''))
    sel(m) = where(data, eq("np", n) . ' && ' . eq("method", m))
    name = 'busbw_np' . n
    eval png(name)
    # smooth unique: x-sorted, and repeated sizes (e.g. several chunk_bytes) are averaged.
    plot for [i=1:words(methods)] sel(word(methods, i)) using "bytes":"busbw_gbps" smooth unique \
             with linespoints lt i title word(methods, i), \
         where(data, eq("np", n) . ' && ' . num("wrong") . '!=0') using "bytes":"busbw_gbps" \
             with points pt 2 ps 2.5 lw 3 lc rgb '#E00000' title (bad > 0 ? 'wrong != 0 (result is incorrect)' : '')
    eval svg(name)
    replot
    eval done(name)
}
