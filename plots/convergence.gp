# Per-step convergence of decentralized training: test accuracy (left) and consensus distance (right, log scale)
# against global steps, one line per method, one row per np. Gossip's accuracy is its ranks' mean model's.
# Input: epoch CSV with method,np,global_steps,test_accuracy,consensus_distance (bench/gossip_convergence.sh)
# Usage: gnuplot -e "data='epochs.csv'; outdir='out'; subtitle='...'" plots/convergence.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

methods = uniq(data, col("method"), '1')
nps = uniqn(data, col("np"), '1')
# Colour by method, the same in every panel; the allreduce (no consensus distance) draws only on the left.
sel(m, p) = where(data, eq("method", m) . ' && ' . eq("np", p))
rows = words(nps)

eval title('Denser graphs agree faster: accuracy and consensus distance per step')
eval png('convergence')
eval sub_label
set multiplot layout rows, 2 margins 0.08, 0.97, 0.09, (sub_lines == 2 ? 0.84 : 0.86) spacing 0.09, 0.12
do for [r=1:rows] {
  p = word(nps, r)
  set xlabel 'global steps'
  set ylabel sprintf('test accuracy (np = %s)', p)
  set yrange [*:*]
  set key right bottom inside font ',9'
  plot for [i=1:words(methods)] sel(word(methods, i), p) using "global_steps":"test_accuracy" \
       with linespoints lt i ps 0.6 title word(methods, i)
  # Drawn once: a multiplot draws the labels again with every panel.
  unset label 98
  unset label 99
  set ylabel sprintf('consensus distance (np = %s)', p)
  set logscale y
  set yrange [*:*]
  unset key
  plot for [i=1:words(methods)] sel(word(methods, i), p) using "global_steps":"consensus_distance" \
       with linespoints lt i ps 0.6 notitle
  unset logscale y
}
unset multiplot
eval svg('convergence')
eval title('Denser graphs agree faster: accuracy and consensus distance per step')
eval sub_label
set multiplot layout rows, 2 margins 0.08, 0.97, 0.09, (sub_lines == 2 ? 0.84 : 0.86) spacing 0.09, 0.12
do for [r=1:rows] {
  p = word(nps, r)
  set ylabel sprintf('test accuracy (np = %s)', p)
  set yrange [*:*]
  set key right bottom inside font ',9'
  plot for [i=1:words(methods)] sel(word(methods, i), p) using "global_steps":"test_accuracy" \
       with linespoints lt i ps 0.6 title word(methods, i)
  # Drawn once: a multiplot draws the labels again with every panel.
  unset label 98
  unset label 99
  set ylabel sprintf('consensus distance (np = %s)', p)
  set logscale y
  set yrange [*:*]
  unset key
  plot for [i=1:words(methods)] sel(word(methods, i), p) using "global_steps":"consensus_distance" \
       with linespoints lt i ps 0.6 notitle
  unset logscale y
}
unset multiplot
eval done('convergence')
