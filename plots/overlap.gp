# Time per training step with and without overlap: for each (Open MPI setting, method) a bar of the step (compute,
# then the communication the step waited for) and beside it a thin bar of all the communication (waited for, then
# hidden behind compute). Grouped by setting.
# Input: overlap_steps.csv from bench/cluster/bench_overlap.sh
#   setting,hosts,method,timed,compute_us,sync_us,hidden_us,step_us,step_ratio,allreduce,mode
# Usage: gnuplot -e "data='overlap_steps.csv'; outdir='out'; subtitle='...'" plots/overlap.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

layout = '{sub(/\r$/,"")} NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} \
  { s=$h["setting"]; if(!(s in g)){g[s]=++ng; name[ng]=s} \
    row[s,++cnt[s]] = $h["method"] "," $h["compute_us"]/1e3 "," $h["sync_us"]/1e3 "," $h["hidden_us"]/1e3 } \
  END{ if(mode=="bars") print "x,method,compute_ms,sync_ms,hidden_ms"; \
    for(j=1;j<=ng;j++){ s=name[j]; x0=x+1; \
      for(k=1;k<=cnt[s];k++){ x++; if(mode=="bars") print x "," row[s,k] } \
      if(mode=="centres") printf "%s %s ", s, (x0+x)/2; x++ } }'
bars = sprintf("< awk -F, -v mode=bars '%s' '%s'", layout, data)
centres = system(sprintf("awk -F, -v mode=centres '%s' '%s'", layout, data))
if (words(centres) == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
hosts = system(sprintf("awk -F, 'NR==2{print $2}' '%s'", data))

do for [j=1:words(centres)/2] {
    set label 10+j 'Open MPI: ' . word(centres, 2*j-1) at first word(centres, 2*j)+0, graph 0 offset 0, -7.5 center font ',11' noenhanced
}
step(x) = column("compute_ms") + column("sync_ms")
comm(x) = column("sync_ms") + column("hidden_ms")
stats bars using "x" nooutput
xmax = STATS_max
stats bars using (step(0) > comm(0) ? step(0) : comm(0)) nooutput

eval title(sprintf('Time per step with overlap (%s emulated hosts)', hosts))
set ylabel 'time per step (ms)'
set xrange [0.3 : xmax + 0.7]
set yrange [0 : STATS_max * 1.3]
set xtics scale 0 rotate by -35 left font ',9' noenhanced
set grid noxtics ytics
set style fill solid 0.85 border rgb '#333333'
set key left top inside horizontal width -2 nobox
set bmargin 9

eval png('overlap')
plot keyentry with boxes lc 1 title 'compute', \
     keyentry with boxes lc 2 title 'communication waited for', \
     keyentry with boxes lc 3 title 'communication hidden behind compute', \
     bars using ($1-0.12):(step(0)):(0.5) with boxes lc 2 notitle, \
     bars using ($1-0.12):"compute_ms":(0.5):xtic(strcol("method")) with boxes lc 1 notitle, \
     bars using ($1+0.28):(comm(0)):(0.22) with boxes lc 3 notitle, \
     bars using ($1+0.28):"sync_ms":(0.22) with boxes lc 2 notitle, \
     bars using ($1-0.12):(step(0)):(sprintf('%.0f', step(0))) with labels offset 0, 0.7 font ',8' notitle
eval svg('overlap')
replot
eval done('overlap')
