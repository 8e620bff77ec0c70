#pragma once
// A solver header that climbs into the launcher through a relative path (up), and includes io (down).
#include "../../launcher/x.hpp"
#include "io/deck/deck.hpp"
#include "toy.hpp"
