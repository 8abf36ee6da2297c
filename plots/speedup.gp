# Speedup over the serial run per method and number of MPI processes.
# Input: scaling CSV  method,np,workers,oversubscribed,wall_s,speedup,efficiency,compute_s,sync_s,steps,test_accuracy
#   (optional: wall_min_s,wall_max_s, the range of a point's runs, drawn as an error bar)
# Usage: gnuplot -e "data='scaling.csv'; outdir='out'; subtitle='host - date'; cores=2" plots/speedup.gp
# With at most four process counts (a 2-core machine measures np 1 and 2) a line per method would join two
# points and suggest a trend nobody measured: each (method, np) is a bar, grouped by method, with the ideal
# (one x per worker) marked on it. With more process counts the chart is a line per method against np, with y = x.
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

methods = uniq(data, col("method"), col("method") . '!="serial"')
nps = uniqn(data, col("np"), '1')
has_serial = count(data, eq("method", "serial")) > 0
maxnp = real(word(nps, words(nps)))
stats data using "speedup" nooutput
smax = STATS_max
ov_cond = num("oversubscribed") . '==1'
novs = count(data, ov_cond)
ov_text = 'oversubscribed (np > cores): not honest timing'

eval title('Training speedup over the serial run')
set ylabel 'speedup over serial wall time (x)'

if (words(nps) <= 4) {
    # Bars at x positions laid out here, as in step_split.gp: methods in order of first appearance, their rows
    # in file order, one empty slot between methods. low/high: the speedup at the point's slowest and fastest
    # run (the serial median fixed), where the CSV has the range.
    layout = '{sub(/\r$/,"")} NR==1{for(i=1;i<=NF;i++)h[$i]=i; rng=("wall_min_s" in h) && ("wall_max_s" in h); next} \
      { m=$h["method"]; if(!(m in g)){g[m]=++ng; name[ng]=m} s=$h["speedup"]+0; lo=s; hi=s; \
        if(rng && $h["wall_max_s"]+0>0 && $h["wall_min_s"]+0>0){lo=s*$h["wall_s"]/$h["wall_max_s"]; hi=s*$h["wall_s"]/$h["wall_min_s"]} \
        w=("workers" in h) ? $h["workers"] : $h["np"]; \
        row[m,++cnt[m]] = $h["np"] "," ($h["oversubscribed"]+0) "," s "," lo "," hi "," w } \
      END{ if(mode=="bars") print "x,method,np,oversubscribed,speedup,low,high,workers"; \
        for(j=1;j<=ng;j++){ m=name[j]; x0=x+1; \
          for(k=1;k<=cnt[m];k++){ x++; if(mode=="bars") print x "," m "," row[m,k] } \
          if(mode=="centres") printf "%s %s ", m, (x0+x)/2; x++ } }'
    # A file, not a pipe: where() below filters it with another awk.
    bars = system('mktemp')
    system(sprintf("awk -F, -v mode=bars '%s' '%s' > '%s'", layout, data, bars))
    centres = system(sprintf("awk -F, -v mode=centres '%s' '%s'", layout, data))
    stats bars using "x" nooutput
    xmax = STATS_max
    stats bars using "high" nooutput
    ytop = (STATS_max > maxnp ? STATS_max : maxnp) * 1.08
    barw = 0.8
    # Each bar's value at its foot; turned upright where the bars are too narrow for it (past ~20 slots).
    lab_rot = xmax > 21 ? 90 : 0
    lab_off = xmax > 21 ? 2.2 : 0.9

    do for [j=1:words(centres)/2] {
        set label 10+j word(centres, 2*j-1) at first word(centres, 2*j)+0, graph 0 offset 0, -1 center font ',12' noenhanced
    }
    if (count(data, col("method") . ' ~ /^ps/') > 0) {
        set label 3 'parameter server: its rank is no worker' at graph 0.99, graph 0.97 right font ',10' textcolor rgb '#666666'
    }
    if (novs > 0) { set label 2 '* hatched: ' . ov_text at graph 0.99, graph 0.91 right font ',10' textcolor rgb '#666666' }
    set xrange [0.3 : xmax + 0.7]
    set yrange [0 : ytop]
    set xtics () scale 0
    set format x ''
    set grid noxtics ytics
    # The key goes under the method names: inside, it would cover the ideal marks at the top.
    set bmargin 5.5
    set key at screen 0.5, screen 0.005 center bottom horizontal nobox samplen 2 width 1 maxcols 6
    set style fill solid 0.85 border rgb '#333333'
    set boxwidth barw
    bar_np(n, ov) = sprintf('%s && %s==%d', eq("np", n), num("oversubscribed"), ov)
    sel(cond) = where(bars, cond)

    eval png('speedup')
    # gnuplot 5.4 crashes drawing labels from the all-NaN row an empty selection yields: such series are skipped.
    nfair = count(data, num("oversubscribed") . '==0')
    has_np(n, ov) = count(bars, bar_np(n, ov)) > 0
    plot for [k=1:words(nps)] sel(bar_np(word(nps, k), 0)) using "x":"speedup" with boxes lt k \
             title (has_np(word(nps, k), 0) ? sprintf('np = %s', word(nps, k)) : ''), \
         for [k=1:words(nps)] sel(bar_np(word(nps, k), 1)) using "x":"speedup" with boxes lt k fs pattern 4 \
             title (has_np(word(nps, k), 1) ? sprintf('np = %s*', word(nps, k)) : ''), \
         sel('1') using (column("x") - barw / 2):"workers":(barw):(0) with vectors nohead lc rgb '#000000' lw 3 \
             title 'ideal (1x per worker)', \
         sel('1') using "x":"low":(0):(column("high") - column("low")) with vectors heads size screen 0.006, 90 \
             lc rgb '#444444' lw 1 title 'range of its runs', \
         for [q=1:(nfair > 0)] sel(num("oversubscribed") . '==0') using "x":(0):(sprintf('%.2fx', column("speedup"))) with labels \
             rotate by lab_rot center offset 0, lab_off font ',9' tc rgb '#ffffff' notitle, \
         for [q=1:(novs > 0)] sel(num("oversubscribed") . '==1') using "x":(0):(sprintf('%.2fx', column("speedup"))) with labels \
             rotate by lab_rot center offset 0, lab_off font ',9' tc rgb '#000000' notitle, \
         1 with lines dt 3 lc rgb '#555555' lw 1.5 title 'serial = 1x'
    eval svg('speedup')
    replot
    eval done('speedup')
    system(sprintf("rm -f '%s'", bars))
} else {
    ovnp = novs > 0 ? \
           real(system(sprintf("awk -F, '%s(%s){if(m==\"\"||%s<m)m=%s} END{print m}' '%s'", awk_hdr(0), ov_cond, num("np"), num("np"), data))) : 0
    # With more ranks than cores the ranks time-share the CPUs: shade that region and draw its points open.
    if (ovnp > 0) {
        set object 1 rect from ovnp - 0.5, graph 0 to graph 1, graph 1 behind fc rgb '#f0f0f0' fs solid noborder
        set label 1 ov_text at ovnp - 0.4, graph 0.97 left font ',10' textcolor rgb '#666666' noenhanced
    }
    set xlabel 'MPI processes (np; parameter-server runs count the server rank)'
    set xrange [0.5 : maxnp + 0.5]
    set xtics 1
    set yrange [0 : (smax > maxnp ? smax : maxnp) * 1.08]
    set key left top inside title 'method'
    sel(m, cond) = where(data, eq("method", m) . ' && ' . cond)
    eval png('speedup')
    plot x with lines dt 3 lc rgb '#555555' lw 1.5 title 'ideal (y = x)', \
         for [i=1:words(methods)] sel(word(methods, i), '1') using "np":"speedup" smooth unique \
             with lines dt 2 lw 1.5 lt i notitle, \
         for [i=1:words(methods)] sel(word(methods, i), num("oversubscribed") . '==0') using "np":"speedup" \
             smooth unique with linespoints lt i title word(methods, i), \
         for [i=1:words(methods)] sel(word(methods, i), ov_cond) using "np":"speedup" \
             with points pt 6 ps 1.5 lw 2 lt i notitle, \
         where(data, eq("method", "serial")) using "np":"speedup" with points pt 5 ps 1.5 lc rgb '#000000' title (has_serial ? 'serial (baseline)' : ''), \
         NaN with linespoints dt 2 pt 6 ps 1.5 lc rgb '#555555' title (ovnp > 0 ? 'oversubscribed (see shading)' : '')
    eval svg('speedup')
    replot
    eval done('speedup')
}
