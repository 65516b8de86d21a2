// What an exception that reached the top of a thread says, as one line.
//
// Every thread `tune` starts, and main(), ends in a catch-all: an exception
// nobody expected (std::bad_alloc, a library's error) becomes one sentence
// and a clean exit instead of std::terminate and a core dump.
#ifndef TUNE_CORE_EXCEPTION_TEXT_H_
#define TUNE_CORE_EXCEPTION_TEXT_H_

#include <string>

namespace tune {

// Only inside a catch block: the exception being handled as one line, its
// type and what() ("std::system_error: Resource temporarily unavailable"),
// with control characters blanked and cut to about 300 bytes (OneLine).
// Bytes that are not UTF-8 stay as they are.
std::string CurrentExceptionText();

}  // namespace tune

#endif  // TUNE_CORE_EXCEPTION_TEXT_H_
