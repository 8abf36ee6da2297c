# Serial training time against its FLOP bound: each run's wall time divided by the time its GEMMs alone take on
# the planned kernels (1 = the bound), one point per run, grouped by (model, batch); with --compare-default also
# the same run on one fixed BLIS set for every shape, against the same bound. Spread within a group is run-to-run.
# Input: bench_compute --csv  model,batch,rep,steps,wall_s,compute_s,bound_s,best_layout_bound_s,fixed_wall_s,fixed_bound_s
# Usage: gnuplot -e "data='compute.csv'; outdir='out'; subtitle='...'" plots/compute_bound.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

# Groups in order of first appearance; a group's runs spread a little either side of its x so that none hide.
# mode=points gives x,plan,fixed per run (fixed is NaN without --compare-default), mode=groups the tick labels,
# mode=count the number of groups.
layout = '{sub(/\r$/,"")} NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} \
  ($h["bound_s"]+0)>0 { g=$h["model"] " batch " $h["batch"]; if(!(g in x)){x[g]=++ng; name[ng]=g} \
    row[++n] = x[g] "," $h["rep"] "," $h["wall_s"]/$h["bound_s"] "," \
               (($h["fixed_wall_s"]+0)>0 ? $h["fixed_wall_s"]/$h["bound_s"] : "NaN"); reps[g]++ } \
  END{ if(mode=="points"){ print "x,plan,fixed"; \
         for(k=1;k<=n;k++){ split(row[k], f, ","); g=name[f[1]]; \
           printf "%.3f,%s,%s\n", f[1] + 0.08*(f[2] - (reps[g]+1)/2), f[3], f[4] } } \
       if(mode=="groups") for(j=1;j<=ng;j++) printf "\"%s\" %d, ", name[j], j; \
       if(mode=="count") print ng+0 }'
points = sprintf("< awk -F, -v mode=points '%s' '%s'", layout, data)
groups = system(sprintf("awk -F, -v mode=groups '%s' '%s'", layout, data))
if (strlen(groups) == 0) { print sprintf("%s: no rows with bound_s > 0 in %s", ARG0, data); exit status 1 }
ngroups = int(system(sprintf("awk -F, -v mode=count '%s' '%s'", layout, data)))
nfixed = count(data, num("fixed_wall_s") . '>0')

stats points using "plan" nooutput
ymax = STATS_max
if (nfixed > 0) { stats points using "fixed" nooutput; ymax = STATS_max > ymax ? STATS_max : ymax }

eval title('Serial training time against the FLOP bound of its GEMMs')
set ylabel 'wall time / FLOP bound of the planned kernels'
set logscale y
set yrange [0.9 : ymax * 1.15]
set ytics (1, 1.1, 1.25, 1.5, 2, 3, 4, 6, 8)
set xrange [0.4 : ngroups + 0.6]
eval sprintf('set xtics (%s) scale 0 font ",11" noenhanced', groups[1:strlen(groups) - 2])
set grid noxtics ytics
set key right top inside nobox
set label 3 'one point per run; 1 = the time of its GEMMs alone on the planned kernels, timed right after it' \
    at screen 0.01, screen 0.03 left font ',10' textcolor rgb '#666666'
set bmargin 4

eval png('compute_bound')
plot 1 with lines lc rgb '#333333' lw 1 dt 2 title 'the bound', \
     points using "x":"plan" with points lt 1 title 'per-shape kernel plan', \
     points using "x":"fixed" with points lt 2 title (nfixed > 0 ? 'one BLIS set for every shape' : '')
eval svg('compute_bound')
replot
eval done('compute_bound')
