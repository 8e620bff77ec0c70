#!/usr/bin/env bash
# The terminal of `spotrun run` and OUTDIR/spotrun.log (README.md#output),
# thermo columns (md.thermo_style) and progress in simulated time (fluid.time_end).
# usage: output_test.sh CASE NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR SOURCE_DIR
#   terminal       the default terminal line by line; spotrun.log holds it and the rest, one heading per
#                  attempt; --verbose prints the rest; --quiet the final status line only; nothing about
#                  GPU parts or device memory traffic on a CPU build
#   melt           the quickstart melt prints at most 40 lines, every thermo row among them
#   thermo_style   chosen columns against the default run's values and the box; nvt's econserve; refusals
#   time_end       a fluid run that ends on fluid.time_end: progress in time, progress.json at 100 %
#   stop_row       a run stopped by SIGUSR1 between thermo steps prints the stop step's row once, with the
#                  values of a run that ends there; thermo.csv keeps the thermo steps only; a resumed
#                  attempt stopped the same way prints its row too; a resume does not print it again
SRC="$7"
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# expect_lines FILE REGEX...: FILE has exactly one line per REGEX (extended, anchored), in that order.
expect_lines() {
    local file=$1 k=0 line
    shift
    local -a want=("$@")
    mapfile -t got <"$file"
    [[ ${#got[@]} -eq ${#want[@]} ]] || fail "$(basename "$file"): ${#got[@]} lines, expected ${#want[@]}:"$'\n'"$(cat "$file")"
    for line in "${got[@]}"; do
        [[ $k -lt ${#want[@]} ]] || break
        [[ "$line" =~ ^${want[$k]}$ ]] || fail "$(basename "$file") line $((k + 1)): '$line' does not match '${want[$k]}'"
        k=$((k + 1))
    done
}

NUM='-?[0-9.e+-]+'
case "$CASE" in
terminal)
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/out"
    expect_exit 0
    [[ ! -s "$ERR" ]] || fail "stderr not empty: $(cat "$ERR")"
    devices=()
    if [[ $NP -le 4 ]]; then
        devices=('Devices \(GPU binding, docs/gpu\.md\):')
        for ((r = 0; r < NP; ++r)); do devices+=("  rank $r: host .*"); done
    fi
    expect_lines "$OUT" \
        'spotrun [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]+(-dirty)?, [A-Za-z]+ build, SIMD [A-Za-z0-9]+\)' \
        "MPI ranks: $NP on 1 node\(s\)" \
        "${devices[@]}" \
        'Deck: good\.toml' \
        "Output directory: $W/out \(everything printed here and more: spotrun\.log\)" \
        "Starting fresh: no checkpoint to resume from in $W/out" \
        '      Step             time             temp               pe               ke           etotal            press' \
        "         0 +0 +3 +$NUM +$NUM +$NUM +$NUM" \
        "        10 +0\.05 +$NUM +$NUM +$NUM +$NUM +$NUM" \
        "        20 +0\.1 +$NUM +$NUM +$NUM +$NUM +$NUM" \
        "Final state $W/out/final\.h5 at step 20: $NUM s" \
        "Loop time: $NUM s on $NP ranks for 20 steps" \
        "Performance: $NUM atom-steps/s, $NUM timesteps/s, $NUM tau/day" \
        "Checkpoints: 0 written, 0 failed, $NUM s in total \($NUM% of $NUM s\)" \
        "Finished at step 20: everything in $W/out \(this output and more in spotrun\.log\)"
    # tau/day = timesteps/s x dt (0.005) x 86400
    awk '/^Performance:/ { r = $4 * 0.005 * 86400 / $6; exit !(r > 0.999 && r < 1.001) }' "$OUT" ||
        fail "tau/day is not timesteps/s x dt x 86400: $(grep Performance "$OUT")"
    LOG="$W/out/spotrun.log"
    expect_count "$LOG" "===== attempt started " 1
    expect_in "$LOG" " rank(s), spotrun "
    expect_in "$LOG" ": spotrun run good.toml --output-dir $W/out ====="
    # Every terminal line is in the log, in the same order; the details too.
    cmp -s <(grep -vxFf <(cat "$LOG") "$OUT") /dev/null || fail "terminal lines missing from spotrun.log: $(grep -vxFf "$LOG" "$OUT")"
    cmp -s <(grep -xFf "$OUT" "$LOG") "$OUT" || fail "spotrun.log has the terminal's lines in another order"
    for detail in "--- resolved deck ---" "Transport: " "Spot notices: " "Run report: " "Rank grid: " "Time Pair: " \
                  "Kokkos " "Neighbor list builds = "; do
        expect_in "$LOG" "$detail"
    done
    # Nothing that says nothing on this build: GPU parts and memory traffic on a CPU build.
    if grep -q "no GPU (CPU build)" "$OUT"; then
        for f in "$OUT" "$LOG"; do
            if grep -q "GPU parts compiled in\|Memory traffic" "$f"; then fail "$(basename "$f") talks of GPU parts on a CPU build"; fi
        done
    fi
    # A second attempt (nothing to resume: the run finished; run.steps raised) appends under its own heading.
    run "$NP" run good.toml --output-dir "$W/out" --set run.steps=30
    expect_exit 0
    expect_count "$LOG" "===== attempt started " 2
    expect_in "$OUT" "Resuming from $W/out/final.h5 at step 20"
    [[ $(grep -n "Resuming from" "$LOG" | cut -d: -f1) -gt $(grep -n "===== attempt started" "$LOG" | tail -1 | cut -d: -f1) ]] ||
        fail "the second attempt's lines are not under its heading"
    # --verbose: the rest on the terminal too; --quiet: the final status line only.
    run "$NP" run good.toml --output-dir "$W/v" --verbose
    expect_exit 0
    for detail in "--- resolved deck ---" "Transport: " "Rank grid: " "Run report of "; do expect_in "$OUT" "$detail"; done
    cmp -s "$OUT" <(sed '1d' "$W/v/spotrun.log") || fail "--verbose: the terminal is not the log less its heading"
    run "$NP" run good.toml --output-dir "$W/q" --quiet
    expect_exit 0
    expect_lines "$OUT" "Finished at step 20: everything in $W/q \(this output and more in spotrun\.log\)"
    [[ ! -s "$ERR" ]] || fail "--quiet: stderr not empty: $(cat "$ERR")"
    expect_in "$W/q/spotrun.log" "Loop time: "
    run "$NP" run good.toml --output-dir "$W/q" --quiet --verbose
    expect_exit 2
    # An error is on stderr and in the log.
    run "$NP" run good.toml --output-dir "$W/out" --set 'md.thermo_style=["step", "temp"]'
    expect_exit 2
    expect_in "$ERR" "has the columns step,time,temp,pe,ke,etotal,press, the deck's thermo columns are step,temp"
    expect_in "$LOG" "ERROR: '$W/out/thermo.csv' has the columns step,time,temp,pe,ke,etotal,press"
    ;;
stop_row)
    good_deck good.toml
    "$MPIEXEC" --oversubscribe "$NPFLAG" "$NP" "$SPOTRUN" run good.toml --output-dir "$W/s" \
        --set run.steps=100000000 --set run.thermo_every=1000 >"$W/s.out" 2>"$W/s.err" &
    pid=$!
    for ((k = 0; k < 1200; ++k)); do grep -q '^1000,' "$W/s/thermo.csv" 2>/dev/null && break; sleep 0.05; done
    kill -USR1 "$pid"
    wait "$pid"
    rc=$?
    OUT="$W/s.out" ERR="$W/s.err"
    [[ $rc -eq 75 ]] || fail "the stopped run exited $rc, expected 75"
    S=$(sed -n 's/^Stopping at step \([0-9]*\): signal SIGUSR1$/\1/p' "$OUT")
    [[ -n "$S" ]] || fail "no 'Stopping at step S: signal SIGUSR1' line"
    S=${S:-0}
    row=$(grep -A1 "^Stopping at step $S:" "$OUT" | tail -n 1)
    [[ "$row" =~ ^\ +$S\  ]] || fail "the line after the stop is '$row', not the row of step $S"
    expect_count "$OUT" "Stopping at step $S:" 1
    if ((S % 1000 != 0)) && grep -q "^$S," "$W/s/thermo.csv"; then fail "thermo.csv has the stop row $S"; fi
    # The row's values are those of a run that ends at step S, to the 10 digits printed.
    run "$NP" run good.toml --output-dir "$W/ref" --set run.steps="$S" --set run.thermo_every=1000
    expect_exit 0
    awk -v row="$row" -F, 'END { n = split(row, p, " +"); k = 0
            for (i = 1; i <= n; ++i) if (p[i] != "") q[++k] = p[i]
            for (i = 1; i <= NF; ++i) { d = q[i] - $i; if (d < 0) d = -d; a = $i < 0 ? -$i : $i
                if (d > 1e-9 * a + 1e-12) { print "column " i ": printed " q[i] ", run to the step " $i; bad = 1 } }
            exit bad }' "$W/ref/thermo.csv" || fail "the stop row differs from the row of a run that ends at step $S"
    # A resumed attempt stopped the same way prints its stop row too (its solver was restored, not set up).
    "$MPIEXEC" --oversubscribe "$NPFLAG" "$NP" "$SPOTRUN" run good.toml --output-dir "$W/s" \
        --set run.steps=100000000 --set run.thermo_every=1000 >"$W/s2.out" 2>"$W/s2.err" &
    pid=$!
    next=$(((S / 1000 + 1) * 1000))
    for ((k = 0; k < 1200; ++k)); do grep -q "^$next," "$W/s/thermo.csv" 2>/dev/null && break; sleep 0.05; done
    kill -USR1 "$pid"
    wait "$pid"
    rc=$?
    [[ $rc -eq 75 ]] || fail "the resumed run stopped by SIGUSR1 exited $rc, expected 75: $(cat "$W/s2.err")"
    S2=$(sed -n 's/^Stopping at step \([0-9]*\): signal SIGUSR1$/\1/p' "$W/s2.out")
    row2=$(grep -A1 "^Stopping at step ${S2:-x}:" "$W/s2.out" | tail -n 1)
    [[ -n "$S2" && "$row2" =~ ^\ +$S2\  ]] || fail "the resumed attempt's stop: '$row2' after 'Stopping at step $S2'"
    S=$S2
    # The resume goes on after S and does not print S again; thermo.csv has no repeated step.
    run "$NP" run good.toml --output-dir "$W/s" --set run.steps=$(((S / 1000 + 2) * 1000)) --set run.thermo_every=1000
    expect_exit 0
    expect_in "$OUT" "at step $S"
    if grep -qE "^ +$S " "$OUT"; then fail "the resume printed the stop row again"; fi
    expect_count "$W/s/spotrun.log" "Stopping at step $S:" 1
    [[ $(grep -cE "^ +$S " "$W/s/spotrun.log") -eq 1 ]] || fail "spotrun.log has the row of step $S $(grep -cE "^ +$S " "$W/s/spotrun.log") times"
    [[ $(cut -d, -f1 "$W/s/thermo.csv" | sort | uniq -d | wc -l) -eq 0 ]] || fail "thermo.csv has repeated steps"
    ;;
melt)
    # The quickstart's command, in a fresh working directory (OUTDIR runs/lj-melt).
    cp "$SRC/inputs/lj-melt.toml" "$W/"
    run "$NP" run lj-melt.toml --resume never
    expect_exit 0
    lines=$(cat "$OUT" "$ERR" | wc -l)
    echo "melt: $lines terminal lines"
    [[ $lines -le 40 ]] || fail "the melt printed $lines lines (at most 40)"
    rows=$(grep -cE '^ +[0-9]+ +[0-9.]+ ' "$OUT")
    [[ $rows -eq 6 ]] || fail "$rows thermo rows on the terminal, expected 6"
    csv_rows=$(($(wc -l <"$W/runs/lj-melt/thermo.csv") - 1))
    [[ $csv_rows -eq 6 ]] || fail "thermo.csv has $csv_rows rows"
    ;;
thermo_style)
    good_deck good.toml
    run "$NP" run good.toml --output-dir "$W/a"
    expect_exit 0
    run "$NP" run good.toml --output-dir "$W/b" --set 'md.thermo_style=["step", "ke", "vol", "density", "pe", "ecouple", "econserve", "temp"]'
    expect_exit 0
    [[ "$(head -1 "$W/b/thermo.csv")" == "step,ke,vol,density,pe,ecouple,econserve,temp" ]] ||
        fail "header '$(head -1 "$W/b/thermo.csv")'"
    expect_in "$OUT" "      Step               ke              vol          density               pe          ecouple        econserve             temp"
    # The same values, bit for bit, as the default columns: step, ke, pe, temp; etotal = econserve under nve.
    cmp <(cut -d, -f1,5,4,3 "$W/a/thermo.csv" | tail -n +2) <(awk -F, -v OFS=, 'NR > 1 { print $1, $8, $5, $2 }' "$W/b/thermo.csv") ||
        fail "temp, pe, ke differ from the default columns' values"
    cmp <(cut -d, -f1,6 "$W/a/thermo.csv" | tail -n +2) <(cut -d, -f1,7 "$W/b/thermo.csv" | tail -n +2) ||
        fail "econserve under nve differs from etotal"
    # 6 x 4 x 4 fcc cells at 0.8442: 384 atoms of mass 1, volume 384 / 0.8442; ecouple 0 under nve.
    awk -F, 'NR > 1 { v = $3 - 384 / 0.8442; d = $4 - 0.8442; if (v < 0) v = -v; if (d < 0) d = -d;
                      if (v > 1e-9 || d > 1e-12 || $6 != 0) bad = 1 } END { exit bad }' "$W/b/thermo.csv" ||
        fail "vol, density or ecouple wrong: $(cat "$W/b/thermo.csv")"
    # nvt: econserve = etotal + ecouple, the thermostat's energy not 0 after step 0, econserve conserved
    # (to 1e-2 of |etotal| over these 20 steps) while etotal is not.
    run "$NP" run good.toml --output-dir "$W/n" --set 'md.ensemble="nvt"' --set md.temperature=1.5 --set md.damp=0.1 \
        --set 'md.thermo_style=["step", "etotal", "ecouple", "econserve"]'
    expect_exit 0
    awk -F, 'NR > 1 { d = $4 - ($2 + $3); if (d < 0) d = -d; if (d > 1e-12) bad = 1 }
             NR == 2 { e0 = $4; t0 = $2 } NR > 2 && $3 == 0 { bad = 1 }
             END { de = $4 - e0; dt = $2 - t0; if (de < 0) de = -de; if (dt < 0) dt = -dt;
                   if (de > 0.01 * (t0 < 0 ? -t0 : t0) || dt < 10 * de) bad = 1; exit bad }' "$W/n/thermo.csv" ||
        fail "nvt econserve: $(cat "$W/n/thermo.csv")"
    # Refusals, exit 2 with the reason.
    run "$NP" run good.toml --output-dir "$W/r" --set 'md.thermo_style=["temp", "step"]'
    expect_input_error
    expect_in "$ERR" "good.toml: md.thermo_style starts with \"temp\"; the first column must be \"step\""
    run "$NP" run good.toml --output-dir "$W/r" --set 'md.ensemble="langevin"' --set 'md.thermo_style=["step", "ecouple"]'
    expect_input_error
    expect_in "$ERR" "md.thermo_style column \"ecouple\" needs md.ensemble = \"nve\", \"nvt\", \"npt\" or \"nph\""
    run "$NP" run good.toml --output-dir "$W/r" --set 'md.thermo_style=["step", "pressure"]'
    expect_input_error
    expect_in "$ERR" "\"pressure\" is not allowed"
    ;;
time_end)
    # A fluid run bounded by 100000 steps that ends at fluid.time_end = 2 (40 steps of 0.05): every progress
    # line's percent within 2 points of 100 x time / time_end, time read from thermo.csv at its step.
    run "$NP" run "$SRC/inputs/tgv-re1600.toml" --output-dir "$W/f" --set 'fluid.n=[16, 16, 16]' --set fluid.time_end=2 \
        --set run.thermo_every=1 --set run.progress_seconds=0.001 --set fluid.spectrum_every=0
    expect_exit 0
    n=$(grep -c "^Progress: step [0-9]*, time [0-9.e+-]* of 2 (" "$ERR")
    [[ $n -ge 3 ]] || fail "only $n progress lines in time: $(cat "$ERR")"
    if grep -q "of 100000" "$ERR"; then fail "progress counted in steps: $(grep 'of 100000' "$ERR" | head -3)"; fi
    sed -n 's/^Progress: step \([0-9]*\), time [^ ]* of 2 (\([0-9.]*\)%).*/\1,\2/p' "$ERR" >"$W/pairs"
    awk -F, 'NR == FNR { if (FNR > 1) t[$1] = $2; next }
             { if (!($1 in t)) { print "no thermo row at step " $1; bad = 1; next }
               d = $2 - 100 * t[$1] / 2; if (d < 0) d = -d; if (d > 2) { print "step " $1 ": " $2 "% at time " t[$1]; bad = 1 } }
             END { exit bad }' "$W/f/thermo.csv" "$W/pairs" || fail "progress is not time / time_end"
    python3 - "$W/f/progress.json" <<'PY' || fail "progress.json at the end: $(cat "$W/f/progress.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["finished"] is True and p["percent"] == 100 and p["remaining_seconds"] == 0, p
assert p["measure"] == "time 2 of 2" and p["step"] == 40 and p["steps"] == 100000, p
PY
    expect_in "$W/f/spotrun.log" "Progress: step "
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
finish
