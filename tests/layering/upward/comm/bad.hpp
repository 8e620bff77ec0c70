#pragma once
// A comm header that includes io and solvers: two upward includes.
#include <string>

#include "io/input_file.hpp"
#include <solvers/solver.hpp>
