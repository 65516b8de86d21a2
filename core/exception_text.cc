#include "core/exception_text.h"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "core/one_line.h"

namespace tune {
namespace {

// "std::bad_alloc" for the mangled name of a type.
std::string TypeName(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

}  // namespace

std::string CurrentExceptionText() {
  try {
    throw;
  } catch (const std::exception& e) {
    const std::string type = TypeName(typeid(e));
    const std::string what = e.what() ? e.what() : "";
    return OneLine(what.empty() || what == type ? type : type + ": " + what, 300);
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return type ? "an exception of type " + TypeName(*type) : "an unknown exception";
  }
}

}  // namespace tune
