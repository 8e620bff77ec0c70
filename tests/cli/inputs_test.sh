#!/usr/bin/env bash
# The example decks of inputs/ (README.md, ./quickstart.sh run DECK): each passes `spotrun validate` on NP
# ranks and runs 10 steps from its own directory's copy of the repository's deck (run.steps and
# run.thermo_every set to 10 on the command line), with every rank's exit code 0 and a thermo.csv of two
# rows. inputs/chain.toml reads the in.chain data from Debian's lammps-examples (in ./quickstart.sh test):
# its step-0 bond and pair energies per atom are LAMMPS's (bench/lammps/in.chain on the same file, `lmp`
# 29 Sep 2021: E_mol 20.494523, E_pair 0.44504649) to 1e-7.
# usage: inputs_test.sh inputs NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR SOURCE_DIR
SRC="$7"
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

CHAIN_DATA=/usr/share/lammps/examples/COUPLE/multiple/data.chain

# near A B: |A - B| <= 1e-7 |B|.
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= 1e-7 * m) }'; }

decks=("$SRC"/inputs/*.toml)
[[ ${#decks[@]} -ge 4 ]] || fail "inputs/ holds ${#decks[@]} decks, expected at least 4 (with chain.toml)"
for deck in "${decks[@]}"; do
    name=$(basename "$deck" .toml)
    if grep -q "$CHAIN_DATA" "$deck" && [[ ! -f $CHAIN_DATA ]]; then
        fail "$name: $CHAIN_DATA is missing: install Debian's lammps-examples (./quickstart.sh test does)"
        continue
    fi
    run "$NP" validate "$deck"
    expect_exit 0
    expect_in "$OUT" "$deck: valid on $NP rank(s)"
    run "$NP" run "$deck" --set run.steps=10 --set run.thermo_every=10 --output-dir "$W/$name" --resume never
    expect_exit 0
    rows=$(($(wc -l <"$W/$name/thermo.csv") - 1))
    if grep -q '^\[run.stage.md.minimize\]' "$deck"; then
        # A protocol that minimises first: rows every 10 iterations and at its last, then 10 dynamics steps
        # (run.steps counts those alone): the last row 10 steps after the minimisation's.
        last=$(tail -1 "$W/$name/thermo.csv" | cut -d, -f1)
        before=$(tail -2 "$W/$name/thermo.csv" | head -1 | cut -d, -f1)
        [[ $rows -ge 3 && $((last - before)) -le 10 && $last -gt 10 ]] ||
            fail "$name: thermo.csv has $rows rows ending at step $last, expected a minimisation and 10 steps after it"
    else
        [[ $rows -eq 2 ]] || fail "$name: thermo.csv has $rows rows, expected 2 (steps 0 and 10)"
    fi
    echo "$name: valid and ran 10 steps on $NP rank(s)"
done

if [[ -f $CHAIN_DATA && -f $W/chain/thermo.csv ]]; then
    header=$(head -1 "$W/chain/thermo.csv")
    row0=$(sed -n 2p "$W/chain/thermo.csv")
    col() { # col NAME: the step-0 value of thermo.csv column NAME
        awk -F, -v h="$header" -v r="$row0" -v n="$1" 'BEGIN { k = split(h, hs, ","); split(r, rs, ",");
            for (i = 1; i <= k; ++i) if (hs[i] == n) print rs[i] }'
    }
    ebond=$(col ebond) evdwl=$(col evdwl)
    near "$ebond" 20.494523 || fail "chain: ebond at step 0 is '$ebond', LAMMPS 20.494523"
    near "$evdwl" 0.44504649 || fail "chain: evdwl at step 0 is '$evdwl', LAMMPS 0.44504649"
    echo "chain: step 0 ebond $ebond, evdwl $evdwl (LAMMPS 20.494523, 0.44504649)"
fi
finish
