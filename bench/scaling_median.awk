# bench/scaling.sh's reduction of its runs: train.csv (a row per run) and host_state.csv (the cross-core probes
# around each) to scaling.csv on stdout, one row per (method, np) (the columns: scaling.sh's header). Loaded after
# scripts/host_state.awk, host_state.csv first:
#   awk -F, -v ncores=N -v hostfile=F -v rows=R -v runlist=FILE -v oddlist=FILE \
#     -f scripts/host_state.awk -f bench/scaling_median.awk host_state.csv train.csv
# The median wall time of the runs in the state most of them saw (host_state.awk's majority): a run in another
# state goes to oddlist, one line each, not into the median. Compute, sync and accuracy come from the same median
# run (the mean of the two middle runs for an even count), so compute + sync never exceeds the wall time shown with
# them; runlist gets each row's median run (its train.csv data row), in scaling.csv's order. rows: MNIST's
# training images, for the steps column; ncores and hostfile: whether a point was oversubscribed.
# host_state.csv: the probes around each train.csv row.
NR == FNR {
  if (FNR == 1) next
  pb[$1] = $5; pa[$1] = $6; prep[$1] = $4; ref = ref_update(ref_update(ref, $5), $6)
  next
}
FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{
  m = $c["sync"]; k = m SUBSEP $c["np"]
  if (!(m in seen)) { seen[m] = 1; order[++nm] = m }
  if (!(k in cnt)) nplist[m] = nplist[m] " " $c["np"]
  j = ++cnt[k]
  run[k, j] = FNR - 1; wall[k, j] = $c["wall_s"]; comp[k, j] = $c["compute_s"]; sync[k, j] = $c["comm_s"]; acc[k, j] = $c["test_accuracy"]
  state[k, j] = (FNR - 1) in pb ? run_state(pb[FNR - 1], pa[FNR - 1], ref) : "unprobed"
  workers[k] = $c["workers"]; steps[k] = $c["epochs"] * int(rows / ($c["batch"] * $c["workers"]))
}
function median(k,   n, a, b, i, j, t, idx, st) {
  for (i = 1; i <= cnt[k]; i++) st[i] = state[k, i]
  med_state = majority(st, cnt[k]); n = 0; wmin = ""; wmax = ""
  for (i = 1; i <= cnt[k]; i++) {
    if (wmin == "" || wall[k, i] + 0 < wmin) wmin = wall[k, i] + 0
    if (wmax == "" || wall[k, i] + 0 > wmax) wmax = wall[k, i] + 0
    if (state[k, i] == med_state) idx[++n] = i
  }
  for (i = 2; i <= n; i++)
    for (j = i; j > 1 && wall[k, idx[j]] + 0 < wall[k, idx[j - 1]] + 0; j--) { t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t }
  a = idx[int((n + 1) / 2)]; b = idx[int(n / 2) + 1]
  med_wall = (wall[k, a] + wall[k, b]) / 2; med_comp = (comp[k, a] + comp[k, b]) / 2
  med_sync = (sync[k, a] + sync[k, b]) / 2; med_acc = (acc[k, a] + acc[k, b]) / 2
  med_run = run[k, a]; med_n = n
}
# The runs median(k) left out, one line each in oddlist.
function list_odd(k, m, np,   i, r) {
  for (i = 1; i <= cnt[k]; i++) {
    if (state[k, i] == med_state) continue
    r = run[k, i]
    printf "%s np=%d rep %s saw %s (xcore 1 MiB %s us before, %s us after; fast: up to %.0f us): wall %.2f s, " \
           "left out of the median of %d run(s) in the %s state\n", m, np, prep[r], seen_as(state[k, i]), pb[r], pa[r],
           2 * ref, wall[k, i], med_n, med_state > oddlist
  }
}
END {
  if (!(("serial" SUBSEP 1) in cnt)) { print "scaling.sh: no serial row in train.csv" > "/dev/stderr"; exit 1 }
  median("serial" SUBSEP 1); base = med_wall
  print "method,np,workers,oversubscribed,wall_s,speedup,efficiency,compute_s,sync_s,steps,test_accuracy,wall_min_s,wall_max_s,runs,left_out,host_state"
  printf "" > oddlist
  # serial first, then each method in order of first appearance with its np ascending.
  order[0] = "serial"
  for (o = 0; o <= nm; o++) {
    m = order[o]
    if (o > 0 && m == "serial") continue
    n = split(nplist[m], v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    for (i = 1; i <= n; i++) {
      k = m SUBSEP v[i]; median(k); list_odd(k, m, v[i])
      over = (hostfile == "" && v[i] + 0 > ncores + 0) ? 1 : 0
      speed = med_wall > 0 ? base / med_wall : 0
      printf "%s,%d,%d,%d,%.4f,%.3f,%.3f,%.4f,%.4f,%d,%.4f,%.4f,%.4f,%d,%d,%s\n", m, v[i], workers[k], over, med_wall,
             speed, speed / v[i], med_comp, med_sync, steps[k], med_acc, wmin, wmax, med_n, cnt[k] - med_n, med_state
      print med_run > runlist
    }
  }
}
