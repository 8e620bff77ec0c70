// spotrun_test_http_server: the test HTTP server (tests/support/http_server.hpp) as a program, for the
// command-line tests (tests/cli/cloud_test.sh). It serves files: the path of a request (its query dropped)
// names a file under --root, answered 200 with its contents whatever the method, else 404; so a test script
// changes what the "metadata service" says by writing files (atomically: write, then mv). It writes its port
// to --port-file once it listens, one line per request to --log ("METHOD TARGET | name: value | ..."), and
// ends by itself after --lifetime seconds (default 120), or at SIGTERM or SIGINT.
//
// Usage: spotrun_test_http_server --root DIR --port-file FILE [--log FILE] [--lifetime S] [--silent]
//   --silent  accept every connection and never answer (a hung metadata service)
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "support/http_server.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  std::string root, port_file, log_file;
  double lifetime = 120;
  bool silent = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "spotrun_test_http_server: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--root") root = next();
    else if (a == "--port-file") port_file = next();
    else if (a == "--log") log_file = next();
    else if (a == "--lifetime") lifetime = std::atof(next().c_str());
    else if (a == "--silent") silent = true;
    else {
      std::fprintf(stderr, "spotrun_test_http_server: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (root.empty() || port_file.empty() || !(lifetime > 0)) {
    std::fprintf(stderr, "usage: spotrun_test_http_server --root DIR --port-file FILE [--log FILE] [--lifetime S] [--silent]\n");
    return 2;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  std::mutex log_mutex;
  spotrun::test::HttpServer server([&](const spotrun::test::HttpRequestSeen& req) {
    if (!log_file.empty()) {
      std::lock_guard<std::mutex> lock(log_mutex);
      std::ofstream log(log_file, std::ios::app);
      log << req.method << " " << req.target;
      for (const auto& [n, v] : req.headers) log << " | " << n << ": " << v;
      log << "\n";
    }
    if (silent) return spotrun::test::HttpReply::misbehave(spotrun::test::HttpReply::Kind::silent);
    const std::string path = req.path();
    // No way out of the root: ".." as a path component is refused.
    if (path.empty() || path[0] != '/' || ("/" + path + "/").find("/../") != std::string::npos)
      return spotrun::test::HttpReply::make(404, "not found\n");
    std::ifstream in(root + path, std::ios::binary);
    std::stringstream body;
    if (!in || !(body << in.rdbuf())) return spotrun::test::HttpReply::make(404, "not found\n");
    return spotrun::test::HttpReply::make(200, body.str());
  });
  {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << server.port() << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(lifetime);
  while (!g_stop && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server.stop();
  return 0;
}
