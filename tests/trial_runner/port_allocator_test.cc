// ReservePort: distinct free ports, reserved against ordinary binds, yet
// bindable by a worker that uses SO_REUSEADDR (as torch's TCPStore does).
#include "trial_runner/port_allocator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <vector>

#include <catch2/catch.hpp>

namespace tune {
namespace {

// Binds 0.0.0.0:port (optionally with SO_REUSEADDR) and listens.
// Returns the socket, or -1 if bind or listen failed.
int BindAndListen(int port, bool reuse) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  int one = 1;
  if (reuse) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_CASE("reserved ports are distinct while held", "[port_allocator]") {
  std::vector<PortReservation> held;
  std::set<int> ports;
  for (int i = 0; i < 300; ++i) {
    Result<PortReservation> r = ReservePort();
    REQUIRE(r.ok());
    REQUIRE(r->port() > 0);
    ports.insert(r->port());
    held.push_back(std::move(r).value());
  }
  CHECK(ports.size() == held.size());
}

TEST_CASE("a reserved port blocks plain binds but not SO_REUSEADDR listeners", "[port_allocator]") {
  Result<PortReservation> r = ReservePort();
  REQUIRE(r.ok());
  const int port = r->port();
  CHECK(BindAndListen(port, /*reuse=*/false) == -1);
  int listener = BindAndListen(port, /*reuse=*/true);
  CHECK(listener >= 0);
  // While the worker listens, another tuner's reservation avoids the port.
  Result<PortReservation> other = ReservePort();
  REQUIRE(other.ok());
  CHECK(other->port() != port);
  if (listener >= 0) ::close(listener);

  // Released: anyone may bind it again.
  PortReservation moved = std::move(r).value();
  CHECK(moved.valid());
  moved.Release();
  CHECK_FALSE(moved.valid());
  int plain = BindAndListen(port, /*reuse=*/false);
  CHECK(plain >= 0);
  if (plain >= 0) ::close(plain);
}

}  // namespace
}  // namespace tune
