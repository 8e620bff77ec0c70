// An io source that includes comm (down: fine) and the launcher (up).
#include "comm/errors.hpp"
#  include "launcher/deck/deck.hpp"
