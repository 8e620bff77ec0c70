// spotrun's command line: everything `spotrun` does, from its arguments to its exit code.
#pragma once

namespace spotrun::launcher {

// Runs spotrun with the arguments of main (MPI_Init and MPI_Finalize included, except for `launch`) and
// returns its exit code. spotrun's main (launcher/main.cpp) is this call alone; the test program
// spotrun-test (tests/support/spotrun_test_main.cpp) installs its test hooks first (comm/test_hooks.hpp).
int command_line_main(int argc, char** argv);

}  // namespace spotrun::launcher
