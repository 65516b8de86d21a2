// Status and Result<T>: how expected failures cross module boundaries.
//
// Modelled on leveldb::Status and absl::StatusOr. Library exceptions
// (SQLite::Exception, Boost.Process errors, CLI11, c10::Error) are caught in
// the adapter .cc that calls the library and turned into a Status; they never
// cross a module boundary. Broken invariants are bugs: use TUNE_CHECK.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tune {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad user input: a spec, a flag, a file's content
  kNotFound,           // a file, experiment or trial that does not exist
  kFailedPrecondition, // the system is not in a state that allows the call
  kUnavailable,        // transient: DB busy, API server unreachable
  kInternal,           // a library or OS call failed unexpectedly
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsInvalidArgument() const { return code_ == StatusCode::kInvalidArgument; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status. Accessing value() of an error aborts.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {     // NOLINT
    if (std::get<Status>(v_).ok()) {
      std::fprintf(stderr, "Result constructed from OK status\n");
      std::abort();
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { Check(); return std::get<T>(v_); }
  const T& value() const& { Check(); return std::get<T>(v_); }
  // On a temporary Result the value is moved out, never referred to: a
  // reference into the temporary would dangle (`for (auto& x : *Load())`).
  T value() && { Check(); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }

 private:
  void Check() const {
    if (!ok()) {
      std::fprintf(stderr, "Result::value() on error: %s\n",
                   std::get<Status>(v_).message().c_str());
      std::abort();
    }
  }
  std::variant<T, Status> v_;
};

}  // namespace tune

// Return early from a function returning Status or Result<T>.
#define TUNE_RETURN_IF_ERROR(expr)            \
  do {                                        \
    ::tune::Status _tune_st = (expr);         \
    if (!_tune_st.ok()) return _tune_st;      \
  } while (0)

#define TUNE_CONCAT_INNER(a, b) a##b
#define TUNE_CONCAT(a, b) TUNE_CONCAT_INNER(a, b)
// `TUNE_ASSIGN_OR_RETURN(auto x, MakeX());`
#define TUNE_ASSIGN_OR_RETURN(lhs, rexpr)                                   \
  auto TUNE_CONCAT(_tune_r_, __LINE__) = (rexpr);                           \
  if (!TUNE_CONCAT(_tune_r_, __LINE__).ok())                                \
    return TUNE_CONCAT(_tune_r_, __LINE__).status();                        \
  lhs = std::move(TUNE_CONCAT(_tune_r_, __LINE__)).value()

// Broken invariants are bugs: abort with file:line.
#define TUNE_CHECK(cond)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                           \
    }                                                                         \
  } while (0)
