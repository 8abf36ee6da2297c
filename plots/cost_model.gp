# The cost model's extrapolation: predicted speedup over one worker against the number of workers p (log-log),
# one panel per model (rows) and link rate (columns), one line per method, and the ideal (speedup = p) dashed.
# Input: extrapolation.csv from bench/cluster/fit_cost_model.py
#   model,floats,link_gbps,alpha_us,beta_ns_per_byte,gamma_ns_per_byte,method,p,comm_us,compute_us,step_us,speedup,efficiency
# Usage: gnuplot -e "data='extrapolation.csv'; outdir='out'" plots/cost_model.gp
sub_max = 155         # 1400 pixels wide: the subtitle wraps later than on common.gp's 1000
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'
models = uniq(data, col("model"), '1')
links = uniqn(data, col("link_gbps"), '1')
methods = uniq(data, col("method"), '1')
if (words(models) == 0) { print sprintf("%s: no rows in %s", ARG0, data); exit status 1 }
alpha = system(sprintf("awk -F, 'NR==2{print $4}' '%s'", data))

set logscale xy 2
set format y '%g'
set xrange [1.5:1400]
set yrange [0.01:2048]
set logscale y 10
set xtics (2, 8, 32, 128, 512, 1024)
set key left top inside font ',8' samplen 2 spacing 1
sel(mo, l, me) = where(data, eq("model", mo) . ' && ' . num("link_gbps") . '==' . l . ' && ' . eq("method", me))

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1400,850 enhanced font 'DejaVu Sans,10'; set output outdir . '/cost_model.png' }
    if (fmt eq "svg") { set terminal svg size 1400,850 fixed enhanced font 'DejaVu Sans,10' background '#ffffff'; set output outdir . '/cost_model.svg' }
    eval title(sprintf("Predicted speedup over one worker (weak scaling, alpha = %s us)", alpha))
    eval sub_label
    set multiplot layout words(models), words(links) margins 0.06, 0.98, 0.07, (sub_lines == 2 ? 0.81 : 0.83) spacing 0.06, 0.1
    do for [r=1:words(models)] {
        do for [c=1:words(links)] {
            mo = word(models, r); l = word(links, c)
            set title sprintf("%s, %s Gbit/s", mo, l) noenhanced
            set xlabel (r == words(models) ? 'workers p' : '')
            set ylabel (c == 1 ? 'speedup' : '')
            if (r == 1 && c == 1) { set key left top inside font ',8' samplen 2 spacing 1 } else { unset key }
            plot for [i=1:words(methods)] sel(mo, l, word(methods, i)) using "p":"speedup" \
                     with linespoints lt i dt 1 + (strstrt(word(methods, i), '+overlap') > 0) ps 0.7 \
                     title word(methods, i), \
                 x with lines lc rgb '#999999' dt 2 lw 1 title 'ideal (speedup = p)'
            # Drawn once: a multiplot draws the labels again with every panel.
            unset label 98
            unset label 99
        }
    }
    unset multiplot
    unset output
    print sprintf('wrote %s/cost_model.%s', outdir, fmt)
}
