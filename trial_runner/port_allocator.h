// PortAllocator: free TCP ports for MASTER_PORT, reserved while a trial runs.
#pragma once

#include "core/status.h"

namespace tune {

// A reserved port: a TCP socket bound to 0.0.0.0:port with SO_REUSEADDR and
// never listening. While it lives, no other process can bind the port
// without SO_REUSEADDR, and the kernel never hands it out again for an
// ephemeral bind (so concurrent trials, and other tuners, get distinct
// ports). A worker that binds it with SO_REUSEADDR and listens, as
// torch.distributed's TCPStore does, succeeds. Move-only; the destructor
// releases the port. Not thread-safe (one owner).
class PortReservation {
 public:
  PortReservation() = default;
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();

  int port() const { return port_; }
  bool valid() const { return fd_ >= 0; }
  void Release();

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Bind-tests a port chosen by the kernel among the free ones and keeps it
// reserved. Thread-safe. Non-OK (kUnavailable) when no socket can be bound.
Result<PortReservation> ReservePort();

}  // namespace tune
