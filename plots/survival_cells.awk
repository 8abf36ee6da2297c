# survival.csv (bench/survival_grid.sh) as plots/survival.gp reads it. Columns (attack and F) and rows (aggregators,
# the name before ':') are numbered from 0 in order of first appearance, the driver's order.
#   awk -F, -v what=cells -f survival_cells.awk survival.csv   x y value label, one line a cell: value the accuracy,
#                                                              -1 for a refusal, -2 for a divergence or failure
#   ... -v what=xtics / what=ytics                            gnuplot's tic list: "label" n, ...
#   ... -v what=columns / what=rows                           how many
BEGIN { nk = 0; na = 0 }
NR == 1 { next }
{
  key = $1 "|" $2
  agg = $3
  sub(/:.*/, "", agg)
  if (!(key in kx)) { kx[key] = nk; xl[nk] = $1 == "none" ? "no attack" : $1 " F=" $2; nk++ }
  if (!(agg in ay)) { ay[agg] = na; yl[na] = agg; na++ }
  if (what == "cells") {
    value = $4 == "ok" ? $5 : $4 == "refused" ? -1 : -2
    label = $4 == "ok" ? sprintf("%.2f", $5) : $4 == "refused" ? "-" : "x"
    if ($4 == "ok" && $6 != "") label = label "/" sprintf("%.2f", $6)
    printf "%d %d %s \"%s\"\n", kx[key], ay[agg], value, label
  }
}
END {
  if (what == "xtics") for (i = 0; i < nk; i++) printf "%s\"%s\" %d", i ? ", " : "", xl[i], i
  if (what == "ytics") for (i = 0; i < na; i++) printf "%s\"%s\" %d", i ? ", " : "", yl[i], i
  if (what == "columns") print nk
  if (what == "rows") print na
}
