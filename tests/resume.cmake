# End-to-end checkpoint/resume tests of the spotrun binary (tests/resume/resume_test.sh).
find_program(SPOTRUN_H5DIFF h5diff)
if(NOT SPOTRUN_H5DIFF)
  message(WARNING "spotrun: h5diff not found (Debian: hdf5-tools); the resume tests are not registered")
  return()
endif()
function(spotrun_add_resume_test scenario)
  foreach(np ${ARGN})
    add_test(NAME resume.${scenario}.np${np}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/resume_test.sh $<TARGET_FILE:spotrun> ${scenario} ${np})
    set_tests_properties(resume.${scenario}.np${np} PROPERTIES TIMEOUT 600 PROCESSORS ${np} LABELS "resume;mpi"
                         PASS_REGULAR_EXPRESSION "PASS: ${scenario} at np ${np}")
  endforeach()
endfunction()
spotrun_add_resume_test(bitwise 1 2 3 4)
spotrun_add_resume_test(ranks 2 4)
spotrun_add_resume_test(kill 1 3)
spotrun_add_resume_test(damaged 2)
spotrun_add_resume_test(physics 3)
spotrun_add_resume_test(mixture 1 2 3 4)

# Multilevel checkpoints on simulated nodes (tests/resume/levels_test.sh: UTS and mount namespaces, root only;
# skipped otherwise). async pauses a background write: spotrun-test, for SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE.
foreach(scenario node_loss damage async)
  set(_program spotrun)
  if(scenario STREQUAL "async")
    set(_program spotrun-test)
  endif()
  add_test(NAME resume.levels.${scenario}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/levels_test.sh $<TARGET_FILE:${_program}> ${scenario})
  set_tests_properties(resume.levels.${scenario} PROPERTIES TIMEOUT 900 PROCESSORS 3 LABELS "resume;mpi"
                       SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS: levels ${scenario}")
endforeach()

# An energy minimisation stopped by SIGTERM and resumed (tests/resume/minimize_test.sh).
foreach(case "cg 1" "cg 4" "fire 2" "fire 3")
  separate_arguments(case)
  list(GET case 0 style)
  list(GET case 1 np)
  add_test(NAME resume.minimize.${style}.np${np}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/minimize_test.sh $<TARGET_FILE:spotrun-test> ${style} ${np})
  set_tests_properties(resume.minimize.${style}.np${np} PROPERTIES TIMEOUT 600 PROCESSORS ${np} LABELS "resume;mpi"
                       PASS_REGULAR_EXPRESSION "PASS: minimize ${style} at np ${np}")
endforeach()

# A run in stages ([[run.stage]]) against LAMMPS, stopped in every stage and resumed (tests/resume/stages_test.sh).
foreach(np 1 2 3 4)
  add_test(NAME resume.stages.np${np}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/stages_test.sh $<TARGET_FILE:spotrun-test> ${np})
  set_tests_properties(resume.stages.np${np} PROPERTIES TIMEOUT 600 PROCESSORS ${np} LABELS "resume;mpi"
                       PASS_REGULAR_EXPRESSION "PASS: stages at np ${np}")
endforeach()

# The durable tier (checkpoint.durable) against s3rver on 127.0.0.1 through rclone (tests/resume/durable_test.sh):
# npm installs s3rver into <build>/npm when missing; skipped without node, npm, rclone or namespaces unless
# SPOTRUN_REQUIRE_DURABLE=1.
foreach(scenario bucket outage half)
  add_test(NAME resume.durable.${scenario}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/durable_test.sh $<TARGET_FILE:spotrun-test> ${scenario}
                   ${CMAKE_BINARY_DIR}/npm)
  set_tests_properties(resume.durable.${scenario} PROPERTIES TIMEOUT 1200 PROCESSORS 2 LABELS "resume;mpi;durable"
                       SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS: durable ${scenario}"
                       RESOURCE_LOCK s3rver_npm)
endforeach()

# H5MD trajectories and LAMMPS dumps (tests/trajectory/trajectory_test.sh): metadata, last frame ==
# final.h5, a resumed run's trajectory and dump == an uninterrupted one's, rank-count independent rows,
# other fields or columns refused, an older run's trajectory.h5 continued; read by h5py (Debian's
# python3-h5py, for /usr/bin/python3).
foreach(np 1 2 3 4)
  add_test(NAME trajectory.np${np}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/trajectory/trajectory_test.sh $<TARGET_FILE:spotrun> ${np})
  set_tests_properties(trajectory.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS "resume;mpi"
                       PASS_REGULAR_EXPRESSION "PASS: trajectory at np ${np}")
endforeach()
# MDAnalysis (python3-mdanalysis) reads Universe(OUTDIR/topology.data, OUTDIR/trajectory.h5md) with the
# atom types and the dump, of a resumed run (tests/trajectory/mdanalysis_test.sh); skipped (77) without it.
foreach(np 1 2)
  add_test(NAME trajectory.mdanalysis.np${np}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/trajectory/mdanalysis_test.sh $<TARGET_FILE:spotrun> ${np})
  set_tests_properties(trajectory.mdanalysis.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS "resume;mpi"
                       SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "PASS: mdanalysis at np ${np}")
endforeach()

# The same of a run of molecules (tests/trajectory/mdanalysis_molecules_test.sh): topology.data's bonds, angles
# and molecules, and the trajectory's /connectivity, as the data file has them; skipped (77) without MDAnalysis.
foreach(np 1 3)
  add_test(NAME trajectory.mdanalysis.molecules.np${np}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/trajectory/mdanalysis_molecules_test.sh $<TARGET_FILE:spotrun> ${np})
  set_tests_properties(trajectory.mdanalysis.molecules.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np}
                       LABELS "resume;mpi" SKIP_RETURN_CODE 77
                       PASS_REGULAR_EXPRESSION "PASS: mdanalysis of molecules at np ${np}")
endforeach()

# spotrun export (tests/export/export_test.sh): LAMMPS (Debian's lammps, `lmp`) reads the exported data file
# and gives the run's last thermo row at its step 0 to 1e-12.
find_program(SPOTRUN_LMP lmp)
if(SPOTRUN_LMP)
  foreach(np 1 3)
    add_test(NAME export.np${np}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/export/export_test.sh $<TARGET_FILE:spotrun> ${SPOTRUN_LMP} ${np})
    set_tests_properties(export.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS "cli;mpi"
                         PASS_REGULAR_EXPRESSION "PASS: export at np ${np}")
  endforeach()
  # Molecules (tests/export/molecules_test.sh): the Kremer-Grest and semiflexible melts exported with their
  # topology and Coeffs; LAMMPS (with the commands the export says) and spotrun read them back to 1e-12.
  foreach(np 1 3)
    add_test(NAME export.molecules.np${np}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/export/molecules_test.sh $<TARGET_FILE:spotrun> ${SPOTRUN_LMP} ${np})
    set_tests_properties(export.molecules.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS "cli;mpi"
                         PASS_REGULAR_EXPRESSION "PASS: export of molecules at np ${np}")
  endforeach()
  # md.units (tests/export/units_test.sh): argon in units real; the checkpoint names the units, the export writes
  # `units real` and LAMMPS reads it back to 1e-12; a resume in units metal is refused.
  foreach(np 1 2)
    add_test(NAME export.units.np${np}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/export/units_test.sh $<TARGET_FILE:spotrun> ${SPOTRUN_LMP} ${np})
    set_tests_properties(export.units.np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS "cli;mpi"
                         PASS_REGULAR_EXPRESSION "PASS: units at np ${np}")
  endforeach()
else()
  message(WARNING "spotrun: lmp not found (Debian: lammps); the export tests are not registered")
endif()

# Constant pressure: a box squeezed below what the rank grid allows stops with a checkpoint and resumes on fewer
# ranks (tests/resume/npt_shrink_test.sh).
add_test(NAME resume.npt_shrink COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/npt_shrink_test.sh $<TARGET_FILE:spotrun>)
set_tests_properties(resume.npt_shrink PROPERTIES TIMEOUT 300 PROCESSORS 2 LABELS "resume;mpi"
                     PASS_REGULAR_EXPRESSION "PASS: npt shrink")

# The example protocol (inputs/protocol.toml: minimise, NVT, NPT, NVE) stopped in every stage and resumed
# (tests/resume/protocol_test.sh).
foreach(np 1 2)
  add_test(NAME resume.protocol.np${np}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/resume/protocol_test.sh $<TARGET_FILE:spotrun-test> ${np})
  set_tests_properties(resume.protocol.np${np} PROPERTIES TIMEOUT 600 PROCESSORS ${np} LABELS "resume;mpi"
                       PASS_REGULAR_EXPRESSION "PASS: protocol at np ${np}")
endforeach()
