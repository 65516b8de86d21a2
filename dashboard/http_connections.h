// HttpConnections: the dashboard's connections, so that slow or hostile
// clients cost the server file descriptors and bounded buffers, never its
// worker threads.
//
// One thread polls every connection (non-blocking sockets): it reads each
// request head (dashboard/request_head.h, capped in size and lines) and
// writes each answer. Only a complete head goes to a worker, which
// computes the answer in memory (no network I/O) and hands it back. So a
// client that sends a byte every few seconds (slow loris) or reads its
// answer a byte at a time holds one descriptor and at most one head or one
// answer, and a deadline ends it:
//   - a head must be complete within `head_timeout` of the connection (or
//     of the previous answer on a kept-alive one): else 408 and close;
//   - an answer must be taken within `answer_timeout`: else close;
//   - at most `max_connections` are open; a new one beyond that closes the
//     one that has waited longest for its head (or is refused if none is);
//   - at most `max_queued` heads wait for a worker, and answers not yet
//     taken hold at most `max_buffered_bytes`; beyond either, 503.
// A head too large or with too many lines gets 431; the connection closes
// after it, and after any answer of status 400 or more.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "dashboard/request_head.h"

namespace tune {

struct ConnectionLimits {
  HeadLimits head;
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds answer_timeout{30000};
  int max_connections = 512;
  int workers = 8;
  int max_queued = 64;
  size_t max_buffered_bytes = size_t{256} << 20;
  int max_requests_per_connection = 100;
};

// Where a request came from, and whether its answer must close the connection.
struct RequestContext {
  std::string local_addr, remote_addr;
  int local_port = 0, remote_port = 0;
  bool last = false;  // the connection's last request: answer with "Connection: close"
};

struct Answer {
  std::string bytes;  // the whole HTTP response
  bool keep_open = false;
};

// Called on a worker thread, several at once: must be thread-safe. An
// exception it throws becomes a 500 and closes the connection.
using Answerer = std::function<Answer(const std::string& head, const RequestContext& context)>;

// A whole response with a JSON body {"error": message}, "Connection: close".
std::string ErrorResponse(int status, const std::string& message);

// The 431 answer to a head over `limits`.
std::string HeadTooLargeResponse(const HeadLimits& limits);

class HttpConnections {
 public:
  // Starts the polling thread and the workers.
  HttpConnections(const ConnectionLimits& limits, Answerer answer);
  // Stop().
  ~HttpConnections();

  // Takes ownership of an accepted socket. Thread-safe; after Stop() the
  // socket is closed at once.
  void Add(int fd);

  // Closes every connection (a worker finishes the answer it computes,
  // which is then dropped) and joins the threads. Idempotent.
  void Stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tune
