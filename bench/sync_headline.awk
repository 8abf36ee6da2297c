# scripts/run.sh's headline: the speedups of the paired runs (bench_sync's steps alternated inside one run, a run
# per repetition) against the same methods' separate runs. Loaded after scripts/host_state.awk:
#   awk -F, -v np=N -f scripts/host_state.awk -f bench/sync_headline.awk host_state.csv sync_ab.csv scaling.csv
# host_state.csv (bench/scaling.sh's probes: with sync_ab.csv's, they set the fast state's reference), sync_ab.csv
# (run,method,step_us,speedup,xcore_before_us,xcore_after_us: a row per paired run and method), scaling.csv (the
# separate runs' medians; the rows at np). Prints, per method, the median speedup of the paired runs in the host
# state most of them saw, the range of all, and the separate runs' speedup with its difference (the two should
# agree within 10% on a steady host); then the paired runs left out, by name.
FNR == 1 { file++; for (i = 1; i <= NF; i++) c[file, $i] = i; next }
file == 1 { ref = ref_update(ref_update(ref, $(c[1, "xcore_before_us"])), $(c[1, "xcore_after_us"])); next }
file == 2 {
  ref = ref_update(ref_update(ref, $(c[2, "xcore_before_us"])), $(c[2, "xcore_after_us"]))
  r = $(c[2, "run"]); m = $(c[2, "method"])
  if (!(r in seen)) { seen[r] = 1; runs[++nr] = r; pb[r] = $(c[2, "xcore_before_us"]); pa[r] = $(c[2, "xcore_after_us"]) }
  if (!(m in known)) { known[m] = 1; if (m != "serial") methods[++nm] = m }
  speed[r, m] = $(c[2, "speedup"])
  next
}
$(c[3, "np"]) == np { separate[$(c[3, "method"])] = $(c[3, "speedup"]) }
END {
  for (i = 1; i <= nr; i++) { state[runs[i]] = run_state(pb[runs[i]], pa[runs[i]], ref); st[i] = state[runs[i]] }
  maj = majority(st, nr)
  printf "  %-10s %7s %13s %16s %9s %16s\n", "method", "paired", "range (all)", "runs in median", "separate", "separate/paired"
  for (j = 1; j <= nm; j++) {
    m = methods[j]; n = 0; lo = ""; hi = ""; delete v
    for (i = 1; i <= nr; i++) {
      r = runs[i]
      if (!((r, m) in speed)) continue
      x = speed[r, m] + 0
      if (lo == "" || x < lo) lo = x
      if (hi == "" || x > hi) hi = x
      if (state[r] == maj) v[++n] = x
    }
    for (a = 2; a <= n; a++) for (b = a; b > 1 && v[b] < v[b - 1]; b--) { t = v[b]; v[b] = v[b - 1]; v[b - 1] = t }
    med = n ? (v[int((n + 1) / 2)] + v[int(n / 2) + 1]) / 2 : 0
    sep = "-"; d = "-"
    if (m in separate && med > 0) {
      sep = sprintf("%.2fx", separate[m]); dv = 100 * (separate[m] / med - 1); d = sprintf("%+.1f%%", dv)
      if (dv > 10 || dv < -10) { d = d " !"; off = off " " m } else met = met " " m
    }
    printf "  %-10s %6.2fx %13s %16s %9s %16s\n", m, med, sprintf("%.2f-%.2fx", lo, hi),
      sprintf("%d of %d, %s", n, nr, maj), sep, d
  }
  for (i = 1; i <= nr; i++) if (state[runs[i]] != maj)
    printf "  paired run %s saw %s (xcore 1 MiB %s us before, %s us after; fast: up to %.0f us): left out of the median\n",
      runs[i], seen_as(state[runs[i]]), pb[runs[i]], pa[runs[i]], 2 * ref
  printf "paired and separate runs within 10%% of each other:%s%s\n", met == "" ? " none" : met,
    off == "" ? "" : "; not:" off " (!)"
}
