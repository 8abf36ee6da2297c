# One bar per training run: wall time split into compute, communication and the rest, test accuracy on top.
# It is the one chart a plain `train --csv` run (no scaling driver) can feed.
# Input: train CSV  sync,model,dataset,np,workers,epochs,batch,lr,seed,wall_s,compute_s,comm_s,train_loss,test_accuracy,images_per_s
# Usage: gnuplot -e "data='train.csv'; outdir='out'; subtitle='...'; cores=2" plots/train_time.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

stats data using "wall_s" nooutput
nrun = STATS_records
wmax = STATS_max
stats data using "test_accuracy" nooutput
pct = STATS_max > 1.5 ? 1 : 100

# Bars are in file order (runs are appended); '*' marks np > cores as in the other charts.
tic(x) = sprintf("%s\nnp=%s%s", strcol("sync"), strcol("np"), column("np") > cores ? '*' : '')
cc(x) = column("compute_s") + column("comm_s")

eval title('Training runs: where the wall time goes')
set ylabel 'training wall time (s, test evaluation excluded)'
set xrange [0.4 : nrun + 0.6]
set yrange [0 : wmax * 1.2]
set xtics scale 0 font ',10' noenhanced
set grid noxtics ytics
set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.7
set key left top inside horizontal width -4 nobox
set bmargin 5
if (count(data, num("np") . '>' . cores) > 0) {
    set label 2 '* oversubscribed (np > cores): not honest timing' at screen 0.99, screen 0.03 right font ',10' textcolor rgb '#666666'
}
set label 3 'label above bar: test accuracy' at screen 0.01, screen 0.03 left font ',10' textcolor rgb '#666666'

eval png('train_time')
# Drawn back to front, each box covering the one before: a stack of compute | comm | rest.
plot keyentry with boxes lt 1 title 'compute', \
     keyentry with boxes lt 2 title 'communication (sync)', \
     keyentry with boxes lc rgb '#bbbbbb' title 'other (wall - compute - comm)', \
     data using ($0 + 1):"wall_s" with boxes lc rgb '#bbbbbb' notitle, \
     data using ($0 + 1):(cc(0)) with boxes lt 2 notitle, \
     data using ($0 + 1):"compute_s":xtic(tic(0)) with boxes lt 1 notitle, \
     data using ($0 + 1):(column("wall_s") > cc(0) ? column("wall_s") : cc(0)):(sprintf('%.2f%%', column("test_accuracy") * pct)) \
         with labels offset 0, 0.7 font ',9' notitle
eval svg('train_time')
replot
eval done('train_time')
