# Shared by every chart script: `load`ed first, never run on its own (inside it ARG0 names this file).
# Variables the caller may set with -e "name='value'":
#   data      input CSV (required)
#   outdir    where PNG and SVG go (default plots/out)
#   subtitle  machine and date line under the title (default: host name and today)
#   cores     cores of the machine that ran the measurement (default: this machine's nproc)

if (!exists("data")) {
    print "usage: gnuplot -e \"data='FILE.csv'; outdir='DIR'; subtitle='...'; cores=N\" plots/CHART.gp"
    exit status 2
}
if (system(sprintf("test -r '%s' && echo ok", data)) ne "ok") {
    print sprintf("cannot read data file '%s'", data)
    exit status 2
}
if (!exists("outdir")) outdir = 'plots/out'
if (!exists("subtitle")) subtitle = system("uname -n") . ' - ' . strftime("%Y-%m-%d", time(0))
if (!exists("cores")) cores = int(system("nproc"))
system(sprintf("mkdir -p '%s'", outdir))

set datafile separator ','
set datafile columnheaders      # so `using "wall_s"` finds columns by name, whatever their order
set print '-'                   # make_charts.sh collects the "wrote" lines from stdout

# --- Row selection ------------------------------------------------------------------------------
# gnuplot breaks lines at NaN, so a ternary filter in `using` leaves gaps; instead each series reads
# a pipe through awk that keeps the header (column names still work) and the rows matching `cond`.
# `cond` is an awk pattern over named fields, built with col()/eq()/num() below.
# A selection with no rows yields one all-NaN row: gnuplot then draws nothing without warning.
awk_hdr(keep) = '{sub(/\r$/,"")} NR==1{for(i=1;i<=NF;i++)h[$i]=i; hn=NF;' . (keep ? ' print;' : '') . ' next} '
awk_nan = ' END{if(!n){s="NaN"; for(i=2;i<=hn;i++)s=s",NaN"; print s}}'
col(c)     = sprintf('$h["%s"]', c)
num(c)     = sprintf('(%s+0)', col(c))
eq(c, v)   = sprintf('%s=="%s"', col(c), v)
# wherex runs awk action `act` on each matching row (e.g. to insert line breaks); where just prints.
wherex(f, cond, act) = sprintf("< awk -F, '%s(%s){n++; %s}%s' '%s'", awk_hdr(1), cond, act, awk_nan, f)
where(f, cond) = wherex(f, cond, 'print')
# Distinct values of awk expression `x` over rows matching `cond`, space separated, in order of first
# appearance (uniq) or numerically sorted (uniqn); the series of a chart are not known in advance.
uniq_cmd(f, x, cond) = sprintf("awk -F, '%s(%s) && !seen[%s]++ {print %s}' '%s'", awk_hdr(0), cond, x, x, f)
uniq(f, x, cond)  = system(uniq_cmd(f, x, cond) . " | tr '\\n' ' '")
uniqn(f, x, cond) = system(uniq_cmd(f, x, cond) . " | sort -g | tr '\\n' ' '")
count(f, cond) = int(system(sprintf("awk -F, '%s(%s){n++} END{print n+0}' '%s'", awk_hdr(0), cond, f)))

# --- Look ------------------------------------------------------------------------------------
# Colour-blind safe (Okabe-Ito + greys); gnuplot's default yellow is unreadable on white. Four darker hues from Paul
# Tol's sets (wine, indigo, olive, brown) follow, so a chart of a dozen series repeats no colour.
array PAL[12] = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#999999', \
                 '#882255', '#332288', '#999933', '#8C564B']
array PT[12] = [7, 5, 9, 11, 13, 15, 7, 5, 9, 11, 13, 15]  # filled circle, square, triangles, diamond, pentagon
do for [i=1:12] { set linetype i lc rgb PAL[i] lw 2 pt PT[i] ps 1.2 dt 1 }
set linetype cycle 12
set style line 100 lc rgb '#e3e3e3' lw 1 dt 1
set grid back ls 100, ls 100
set key box opaque reverse Left samplen 3 spacing 1.2 noenhanced
set border 3 back
set tics nomirror out
# Title and, under it, the machine and date the chart describes, as fixed labels rather than
# `set title` so the two lines never collide. noenhanced: CPU names contain '@' and '_'.
# Usage: eval title('Chart name')
# A subtitle too long for the width (a host.txt line names the CPU, its vector units, its peak and the time) would be
# cut off at both edges: past sub_max characters it breaks at the ", " (else the space) nearest its middle into two
# lines, and the title moves up to make room. sub_lines tells scripts that place their own top margin.
set tmargin 5
if (!exists("sub_max")) sub_max = 110
sub_lines = 1
if (strlen(subtitle) > sub_max) {
    sub_mid = strlen(subtitle) / 2.0
    sub_at = 0
    do for [i=2:strlen(subtitle)-2] {
        if (subtitle[i:i+1] eq ', ' && abs(i - sub_mid) < abs(sub_at - sub_mid)) { sub_at = i }
    }
    if (sub_at > 0) {
        subtitle = subtitle[1:sub_at] . "\n" . subtitle[sub_at+2:]
    } else {
        do for [i=2:strlen(subtitle)-1] {
            if (subtitle[i:i] eq ' ' && abs(i - sub_mid) < abs(sub_at - sub_mid)) { sub_at = i }
        }
        if (sub_at > 0) { subtitle = subtitle[1:sub_at-1] . "\n" . subtitle[sub_at+1:] }
    }
    sub_lines = sub_at > 0 ? 2 : 1
}
title_y = sub_lines == 2 ? 0.968 : 0.955
title(t) = sprintf("set label 98 \"%s\" at screen 0.5, screen %g center noenhanced font ',14'", t, title_y)
# A label of two lines hangs its second line below the position given. A multiplot draws the labels once per
# panel: it unsets 98 and 99 after the first and sets them again with eval title(...) and eval sub_label.
sub_label = "set label 99 subtitle at screen 0.5, screen (sub_lines == 2 ? 0.925 : 0.905) center noenhanced font ',10' textcolor rgb '#444444'"
eval sub_label

# --- Output: the same plot as PNG and SVG ------------------------------------------------------
# Usage: eval png('name'); plot ...; eval svg('name'); replot; eval done('name')
png(n)  = sprintf("set terminal pngcairo size 1000,600 enhanced font 'DejaVu Sans,11'; set output '%s/%s.png'", outdir, n)
svg(n)  = sprintf("set terminal svg size 1000,600 fixed enhanced font 'DejaVu Sans,11' background '#ffffff'; set output '%s/%s.svg'", outdir, n)
done(n) = sprintf("unset output; print 'wrote %s/%s.png'; print 'wrote %s/%s.svg'", outdir, n, outdir, n)
