# The host's cross-core state around a run, from the probes before and after it (scripts/common.sh xcore_probe):
# the rule bench/scaling.sh and scripts/run.sh share, loaded with `awk -f scripts/host_state.awk -f PROGRAM`.
# A probe within 2x the fastest probe of the whole job (ref) saw the fast state, one above it the slow state: the
# slow state is several times the fast one. Heavy load from other processes slows a probe as much; a run marked
# slow then saw a disturbed host, whatever disturbed it.

# A probe's time in us, as xcore_probe prints it ("nan" when it failed, "unprobed" when there was none).
function isnum(v) { return v ~ /^[0-9]+(\.[0-9]*)?$/ && v + 0 > 0 }
# ref_update(ref, v): the fastest probe so far ("" before any).
function ref_update(ref, v) { return isnum(v) && (ref == "" || v + 0 < ref + 0) ? v + 0 : ref }
function probe_state(v, ref) { return v == "unprobed" ? v : !isnum(v) || ref == "" ? "unknown" : v + 0 > 2 * ref ? "slow" : "fast" }
# A run's state: fast or slow when both probes agree (or one failed), "changed" when it moved during the run.
function run_state(before, after, ref,   b, a) {
  b = probe_state(before, ref); a = probe_state(after, ref)
  return b == a ? b : b == "unknown" ? a : a == "unknown" ? b : "changed"
}
# majority(st, n): the state the runs st[1..n] are compared in: fast or slow, whichever more of them saw (ties:
# fast); a run whose state changed during it, or is unknown, counts only when no run saw either.
function majority(st, n,   i, s, best, nst, states, tally) {
  nst = split("fast slow changed unknown unprobed", states, " ")
  for (i = 1; i <= n; i++) tally[st[i]]++
  if (tally["fast"] + tally["slow"] > 0) return tally["slow"] + 0 > tally["fast"] + 0 ? "slow" : "fast"
  best = states[3]
  for (s = 4; s <= nst; s++) if (tally[states[s]] + 0 > tally[best] + 0) best = states[s]
  return best
}
# seen_as(state): how a report names the state a run saw.
function seen_as(st) {
  return st == "changed" ? "the cross-core state change" : st == "unknown" ? "no cross-core probe result" \
    : "the " st " cross-core state"
}
