# The winners map (plots/winners.py writes its grid): a row per network view and p, a cell per message size measured
# there (on a log2 axis, as wide as the row's step between sizes), coloured by the fastest method, with
# MPI_Allreduce's time over the winner's written in it.
# Variables: data (winners.csv; the grid is winners_grid.csv beside it), outdir, subtitle, methods (the winners, in
# colour order).
load 'plots/common.gp'
grid = data[1:strlen(data) - 4] . '_grid.csv'
rows = int(system(sprintf("awk -F, 'NR > 1 && !s[$6]++' '%s' | wc -l", grid)))

eval title('Which allreduce wins, by message size and network')
set xrange [0:28]
set yrange [-0.5:rows - 0.5]
set xtics out nomirror ('4 B' 2, '64 B' 6, '1 KiB' 10, '16 KiB' 14, '256 KiB' 18, '4 MiB' 22, '64 MiB' 26)
set ytics out nomirror () noenhanced
do for [j = 0:rows - 1] {
  set ytics add (system(sprintf("awk -F, 'NR > 1 && $2 == %d {print $6; exit}' '%s'", j, grid)) j)
}
unset grid
set xlabel "message size (in a cell: MPI\\_Allreduce's time over the winner's; mpi: MPI wins or ties within 2 %)"
set key outside bottom center horizontal
set style fill solid 0.9 border rgb 'white'
set lmargin 34
height = 140 + 44 * rows + 90
set terminal pngcairo size 1200, height enhanced font 'DejaVu Sans,10'
set output outdir . '/winners.png'
plot for [i = 1:words(methods)] grid using 1:($4 == i ? $2 : NaN):3:(0.48) with boxxy lt i title word(methods, i), \
     grid using 1:2:5 with labels font ',8' textcolor rgb 'white' notitle
set terminal svg size 1200, height fixed enhanced font 'DejaVu Sans,10' background '#ffffff'
set output outdir . '/winners.svg'
replot
eval done('winners')
