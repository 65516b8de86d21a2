#include "trainer/runtime_info.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <ATen/Parallel.h>

namespace tune {
namespace {

using GetConfigFn = char* (*)();
using GetIntFn = int (*)();
using SetThreadsFn = void (*)(int);

// Path of the first mapped shared object whose file name contains "blas".
std::string MappedBlas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    std::string file = path.substr(path.rfind('/') + 1);
    if (file.find("blas") != std::string::npos) return path;
  }
  return "";
}

}  // namespace

int ConfigureThreads(int requested) {
  int n = requested;
  if (n <= 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    if (env != nullptr) n = std::atoi(env);
  }
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(n);
  if (auto set = reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
  return at::get_num_threads();
}

std::string DescribeRuntime() {
  std::string blas = MappedBlas();
  std::string real = blas;
  char buf[4096];
  if (!blas.empty()) {
    if (const char* r = realpath(blas.c_str(), buf)) real = r;
  }
  std::string out = "BLAS: ";
  out += real.empty() ? "no libblas mapped (libtorch's own kernels)" : real;
  if (auto config = reinterpret_cast<GetConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    std::string c = config();
    std::replace(c.begin(), c.end(), '=', ' ');  // "MAX_THREADS=64" would read as a metric
    out += ", OpenBLAS build '" + c + "'";
    if (auto par = reinterpret_cast<GetIntFn>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"))) {
      const int p = par();
      out += p == 2 ? ", OpenMP threading" : p == 1 ? ", pthreads threading" : ", sequential";
    }
  } else if (real.find("/blas/") != std::string::npos) {
    out += " (the slow reference BLAS: select OpenBLAS with scripts/install-deps.sh)";
  }
  out += "; torch runs " + std::to_string(at::get_num_threads()) + " intra-op threads on " +
         std::to_string(std::thread::hardware_concurrency()) + " cores";
  return out;
}

}  // namespace tune
