# The all-views figure (plots/all_views.py writes its data): a panel per view of the network, each method's time over
# MPI_Allreduce's against the message size, both axes logarithmic, a line at 1 (MPI_Allreduce itself). Every panel
# shares the y range, so a ratio reads the same across views; each panel's title names its source, CPU and date.
# Variables: data (all_views.csv), outdir, subtitle, methods (colour order), panels (how many), and per panel i
# viewI, sourceI, cpuI, dateI (all_views.py passes them).
sub_max = 170          # the figure is 1500 pixels wide: a subtitle wraps later than on common.gp's 1000
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

hb(b) = b >= 2**20 ? sprintf("%.0f MiB", b / 2.0**20) : b >= 2**10 ? sprintf("%.0f KiB", b / 2.0**10) : sprintf("%.0f B", b)
stats data using "ratio" nooutput
# Whole decades around every ratio, at least 0.5 to 2, so that a panel of near-ties does not look like a spread.
ylo = 10**floor(log10(STATS_min < 0.5 ? STATS_min : 0.5))
yhi = 10**ceil(log10(STATS_max > 2 ? STATS_max : 2))

figure_title = 'Every allreduce method against MPI_Allreduce: one node, emulated hosts, a simulated fat tree'
w = 1500
h = 660
# Panels side by side between x0 and x1, from the key's strip at the foot up to `top`, under the figure's title and
# subtitle and the panels' three-line titles.
x0 = 0.055
x1 = 0.99
gap = 0.045
pw = (x1 - x0 - (panels - 1) * gap) / panels
top = 0.75
foot = 0.2
do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size w, h enhanced font 'DejaVu Sans,10'; set output outdir . '/all_views.png' }
    if (fmt eq "svg") { set terminal svg size w, h fixed enhanced font 'DejaVu Sans,10' background '#ffffff'; set output outdir . '/all_views.svg' }
    eval title(figure_title)
    eval sub_label
    set multiplot
    set logscale xy
    set format y '%g'
    set yrange [ylo : yhi]
    set mytics 10
    set grid xtics ytics back ls 100, ls 100
    set border 3 back
    set tics nomirror out
    set key off
    set tmargin at screen top
    set bmargin at screen foot
    do for [p=1:panels] {
        set lmargin at screen x0 + (p - 1) * (pw + gap)
        set rmargin at screen x0 + (p - 1) * (pw + gap) + pw
        sel(m) = where(data, num("panel") . '==' . p . ' && ' . eq("method", m))
        # awk, not stats: stats leaves out what lies outside the axes' current ranges.
        brange = system(sprintf("awk -F, '%s%s==%d{b=%s; if(lo==\"\"||b<lo)lo=b; if(b>hi)hi=b} END{print lo, hi}' '%s'", \
                                awk_hdr(0), num("panel"), p, num("bytes"), data))
        emin = floor(log(real(word(brange, 1))) / log(2) + 1e-9)
        emax = ceil(log(real(word(brange, 2))) / log(2) - 1e-9)
        estep = 2 * ceil((emax - emin) / 12.0)
        set xrange [2.0**emin / 1.6 : 2.0**emax * 1.6]
        set xtics () rotate by 30 right font ',9'
        do for [e=emin:emax:estep] { set xtics add (hb(2**e) 2.0**e) }
        set mxtics default
        np = system(sprintf("awk -F, '%s%s==%d{print %s; exit}' '%s'", awk_hdr(0), num("panel"), p, col("np"), data))
        set title sprintf("%s (p = %s)\n%s\n%s, %s", value(sprintf('view%d', p)), np, value(sprintf('source%d', p)), \
                          value(sprintf('cpu%d', p)), value(sprintf('date%d', p))) font ',9' noenhanced
        set xlabel 'message size' offset 0, 0.3
        set ylabel (p == 1 ? "time over MPI\\_Allreduce's (below 1: faster)" : '')
        plot 1 with lines dt 2 lw 1.5 lc rgb '#000000' notitle, \
             for [i=1:words(methods)] sel(word(methods, i)) using "bytes":"ratio" with linespoints lt i notitle
        unset label 98
        unset label 99
    }
    # One key for every panel: an empty plot across the foot of the figure.
    unset title
    unset xlabel
    unset ylabel
    unset logscale
    unset grid
    unset border
    unset tics
    set xrange [0:1]
    set yrange [0:1]
    set lmargin at screen 0.1
    set rmargin at screen 0.9
    set tmargin at screen 0.07
    set bmargin at screen 0.0
    set key center center horizontal nobox maxrows 1 font ',10' samplen 3 width 0
    plot for [i=1:words(methods)] NaN with linespoints lt i title word(methods, i), \
         NaN with lines dt 2 lw 1.5 lc rgb '#000000' title 'MPI_Allreduce (= 1)'
    unset multiplot
}
eval done('all_views')
