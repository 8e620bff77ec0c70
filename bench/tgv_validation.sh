#!/usr/bin/env bash
# Taylor-Green vortex at Re = 1600 (inputs/tgv-re1600.toml): runs it to t = 10 at each size, writes the
# dissipation against time as CSV, finds the dissipation peak, plots it (PNG, with gnuplot when
# installed: apt-get install gnuplot-nox) and prints the comparison with the spectral DNS reference
# (peak about 0.0127 near t = 9 at 512^3; Brachet et al. 1983, van Rees et al. 2011). Not a ctest.
#
#   bench/tgv_validation.sh [BUILD_DIR] [OUT_DIR]
#   environment: SIZES="64 128" (grid sizes), NP=2 (MPI ranks), MPIRUN="mpirun --oversubscribe"
#
# It runs `spotrun run` when the launcher accepts the deck (run.solver = "fluid"), else the deck driver
# of bench_fluid (the same solver, output hook and thermo columns).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
out=${2:-$src/runs/tgv-validation}
sizes=${SIZES:-"64 128"}
np=${NP:-2}
mpirun=${MPIRUN:-mpirun --oversubscribe}
deck=$src/inputs/tgv-re1600.toml
ref_peak=0.0127
ref_time=9.0

mkdir -p "$out"
summary=$out/summary.csv
echo "n,ranks,peak_dissipation,peak_time,rel_diff_peak,steps,wall_s" > "$summary"

use_spotrun=0
if [ -x "$build/launcher/spotrun" ] && $mpirun -np 1 "$build/launcher/spotrun" validate "$deck" > /dev/null 2>&1; then
  use_spotrun=1
fi

for n in $sizes; do
  dir=$out/n$n
  rm -rf "$dir"
  mkdir -p "$dir"
  sets=(--set "fluid.n=[$n, $n, $n]" --set "run.thermo_every=1" --set "fluid.spectrum_every=0")
  start=$(date +%s)
  if [ $use_spotrun = 1 ]; then
    $mpirun -np "$np" "$build/launcher/spotrun" run "$deck" "${sets[@]}" --output-dir "$dir" --resume never \
      > "$dir/log.txt" 2>&1
  else
    $mpirun -np "$np" "$build/bench/bench_fluid" --run "$deck" "${sets[@]}" --output-dir "$dir" > "$dir/log.txt" 2>&1
  fi
  wall=$(( $(date +%s) - start ))
  # thermo.csv: step,time,energy,dissipation,enstrophy,divmax,cfl. Also -dE/dt by central differences.
  awk -F, 'NR == 1 { next }
           { step[NR] = $1; t[NR] = $2; e[NR] = $3; d[NR] = $4; last = NR }
           END {
             print "time,dissipation,minus_dEdt,energy"
             for (i = 2; i <= last; i++) {
               de = (i > 2 && i < last) ? -(e[i + 1] - e[i - 1]) / (t[i + 1] - t[i - 1]) : "";
               printf "%.8g,%.10g,%s,%.10g\n", t[i], d[i], (de == "" ? "" : sprintf("%.10g", de)), e[i]
             }
           }' "$dir/thermo.csv" > "$out/dissipation-n$n.csv"
  # Peak: the largest sample, refined by the parabola through it and its neighbours.
  read -r peak tpeak steps < <(awk -F, 'NR == 1 { next }
           { t[NR] = $2; d[NR] = $4; last = NR; if ($4 > best) { best = $4; bi = NR } }
           END {
             p = best; tp = t[bi]
             if (bi > 2 && bi < last) {
               t0 = t[bi - 1]; t1 = t[bi]; t2 = t[bi + 1]; d0 = d[bi - 1]; d1 = d[bi]; d2 = d[bi + 1]
               den = (t0 - t1) * (t0 - t2) * (t1 - t2)
               a = (t2 * (d1 - d0) + t1 * (d0 - d2) + t0 * (d2 - d1)) / den
               b = (t2 * t2 * (d0 - d1) + t1 * t1 * (d2 - d0) + t0 * t0 * (d1 - d2)) / den
               c = (t1 * t2 * (t1 - t2) * d0 + t2 * t0 * (t2 - t0) * d1 + t0 * t1 * (t0 - t1) * d2) / den
               if (a < 0) { tp = -b / (2 * a); p = c - b * b / (4 * a) }
             }
             printf "%.6g %.4g %d\n", p, tp, last - 1
           }' "$dir/thermo.csv")
  rel=$(awk -v p="$peak" -v r="$ref_peak" 'BEGIN { printf "%.3g", (p - r) / r }')
  echo "$n,$np,$peak,$tpeak,$rel,$steps,$wall" >> "$summary"
  echo "n = $n: peak dissipation $peak at t = $tpeak (reference $ref_peak near t = $ref_time; rel. diff $rel), $steps steps, ${wall} s"
done

if command -v gnuplot > /dev/null; then
  plots=""
  for n in $sizes; do
    plots="$plots${plots:+, }'$out/dissipation-n$n.csv' using 1:2 with lines lw 2 title '${n}^3'"
  done
  gnuplot <<GNUPLOT
set terminal pngcairo size 900,600 noenhanced
set output '$out/dissipation.png'
set datafile separator ','
set key top left
set xlabel 't'
set ylabel 'dissipation 2 nu <S:S>'
set title 'Taylor-Green vortex, Re = 1600'
set xrange [0:10]
set arrow from $ref_time, graph 0 to $ref_time, graph 1 nohead dt 2
set label 'reference peak' at $ref_time, $ref_peak point pt 7 offset -12,-1
plot $plots, $ref_peak with lines dt 3 title 'reference peak (512^3)'
GNUPLOT
  echo "plot: $out/dissipation.png"
else
  echo "gnuplot not found: no plot (Debian: apt-get install gnuplot-nox)"
fi
echo "summary: $summary"
