# Test accuracy vs wall-clock time, one line per (method, np): which method reaches a given accuracy first.
# Input: epoch CSV  method,np,epoch,elapsed_s,test_accuracy,train_loss
# Usage: gnuplot -e "data='epochs.csv'; outdir='out'; subtitle='...'" plots/time_to_accuracy.gp
# Optional: target=0.97 draws that accuracy as a horizontal line.
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

# A method may run at several np; each (method, np) pair is its own line, keyed "method@np".
series = uniq(data, col("method") . ' "@" ' . col("np"), '1')
methods = uniq(data, col("method"), '1')
at(s) = strstrt(s, '@')
smethod(s) = s[1 : at(s) - 1]
snp(s) = s[at(s) + 1 :]
# Colour and mark name the method (twelve before one repeats: common.gp), the line names the kind of run: solid for
# np 2 up to the cores, dashed with open marks for one rank, dash-dotted for np > cores (the ranks time-share the
# CPUs). A kind that is the only one present is drawn solid: the key's '*' still says oversubscribed.
midx(s) = int(system(sprintf("echo '%s' | tr ' ' '\\n' | grep -nxF -- '%s' | cut -d: -f1", methods, smethod(s))))
over(s) = snp(s) + 0 > cores
kind(s) = over(s) ? 3 : (snp(s) + 0 == 1 ? 2 : 1)
kinds = system(sprintf("awk -F, '%s{k=($h[\"np\"]+0>%d)?3:($h[\"np\"]+0==1?2:1); if(!s[k]++)n++} END{print n+0}' '%s'", awk_hdr(0), cores, data)) + 0
dash_of(s) = kinds < 2 ? 1 : (kind(s) == 2 ? 2 : kind(s) == 3 ? 4 : 1)
pt_of(s) = PT[(midx(s) - 1) % 12 + 1] - (kinds >= 2 && kind(s) == 2 ? 1 : 0)
key_of(s) = sprintf('%s (np=%s%s)', smethod(s), snp(s), over(s) ? '*' : '')

# Accuracy is a fraction in the CSVs; accept percentages too rather than draw 9700 %.
stats data using "test_accuracy" nooutput
pct = STATS_max > 1.5 ? 1 : 100

eval title('Time to accuracy: test accuracy vs training time')
set xlabel 'elapsed wall-clock time (s)'
set ylabel 'test accuracy (%)'
set xrange [0:*]
# Right of the plot: with a dozen runs a key inside covers the curves it names.
set key outside right top vertical Left reverse nobox samplen 3 spacing 1.1 font ',9' title 'method (MPI processes)'
nover = count(data, num("np") . '>' . cores)
if (exists("target")) { set arrow 1 from graph 0, first target * pct to graph 1, first target * pct nohead dt 3 lw 1.5 lc rgb '#555555' front
                        set label 3 sprintf('target %g %%', target * pct) at graph 0.99, first target * pct offset 0, -0.7 right font ',10' }

# An appended second run of the same series restarts at epoch 1: break the line there (blank line)
# instead of drawing a stroke back to the start.
sel(s) = wherex(data, eq("method", smethod(s)) . ' && ' . eq("np", snp(s)), \
                'e=' . num("epoch") . '; if(n>1 && e<=last) print ""; last=e; print')
eval png('time_to_accuracy')
plot for [i=1:words(series)] sel(word(series, i)) using "elapsed_s":(column("test_accuracy") * pct) \
         with linespoints lt midx(word(series, i)) dt dash_of(word(series, i)) pt pt_of(word(series, i)) \
         title key_of(word(series, i)), \
     for [k=1:(kinds >= 2)] keyentry with lines lc rgb '#ffffff' title ' ', \
     for [k=1:(kinds >= 2)] keyentry with linespoints dt 1 pt 7 lc rgb '#555555' title (cores > 2 ? sprintf('np 2-%d: solid', cores) : 'np 2: solid'), \
     for [k=1:(kinds >= 2 && count(data, num("np") . '==1') > 0)] keyentry with linespoints dt 2 pt 6 lc rgb '#555555' \
         title 'one rank: dashed', \
     for [k=1:(kinds >= 2 && nover > 0)] keyentry with linespoints dt 4 pt 7 lc rgb '#555555' \
         title 'np > cores: dash-dot', \
     for [k=1:(nover > 0)] keyentry with lines lc rgb '#ffffff' title sprintf('* np > %d cores: oversubscribed', cores)
eval svg('time_to_accuracy')
replot
eval done('time_to_accuracy')
