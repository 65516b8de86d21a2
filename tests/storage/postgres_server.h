// PostgresServer: a throwaway PostgreSQL server for the tests, from the
// server binaries of Debian's `postgresql` package: initdb into a fresh
// directory under /tmp, pg_ctl start on a free loopback port (its socket in
// that directory too), trust authentication for the user `postgres`.
// Stopped (immediate shutdown) and removed, directory and all, when the
// object goes. PostgreSQL refuses to run as root: as root every server
// command runs as the `postgres` user (runuser), who then owns the
// directory.
#pragma once

#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace tune::testing {

class PostgresServer {
 public:
  PostgresServer() {
    bin_ = FindBin();
    if (bin_.empty()) {
      why_ = "no PostgreSQL server binaries (initdb, pg_ctl): install the postgresql package";
      return;
    }
    char tmpl[] = "/tmp/tune_pg_XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    if (::geteuid() == 0) {
      struct passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr) {
        why_ = "running as root and there is no postgres user to run the server as";
        return;
      }
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        why_ = "cannot chown " + dir_;
        return;
      }
      as_ = "runuser -u postgres -- ";
    }
    port_ = FreePort();
    const std::string data = dir_ + "/data";
    if (Sh(bin_ + "/initdb -D " + data + " -U postgres --auth=trust -E UTF8 --no-sync --no-instructions") != 0) {
      why_ = "initdb failed (see " + dir_ + "/log)";
      return;
    }
    std::string opts = "-p " + std::to_string(port_) + " -k " + dir_ +
                       " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
                       " -c full_page_writes=off -c max_connections=50";
    if (Sh(bin_ + "/pg_ctl -D " + data + " -l " + dir_ + "/server.log -w -t 60 -o '" + opts + "' start") != 0) {
      why_ = "pg_ctl start failed (see " + dir_ + "/server.log)";
      return;
    }
    started_ = true;
  }

  ~PostgresServer() {
    if (started_) Sh(bin_ + "/pg_ctl -D " + dir_ + "/data -m immediate -w -t 60 stop");
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool ok() const { return started_; }
  // The command line that runs server tool `tool` (psql, createdb) as the
  // server's user.
  std::string Tool(const std::string& tool) const { return as_ + bin_ + "/" + tool; }
  const std::string& why_not() const { return why_; }
  int port() const { return port_; }

  // A new empty database `name` and its URL.
  std::string CreateDatabase(const std::string& name) {
    Sh(bin_ + "/createdb -h 127.0.0.1 -p " + std::to_string(port_) + " -U postgres " + name);
    return Url(name);
  }
  std::string Url(const std::string& name) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + name;
  }
  // Runs SQL through psql; its output, one value per line.
  std::string Psql(const std::string& db, const std::string& sql) const {
    const std::string out = dir_ + "/psql.out";
    std::string cmd = bin_ + "/psql -X -q -A -t -h 127.0.0.1 -p " + std::to_string(port_) + " -U postgres -d " + db +
                      " -c \"" + sql + "\" > " + out + " 2>&1";
    // From /, which the server's user may enter (psql warns on stderr,
    // into the answer, when it cannot enter the caller's directory).
    std::system(("cd / && " + as_ + cmd).c_str());
    std::string text;
    if (FILE* f = std::fopen(out.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
    return text;
  }

 private:
  static std::string FindBin() {
    for (const char* v : {"18", "17", "16", "15", "14", "13"}) {
      std::string dir = std::string("/usr/lib/postgresql/") + v + "/bin";
      if (::access((dir + "/pg_ctl").c_str(), X_OK) == 0) return dir;
    }
    return "";
  }
  static int FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    int port = ntohs(addr.sin_port);
    ::close(fd);
    return port;
  }
  int Sh(const std::string& cmd) const {
    std::string full = as_ + cmd + " >> " + dir_ + "/log 2>&1";
    return std::system(full.c_str());
  }

  std::string bin_, dir_, as_, why_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace tune::testing
