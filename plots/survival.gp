# Who survives what (bench/survival_grid.sh): a heat map of test accuracy, one row per aggregator, one column per
# attack and F (the first column: no attacker); a cell train refused (too few ranks for that F) is grey with "-",
# a diverged run dark with "x"; a backdoor cell also prints its attack success rate.
# Input: survival.csv with attack,byzantine,aggregator,status,test_accuracy,backdoor_asr.
# Usage: gnuplot -e "data='survival.csv'; outdir='out'; subtitle='...'" plots/survival.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
# The cells, tics and counts from survival_cells.awk beside this script (value -1: refused, -2: diverged or failed).
awk_cells(what) = sprintf("awk -F, -v what=%s -f '%s/survival_cells.awk' '%s'", what, system(sprintf("dirname '%s'", ARG0)), data)
cells = '< ' . awk_cells('cells')
set datafile separator whitespace  # the cells are awk's, not the CSV
set datafile nocolumnheaders
columns = int(system(awk_cells('columns')))
rows = int(system(awk_cells('rows')))
eval sprintf("set xtics (%s) rotate by 60 right font ',9'", system(awk_cells('xtics')))
eval sprintf("set ytics (%s)", system(awk_cells('ytics')))
set xrange [-0.5:columns - 0.5]
set yrange [rows - 0.5:-0.5]
set cbrange [0:1]
set cblabel 'test accuracy after training'
set palette defined (0 '#67001f', 0.5 '#f4a582', 0.8 '#f7f7f7', 0.9 '#92c5de', 1 '#053061')
set grid noxtics noytics
set border 0
set tics scale 0
set bmargin 9
unset key
set style fill solid 1.0 noborder

do for [fmt in "png svg"] {
  if (fmt eq "png") { set terminal pngcairo size 1400,650 enhanced font 'DejaVu Sans,10'; set output outdir . '/survival.png' }
  if (fmt eq "svg") { set terminal svg size 1400,650 fixed enhanced font 'DejaVu Sans,10' background '#ffffff'; set output outdir . '/survival.svg' }
  eval title('Who survives what: test accuracy by aggregator and attack (backdoor cells: accuracy over attack success rate)')
  eval sub_label
  plot cells using 1:2:(0.5):(0.5):($3 >= 0 ? $3 : 1/0) with boxxyerror lc palette, \
       cells using 1:2:($3 == -1 ? 0.5 : 1/0):(0.5) with boxxyerror lc rgb '#bbbbbb', \
       cells using 1:2:($3 == -2 ? 0.5 : 1/0):(0.5) with boxxyerror lc rgb '#222222', \
       cells using 1:2:4 with labels font ',7' textcolor rgb '#000000'
}
eval done('survival')
