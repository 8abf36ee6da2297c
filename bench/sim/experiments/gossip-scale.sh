# shellcheck shell=bash
# gossip-scale [--nps "64 256"] [--platforms "flat-1g fattree-10g-1pn"] [--steps 40]
#              [--syncs "ring auto gossip+topology=ring gossip+topology=torus gossip+topology=exp gossip+topology=exp1
#                        gossip+topology=complete gossip+topology=ring+async gossip+topology=exp+async ring+average=8"]
#                  the simulated time of a training step (MLP-128, batch 32 per rank, --steps steps) for each
#                  sync (train's sync specs, train --spec; the CSV and the table name each run as train does:
#                  gossip-exp1, ring-avg8; build/bin/train answers for the spec) at each p: what decentralized
#                  training costs per step
#                  past this machine. Per-step convergence is measured apart (bench/gossip_convergence.sh), so time
#                  to an accuracy is steps to it (measured) times seconds a step (simulated): gossip_scale.md says
#                  which. gossip_scale.csv: platform,np,method,steps,sim_s_per_step,wire_bytes_per_step.
nps="64 256"
platforms="flat-1g fattree-10g-1pn"
syncs="ring auto gossip+topology=ring gossip+topology=torus gossip+topology=exp gossip+topology=exp1"
syncs+=" gossip+topology=complete gossip+topology=ring+async gossip+topology=exp+async ring+average=8"
steps=40
parse_flags gossip-scale "--nps nps" "--platforms platforms" "--syncs syncs" "--steps steps uint 1" -- "$@"
[ -x "$SMPI_BUILD/bin/train" ] || die "gossip-scale needs train: run scripts/simulate.sh build --all first"
for p in $platforms; do [ -f "$PLATFORM_DIR/$p.xml" ] || die "gossip-scale: no platform '$p' ($(platforms))"; done
# The simulated train runs only under smpirun: this build's answers for the specs (the same sources).
need_bins train
declare -A name_of
for s in $syncs; do
  spec_run "$s" --syncs
  name_of[$s]="$run_name"
done
csv="$out/gossip_scale.csv"
[ -s "$csv" ] || echo "platform,np,method,steps,sim_s_per_step,wire_bytes_per_step" >"$csv"
for platform in $platforms; do
  for np in $nps; do
    for sync in $syncs; do
      name="${name_of[$sync]}"
      tag="$platform-$name-np$np"
      if grep -q "^$platform,$np,$name," "$csv"; then say "gossip-scale: $tag done before"; continue; fi
      rm -f "$out/$tag.csv"
      SELECTOR=ompi smpi_run "$platform" "$np" "$out/$tag.log" train --spec "$sync" --model mlp --hidden 128 \
        --batch 32 --iterations-per-epoch "$steps" --epochs 1 --quiet --timeout 0 --data "$GRADSYNC_ROOT/data/mnist" \
        --csv "$out/$tag.csv"
      awk -F, -v p="$platform" -v n="$np" -v m="$name" -v s="$steps" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { printf "%s,%s,%s,%s,%.6f,%s\n", p, n, m, s, $c["wall_s"] / s, $c["wire_bytes_per_step"] }' "$out/$tag.csv" >>"$csv"
    done
  done
done
{
  echo "# Simulated seconds per training step (MLP-128, batch 32 per rank; SMPI, $(date -u +%Y-%m-%d); the steps each"
  echo "# run took are gossip_scale.csv's steps column)"
  echo "Ratio to the ring allreduce of the same platform and p in parentheses."
  awk -F, '
    NR == 1 { next }
    { key = $1 " p=" $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
      t[key, $3] = $5; if ($3 == "ring") ring[key] = $5; if (!($3 in mseen)) { mseen[$3] = 1; ms[++m] = $3 } }
    END {
      printf "\n| method |"; for (i = 1; i <= n; i++) printf " %s |", order[i]; printf "\n|---|"
      for (i = 1; i <= n; i++) printf "---|"; printf "\n"
      for (j = 1; j <= m; j++) {
        printf "| %s |", ms[j]
        for (i = 1; i <= n; i++) {
          v = t[order[i], ms[j]]
          if (v == "") printf " - |"; else if (ring[order[i]] > 0) printf " %.4f (%.3f) |", v, v / ring[order[i]]
          else printf " %.4f |", v
        }
        printf "\n"
      }
    }' "$csv"
} >"$out/gossip_scale.md"
cat "$out/gossip_scale.md"
