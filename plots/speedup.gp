# Speedup over the serial run vs number of MPI processes, one line per method, plus ideal y = x.
# Input: scaling CSV  method,np,workers,oversubscribed,wall_s,speedup,efficiency,compute_s,sync_s,steps,test_accuracy
# Usage: gnuplot -e "data='scaling.csv'; outdir='out'; subtitle='host - date'" plots/speedup.gp
load system(sprintf("dirname '%s'", ARG0)) . '/common.gp'

methods = uniq(data, col("method"), col("method") . '!="serial"')
has_serial = count(data, eq("method", "serial")) > 0
maxnp = real(system(sprintf("awk -F, '%s{if(%s>m)m=%s} END{print m+0}' '%s'", awk_hdr(0), num("np"), num("np"), data)))
stats data using "speedup" nooutput
ymax = (STATS_max > maxnp ? STATS_max : maxnp) * 1.08

# With more ranks than cores the ranks time-share the CPUs, so those timings say little about the
# method: shade that region and draw its points open and dashed, so nobody reads them as results.
ov_cond = num("oversubscribed") . '==1'
ovnp = count(data, ov_cond) > 0 ? \
       real(system(sprintf("awk -F, '%s(%s){if(m==\"\"||%s<m)m=%s} END{print m}' '%s'", awk_hdr(0), ov_cond, num("np"), num("np"), data))) : 0
ov_text = 'oversubscribed (np > cores): not honest timing'
if (ovnp > 0) {
    set object 1 rect from ovnp - 0.5, graph 0 to graph 1, graph 1 behind fc rgb '#f0f0f0' fs solid noborder
    set label 1 ov_text at ovnp - 0.4, graph 0.97 left font ',10' textcolor rgb '#666666' noenhanced
}

eval title('Training speedup vs number of processes')
set xlabel 'MPI processes (np; parameter-server runs count the server rank)'
set ylabel 'speedup over serial wall time (x)'
set xrange [0.5 : maxnp + 0.5]
set xtics 1
set yrange [0 : ymax]
set key left top inside title 'method'

sel(m, cond) = where(data, eq("method", m) . ' && ' . cond)
eval png('speedup')
plot x with lines dt 3 lc rgb '#555555' lw 1.5 title 'ideal (y = x)', \
     for [i=1:words(methods)] sel(word(methods, i), '1') using "np":"speedup" smooth unique \
         with lines dt 2 lw 1.5 lt i notitle, \
     for [i=1:words(methods)] sel(word(methods, i), num("oversubscribed") . '==0') using "np":"speedup" \
         smooth unique with linespoints lt i title word(methods, i), \
     for [i=1:words(methods)] sel(word(methods, i), ov_cond) using "np":"speedup" \
         with points pt 6 ps 1.5 lw 2 lt i notitle, \
     where(data, eq("method", "serial")) using "np":"speedup" with points pt 5 ps 1.5 lc rgb '#000000' title (has_serial ? 'serial (baseline)' : ''), \
     NaN with linespoints dt 2 pt 6 ps 1.5 lc rgb '#555555' title (ovnp > 0 ? 'oversubscribed (see shading)' : '')
eval svg('speedup')
replot
eval done('speedup')
