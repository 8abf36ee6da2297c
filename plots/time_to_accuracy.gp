# Test accuracy vs wall-clock time, one line per (method, np): which method reaches a given accuracy first.
# Input: epoch CSV  method,np,epoch,elapsed_s,test_accuracy,train_loss
# Usage: gnuplot -e "data='epochs.csv'; outdir='out'; subtitle='...'" plots/time_to_accuracy.gp
# Optional: target=0.97 draws that accuracy as a horizontal line.
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

# A method may run at several np; each (method, np) pair is its own line, keyed "method@np".
series = uniq(data, col("method") . ' "@" ' . col("np"), '1')
at(s) = strstrt(s, '@')
smethod(s) = s[1 : at(s) - 1]
snp(s) = s[at(s) + 1 :]
# np > cores time-shares the CPUs: dashed and said so in the key, as in the other charts.
over(s) = snp(s) + 0 > cores
dash(s) = over(s) ? 2 : 1
# Eight colours (common.gp); series 9 onwards take them again with another dash and mark, so no two lines look alike.
dash_of(i, s) = i > 8 ? (over(s) ? 5 : 4) : dash(s)
key_of(s) = sprintf('%s (np=%s%s)', smethod(s), snp(s), over(s) ? '*' : '')

# Accuracy is a fraction in the CSVs; accept percentages too rather than draw 9700 %.
stats data using "test_accuracy" nooutput
pct = STATS_max > 1.5 ? 1 : 100

eval title('Time to accuracy: test accuracy vs training time')
set xlabel 'elapsed wall-clock time (s)'
set ylabel 'test accuracy (%)'
set xrange [0:*]
# Below the plot: with a dozen runs a key inside covers the curves it names.
set key at screen 0.5, screen 0.01 center bottom horizontal maxcols 3 title 'method (MPI processes; * more than the cores: oversubscribed, dashed)' font ',9'
set bmargin 12
if (exists("target")) { set arrow 1 from graph 0, first target * pct to graph 1, first target * pct nohead dt 3 lw 1.5 lc rgb '#555555' front
                        set label 3 sprintf('target %g %%', target * pct) at graph 0.01, first target * pct offset 0, 0.6 font ',10' }

# An appended second run of the same series restarts at epoch 1: break the line there (blank line)
# instead of drawing a stroke back to the start.
sel(s) = wherex(data, eq("method", smethod(s)) . ' && ' . eq("np", snp(s)), \
                'e=' . num("epoch") . '; if(n>1 && e<=last) print ""; last=e; print')
eval png('time_to_accuracy')
plot for [i=1:words(series)] sel(word(series, i)) using "elapsed_s":(column("test_accuracy") * pct) \
         with linespoints lt i dt dash_of(i, word(series, i)) pt (i > 8 ? 4 + 2 * (i - 8) : PT[i]) \
         title key_of(word(series, i))
eval svg('time_to_accuracy')
replot
eval done('time_to_accuracy')
