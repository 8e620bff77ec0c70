// spotrun: the program. It installs no test hook (comm/test_hooks.hpp): what it does is cli.cpp's.
#include "cli.hpp"

int main(int argc, char** argv) { return spotrun::launcher::command_line_main(argc, argv); }
