#include "dashboard/http_connections.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace tune {
namespace {

using Clock = std::chrono::steady_clock;

// After an answer that closes the connection, what the client still sends
// is read and dropped for a while before the socket is closed: closing
// with unread input makes the kernel reset the connection, and the client
// may then lose the answer (a 413 or 431) before reading it.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = size_t{1} << 20;

const char* Reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
  }
}

void AddressOf(const sockaddr_storage& ss, std::string& addr, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  }
  addr = text;
}

}  // namespace

std::string ErrorResponse(int status, const std::string& message) {
  const std::string body = DumpJson(nlohmann::json{{"error", message}});
  return "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
         "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n" + body;
}

std::string HeadTooLargeResponse(const HeadLimits& limits) {
  return ErrorResponse(431, "the request head is larger than " + std::to_string(limits.max_bytes) +
                                " bytes or has more than " + std::to_string(limits.max_lines) + " lines");
}

struct HttpConnections::State {
  enum class Phase { kHead, kWorking, kWriting, kLingering };

  struct Conn {
    int fd = -1;
    Phase phase = Phase::kHead;
    std::string in;   // read, not yet part of an answered head
    std::string out;  // the answer being written
    size_t sent = 0;
    size_t lingered = 0;
    bool close_after = false;
    bool scan = false;  // `in` may hold a complete head (or too much)
    bool peer_closed = false;  // the client sent all it will: answer what is complete, then close
    Clock::time_point deadline, since;
    int served = 0;
    RequestContext context;
  };
  struct Job {
    uint64_t id;
    std::string head;
    RequestContext context;
  };
  struct Done {
    uint64_t id;
    Answer answer;
  };

  ConnectionLimits limits;
  Answerer answer;
  int wake[2] = {-1, -1};

  std::mutex mu;
  std::condition_variable work;
  bool stopping = false;   // GUARDED_BY(mu)
  bool poller_dead = false;  // GUARDED_BY(mu)
  std::vector<int> added;  // GUARDED_BY(mu)
  std::deque<Job> jobs;    // GUARDED_BY(mu)
  std::vector<Done> done;  // GUARDED_BY(mu)

  // The polling thread's alone.
  std::unordered_map<uint64_t, Conn> conns;
  uint64_t next_id = 1;
  size_t buffered = 0;  // bytes of answers not yet written

  std::thread poller;
  std::vector<std::thread> workers;

  void Wake() {
    const char b = 1;
    [[maybe_unused]] ssize_t n = write(wake[1], &b, 1);  // a full pipe already wakes
  }

  // ---- the polling thread ----

  void Respond(Conn& c, std::string bytes, bool close_after) {
    if (bytes.empty()) return Close(c);
    c.phase = Phase::kWriting;
    buffered += bytes.size();
    c.out = std::move(bytes);
    c.sent = 0;
    c.close_after = close_after;
    c.deadline = Clock::now() + limits.answer_timeout;
  }

  void Close(Conn& c) {
    if (c.phase == Phase::kWriting) buffered -= c.out.size();
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;  // erased from `conns` by the loop
  }

  void StartHead(Conn& c) {
    c.phase = Phase::kHead;
    c.since = Clock::now();
    c.deadline = c.since + limits.head_timeout;
    c.scan = !c.in.empty();
  }

  void Accept(int fd) {
    if (static_cast<int>(conns.size()) >= limits.max_connections) {
      // Make room: the connection that has waited longest for its head.
      Conn* oldest = nullptr;
      for (auto& [id, c] : conns) {
        if (c.fd >= 0 && c.phase == Phase::kHead && (oldest == nullptr || c.since < oldest->since)) oldest = &c;
      }
      if (oldest == nullptr) {
        const std::string busy = ErrorResponse(503, "the dashboard has too many connections open; try again");
        [[maybe_unused]] ssize_t n = send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        return;
      }
      Close(*oldest);
      Sweep();
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    Conn c;
    c.fd = fd;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      AddressOf(ss, c.context.local_addr, c.context.local_port);
    }
    len = sizeof ss;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      AddressOf(ss, c.context.remote_addr, c.context.remote_port);
    }
    StartHead(c);
    conns.emplace(next_id++, std::move(c));
  }

  // A head in `c.in`: to a worker, or refused.
  void TryHead(uint64_t id, Conn& c) {
    if (!c.scan) return;
    c.scan = false;
    ScannedHead head = ScanRequestHead(c.in, limits.head);
    if (head.state == HeadState::kIncomplete) return;
    if (head.state == HeadState::kTooLarge) {
      return Respond(c, HeadTooLargeResponse(limits.head), true);
    }
    c.in.erase(0, head.consumed);
    bool full = buffered > limits.max_buffered_bytes;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!full && static_cast<int>(jobs.size()) < limits.max_queued) {
        RequestContext context = c.context;
        context.last = c.served + 1 >= limits.max_requests_per_connection;
        jobs.push_back(Job{id, std::move(head.head), std::move(context)});
        c.phase = Phase::kWorking;
        work.notify_one();
        return;
      }
    }
    Respond(c, ErrorResponse(503, "the dashboard is busy; try again"), true);
  }

  void Read(uint64_t id, Conn& c) {
    char buf[16384];
    while (c.in.size() <= limits.head.max_bytes) {
      const size_t want = std::min(sizeof buf, limits.head.max_bytes + 1 - c.in.size());
      const ssize_t n = recv(c.fd, buf, want, 0);
      if (n == 0) {
        c.peer_closed = true;
        c.scan = true;
        break;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Close(c);
      if (n < 0) break;
      c.in.append(buf, static_cast<size_t>(n));
      if (std::find(buf, buf + n, '\n') != buf + n) c.scan = true;
    }
    if (c.in.size() > limits.head.max_bytes) c.scan = true;
    TryHead(id, c);
    if (c.phase == Phase::kHead && c.peer_closed) Close(c);  // no complete request left to answer
  }

  void Write(uint64_t id, Conn& c) {
    while (c.sent < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      if (n <= 0) return Close(c);
      c.sent += static_cast<size_t>(n);
    }
    buffered -= c.out.size();
    c.out = std::string();
    ++c.served;
    if (!c.close_after && c.served < limits.max_requests_per_connection) {
      StartHead(c);
      TryHead(id, c);  // a pipelined request may be complete already
      if (c.phase == Phase::kHead && c.peer_closed) Close(c);
      return;
    }
    shutdown(c.fd, SHUT_WR);
    c.phase = Phase::kLingering;
    c.lingered = 0;
    c.deadline = Clock::now() + kLingerTime;
  }

  void Linger(Conn& c) {
    char buf[16384];
    while (true) {
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      if (n <= 0) return Close(c);
      c.lingered += static_cast<size_t>(n);
      if (c.lingered > kLingerBytes) return Close(c);
    }
  }

  void Expire(Conn& c) {
    if (c.phase == Phase::kHead && (c.in.empty() && c.served > 0)) return Close(c);  // an idle kept-alive one
    if (c.phase == Phase::kHead) {
      Respond(c, ErrorResponse(408, "the request head did not arrive within " +
                                        std::to_string(limits.head_timeout.count() / 1000) + " s"),
              true);
      c.deadline = Clock::now() + std::chrono::seconds(1);
      return;
    }
    Close(c);  // an answer not taken in time, or the lingering close
  }

  void Sweep() {
    for (auto it = conns.begin(); it != conns.end();) it = it->second.fd < 0 ? conns.erase(it) : std::next(it);
  }

  void Poll() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    while (true) {
      std::vector<int> new_fds;
      std::vector<Done> results;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stopping) break;
        new_fds.swap(added);
        results.swap(done);
      }
      for (int fd : new_fds) Accept(fd);
      for (Done& d : results) {
        auto it = conns.find(d.id);
        if (it == conns.end()) continue;
        Respond(it->second, std::move(d.answer.bytes), !d.answer.keep_open);
      }
      // Writes first: an answer just computed usually fits the socket's buffer.
      for (auto& [id, c] : conns) {
        if (c.fd >= 0 && c.phase == Phase::kWriting) Write(id, c);
      }
      Sweep();

      fds.assign(1, pollfd{wake[0], POLLIN, 0});
      ids.assign(1, 0);
      Clock::time_point next = Clock::now() + std::chrono::seconds(1);
      for (auto& [id, c] : conns) {
        short events = 0;
        if (c.phase == Phase::kHead && c.in.size() <= limits.head.max_bytes) events = POLLIN;
        if (c.phase == Phase::kLingering) events = POLLIN;
        if (c.phase == Phase::kWriting) events = POLLOUT;
        if (c.phase == Phase::kWorking) continue;  // no deadline: a worker answers
        next = std::min(next, c.deadline);
        fds.push_back(pollfd{c.fd, events, 0});
        ids.push_back(id);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
      if (poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0) + 1)) < 0 && errno != EINTR) {
        throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      }
      if (fds[0].revents != 0) {
        char buf[256];
        while (read(wake[0], buf, sizeof buf) > 0) {
        }
      }
      const Clock::time_point now = Clock::now();
      for (size_t i = 1; i < fds.size(); ++i) {
        auto it = conns.find(ids[i]);
        if (it == conns.end() || it->second.fd < 0) continue;
        Conn& c = it->second;
        if (fds[i].revents != 0) {
          if (c.phase == Phase::kHead) Read(ids[i], c);
          else if (c.phase == Phase::kWriting) Write(ids[i], c);
          else if (c.phase == Phase::kLingering) Linger(c);
        }
        if (c.fd >= 0 && c.phase != Phase::kWorking && now >= c.deadline) Expire(c);
      }
      Sweep();
    }
  }

  void PollThread() {
    try {
      Poll();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tune dashboard: the connection thread stopped: %s; no longer answering\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "tune dashboard: the connection thread stopped; no longer answering\n");
    }
    std::lock_guard<std::mutex> lock(mu);
    poller_dead = true;
    for (auto& [id, c] : conns) {
      if (c.fd >= 0) close(c.fd);
    }
    conns.clear();
    for (int fd : added) close(fd);
    added.clear();
  }

  // ---- the workers ----

  void WorkerThread() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu);
        work.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (stopping) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      Answer result;
      try {
        result = answer(job.head, job.context);
      } catch (const std::exception& e) {
        result = Answer{};
        try {
          result.bytes = ErrorResponse(500, std::string("internal error: ") + e.what());
        } catch (...) {
        }
      } catch (...) {
        result = Answer{};
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        done.push_back(Done{job.id, std::move(result)});
      }
      Wake();
    }
  }
};

HttpConnections::HttpConnections(const ConnectionLimits& limits, Answerer answer) : state_(new State) {
  state_->limits = limits;
  state_->answer = std::move(answer);
  if (pipe2(state_->wake, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  state_->poller = std::thread([s = state_.get()] { s->PollThread(); });
  for (int i = 0; i < limits.workers; ++i) state_->workers.emplace_back([s = state_.get()] { s->WorkerThread(); });
}

HttpConnections::~HttpConnections() { Stop(); }

void HttpConnections::Add(int fd) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->stopping && !state_->poller_dead) {
      state_->added.push_back(fd);
      state_->Wake();
      return;
    }
  }
  close(fd);
}

void HttpConnections::Stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->stopping) return;
    state_->stopping = true;
  }
  state_->work.notify_all();
  state_->Wake();
  if (state_->poller.joinable()) state_->poller.join();
  for (std::thread& t : state_->workers) t.join();
  state_->workers.clear();
  close(state_->wake[0]);
  close(state_->wake[1]);
}

}  // namespace tune
