# The decentralized winners map (plots/decentralized_map.py writes its grid): a row per view of the network, a
# column per method, each cell coloured by log2 of the method's time over the ring allreduce's (green faster, red
# slower) with the ratio written in it, the row's fastest outlined.
# Variables: data (decentralized_map.csv; the grid is decentralized_map_grid.csv beside it), outdir, subtitle,
# columns, rows, xt and yt (the tic lists).
load 'plots/common.gp'
grid = data[1:strlen(data) - 4] . '_grid.csv'
eval title('Which way of training is fastest, by view of the network (time over the ring allreduce)')
set xrange [-0.5:columns - 0.5]
set yrange [-0.5:rows - 0.5]
eval 'set xtics out nomirror rotate by 30 right (' . xt . ')'
eval 'set ytics out nomirror (' . yt . ')'
set ytics noenhanced
set xtics noenhanced
unset grid
unset key
set cbrange [-3:3]
set cbtics ('1/8' -3, '1/4' -2, '1/2' -1, '1' 0, '2' 1, '4' 2, '8' 3)
set cblabel 'time over the ring allreduce (log scale)'
set palette defined (-3 '#1a9850', -1 '#a6d96a', 0 '#f7f7f7', 1 '#fdae61', 3 '#d73027')
set style fill solid 1.0 border rgb 'white'
set lmargin 36
set bmargin 7
height = 160 + 46 * rows + 120
set terminal pngcairo size 1300, height enhanced font 'DejaVu Sans,10'
set output outdir . '/decentralized_map.png'
plot grid using 1:2:(0.5):(0.5):($3 > 3 ? 3 : ($3 < -3 ? -3 : $3)) with boxxy lc palette, \
     grid using 1:($5 == 1 ? $2 : NaN):(0.47):(0.47) with boxxy fs empty border rgb '#000000' lw 3 lc rgb '#000000', \
     grid using 1:2:4 with labels font ',9'
set terminal svg size 1300, height fixed enhanced font 'DejaVu Sans,10' background '#ffffff'
set output outdir . '/decentralized_map.svg'
replot
eval done('decentralized_map')
