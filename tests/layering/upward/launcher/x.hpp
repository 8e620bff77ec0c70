#pragma once
// The launcher may include every layer below it.
#include "solvers/solver.hpp"
