# Allreduce bus bandwidth vs message size, one line per method; one chart per np (busbw_npN.png/svg),
# because busbw is normalised per np and mixing np on one axis invites wrong comparisons.
# Input: bench_allreduce CSV  method,np,bytes,count,chunk_bytes,time_us,algbw_gbps,busbw_gbps,wrong
# Usage: gnuplot -e "data='allreduce.csv'; outdir='out'; subtitle='...'; cores=2" plots/busbw.gp
# Optional: link=0.125 (GB/s): the rate of the links between hosts (emulated hosts), drawn as a line named in the key:
#   with one rank a host it bounds every flat method's busbw, and "x % of the link" is read against it (one node:
#   none); link_name='1 Gbit/s' names it; link_note='...' adds a line to the key under it; prefix='hosts_' names
#   the files PREFIXbusbw_npN.
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
if (!exists("prefix")) prefix = ''
has_link = exists("link")
if (has_link && !exists("link_name")) link_name = sprintf('%g Gbit/s', link * 8)
if (!exists("link_note")) link_note = ''

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
    # Across hosts the link, not the cores, is meant to bound the large messages.
    eval title(sprintf("Allreduce bus bandwidth, np = %s%s", n, !oversub ? '' : has_link ? \
                       sprintf(' (%s ranks on %d cores: only link-bound sizes are honest)', n, cores) : \
                       sprintf(' (oversubscribed: np > %d cores, not honest timing)', cores)))
    sel(m) = where(data, eq("np", n) . ' && ' . eq("method", m))
    name = prefix . 'busbw_np' . n
    # Each method's share of the link at the largest size, the figure a "% of the link" sentence quotes, goes in
    # the key beside its name: a label on the chart would sit on some view's curves.
    top = has_link ? real(system(sprintf("awk -F, '%s(%s){b=%s; if(b>t)t=b} END{print t}' '%s'", awk_hdr(0), eq("np", n), num("bytes"), data))) : 0
    share(m) = system(sprintf("awk -F, '%s(%s && %s && %s==%.0f){printf \"%%.1f\", 100*%s/%g; exit}' '%s'", \
                              awk_hdr(0), eq("np", n), eq("method", m), num("bytes"), top, num("busbw_gbps"), link, data))
    key_of(m) = has_link ? sprintf('%s: %s %%', m, share(m)) : m
    set key title (has_link ? sprintf("method: busbw at %s\nas %% of the link", hb(top)) : 'method')
    eval png(name)
    # smooth unique: x-sorted, and repeated sizes (e.g. several chunk_bytes) are averaged.
    plot for [i=1:words(methods)] sel(word(methods, i)) using "bytes":"busbw_gbps" smooth unique \
             with linespoints lt i title key_of(word(methods, i)), \
         where(data, eq("np", n) . ' && ' . num("wrong") . '!=0') using "bytes":"busbw_gbps" \
             with points pt 2 ps 2.5 lw 3 lc rgb '#E00000' title (bad > 0 ? 'wrong != 0 (result is incorrect)' : ''), \
         (has_link ? link : NaN) with lines dt 2 lw 1.5 lc rgb '#444444' \
             title (has_link ? sprintf('%s link = %g GB/s', link_name, link) : ''), \
         for [q=1:(link_note ne '')] keyentry with lines lc rgb '#ffffff' title link_note
    eval svg(name)
    replot
    eval done(name)
}
