#pragma once
// Beside bad.hpp, included by it: same layer.
