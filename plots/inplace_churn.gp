# Steps per second through churn (bench/inplace_churn.sh): each epoch's training rate against the run's training
# time, the failure-free run beside the run that lost a rank every third epoch and took a successor for it; the
# failures are marked where the epochs they interrupted begin.
# Input: epoch CSV with method,np,elapsed_s,images_per_s,global_steps; `method` (the plain run's name, the churn
# run's is method+churn) and `per_epoch` (steps an epoch) set with -e.
# Usage: gnuplot -e "data='epochs.csv'; outdir='out'; method='ring'; per_epoch=N; subtitle='...'" plots/inplace_churn.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
if (!exists("method")) method = 'ring'
if (!exists("per_epoch")) per_epoch = 1
churn = method . '+churn'
rate = 'column("images_per_s") / (column("np") * 32)'
# The epochs at whose end a rank was killed: every third, from the third on.
kill_rows = where(data, eq("method", churn) . sprintf(' && %s %% %d == 0', num("global_steps"), 3 * per_epoch))

do for [fmt in "png svg"] {
  eval (fmt eq "png" ? png('steps_per_s') : svg('steps_per_s'))
  eval title('Training through a lost rank every 30 s: steps per second, each loss replaced by a successor')
  eval sub_label
  set xlabel 'training time (s)'
  set ylabel 'steps per second (an epoch each point)'
  set yrange [0:*]
  set key right bottom inside
  plot where(data, eq("method", method)) using "elapsed_s":(@rate) with linespoints lt 1 ps 0.6 title method . ', no failures', \
       where(data, eq("method", churn)) using "elapsed_s":(@rate) with linespoints lt 2 ps 0.6 title method . ', a rank lost and replaced every 30 s', \
       kill_rows using "elapsed_s":(0) with impulses lt 7 lw 1 notitle, \
       kill_rows using "elapsed_s":(0) with points pt 9 ps 1.2 lt 7 title 'a rank killed'
}
