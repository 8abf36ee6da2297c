# Time per training step split into compute and sync, one stacked bar per (method, np), grouped by method.
# Input: scaling CSV  method,np,workers,oversubscribed,wall_s,speedup,efficiency,compute_s,sync_s,steps,test_accuracy
# Usage: gnuplot -e "data='scaling.csv'; outdir='out'; subtitle='...'" plots/step_split.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

# gnuplot's histogram style pads the key with blank entries per group, so the bars are plain boxes at
# x positions laid out here: methods in order of first appearance, their rows in file order, one empty
# slot between methods. mode=bars gives the rows, mode=centres the x of each group's middle.
layout = '{sub(/\r$/,"")} NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} \
  ($h["steps"]+0)>0 { m=$h["method"]; if(!(m in g)){g[m]=++ng; name[ng]=m} \
    row[m,++cnt[m]] = $h["np"] "," ($h["oversubscribed"]+0) "," 1e3*$h["compute_s"]/$h["steps"] "," 1e3*$h["sync_s"]/$h["steps"] } \
  END{ if(mode=="bars") print "x,method,np,oversubscribed,compute_ms,sync_ms"; \
    for(j=1;j<=ng;j++){ m=name[j]; x0=x+1; \
      for(k=1;k<=cnt[m];k++){ x++; if(mode=="bars") print x "," m "," row[m,k] } \
      if(mode=="centres") printf "%s %s ", m, (x0+x)/2; x++ } }'
bars = sprintf("< awk -F, -v mode=bars '%s' '%s'", layout, data)
centres = system(sprintf("awk -F, -v mode=centres '%s' '%s'", layout, data))
if (words(centres) == 0) { print sprintf("%s: no rows with steps > 0 in %s", ARG0, data); exit status 1 }
novs = count(data, num("steps") . '>0 && ' . num("oversubscribed") . '==1')

# Method names under each group of bars, below the np tick labels.
do for [j=1:words(centres)/2] {
    set label 10+j word(centres, 2*j-1) at first word(centres, 2*j)+0, graph 0 offset 0, -2.4 center font ',12' noenhanced
}
set label 3 'np' at graph 0, graph 0 offset -1.5, -1 right font ',10'
if (novs > 0) { set label 2 '* oversubscribed (np > cores): not honest timing' at screen 0.99, screen 0.03 right font ',10' textcolor rgb '#666666' }

tic(x) = sprintf('%s%s', strcol("np"), column("oversubscribed") == 1 ? '*' : '')
stats bars using "x" nooutput
xmax = STATS_max
stats bars using (column("compute_ms") + column("sync_ms")) nooutput
# A step of an MLP takes a fraction of a millisecond: microseconds then, so the totals read as three digits, not 0.2.
us = STATS_max < 1
unit = us ? 1e3 : 1
compute(x) = column("compute_ms") * unit
total(x) = (column("compute_ms") + column("sync_ms")) * unit
STATS_max = STATS_max * unit

eval title('Time per training step: compute vs synchronization')
set ylabel (us ? 'time per step (µs)' : 'time per step (ms)')
set xrange [0.3 : xmax + 0.7]
set yrange [0 : STATS_max * 1.25]      # headroom for the key and the total labels
set xtics scale 0 font ',10'
set grid noxtics ytics
set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.75
set key left top inside horizontal width -4 nobox
set bmargin 5.5

eval png('step_split')
# sync is drawn to the full height and compute over it: a stacked bar with sync on top.
plot keyentry with boxes lc 1 title 'compute', \
     keyentry with boxes lc 2 title 'sync (allreduce / parameter server)', \
     bars using "x":(total(0)) with boxes lc 2 notitle, \
     bars using "x":(compute(0)):xtic(tic(0)) with boxes lc 1 notitle, \
     bars using "x":(total(0)):(sprintf(us ? '%.0f' : '%.3g', total(0))) with labels offset 0, 0.7 font ',9' notitle
eval svg('step_split')
replot
eval done('step_split')
