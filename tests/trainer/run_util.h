// Helpers of the trainer tests that run lora_train as a program: its path,
// a shell command's exit code, a file's text, the metric lines it printed,
// and a free loopback port for a torch.distributed rendezvous.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>

namespace tune::testing {

inline std::string LoraTrainBin() { return std::string(TUNE_BIN_DIR) + "/lora_train"; }

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `cmd` run by bash (in single quotes: it must hold none); its exit code, or
// 128 when it died of a signal.
inline int Sh(const std::string& cmd) {
  int rc = std::system(("bash -c '" + cmd + "'").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// (step, name) -> value from the metric lines of `stdout_text`.
inline std::map<std::pair<int, std::string>, double> Metrics(const std::string& stdout_text) {
  std::map<std::pair<int, std::string>, double> m;
  std::istringstream in(stdout_text);
  std::string line;
  static const std::regex kPair(R"(([a-z_]+)=([-+0-9.eE]+|nan))");
  while (std::getline(in, line)) {
    int step = -1;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kPair); it != std::sregex_iterator(); ++it) {
      if ((*it)[1] == "step") step = std::stoi((*it)[2]);
      else if (step >= 0) m[{step, (*it)[1]}] = std::stod((*it)[2]);
    }
  }
  return m;
}

// A loopback TCP port that was free a moment ago.
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace tune::testing
