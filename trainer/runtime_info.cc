#include "trainer/runtime_info.h"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Context.h>
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
    // cuBLAS (the CUDA build maps it) is the GPU's BLAS, not the CPU's.
    if (file.find("blas") != std::string::npos && file.find("cublas") == std::string::npos) return path;
  }
  return "";
}

// libgomp spin-waits up to GOMP_SPINCOUNT (default 300000) iterations at
// every barrier before sleeping. With more runnable threads than free cores
// (other trials, compilers) a spinning worker takes the core its own master
// needs, and each of the hundreds of parallel regions per step can cost a
// time slice: measured 10x fewer tokens/s on the shared 2-core machine
// (bench/RESULTS.md). libgomp reads its environment once, when it is loaded,
// so the only way to change the policy is to run the program again with a
// short spin: GOMP_SPINCOUNT=1000 (microseconds, then sleep). Measured on the
// tiny bench model, 2 threads (bench/RESULTS.md): quiet machine 26-27k
// tokens/s (default spinning 26-28k, PASSIVE 22-24k); beside two busy
// processes 10k (PASSIVE 15k, default spinning 0.45k). Returns only when it
// does not re-execute.
void ReexecWithShortOpenMpSpin() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (std::getenv("TUNE_OMP_REEXEC") != nullptr) return;  // never loop
  if (dlsym(RTLD_DEFAULT, "GOMP_parallel") == nullptr) return;  // not libgomp
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (cmdline.empty()) return;
  std::vector<std::string> args;
  for (size_t pos = 0; pos < cmdline.size();) {
    size_t end = cmdline.find('\0', pos);
    if (end == std::string::npos) end = cmdline.size();
    args.push_back(cmdline.substr(pos, end - pos));
    pos = end + 1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("GOMP_SPINCOUNT", "1000", 1);
  setenv("TUNE_OMP_REEXEC", "1", 1);
  execv("/proc/self/exe", argv.data());
  unsetenv("GOMP_SPINCOUNT");  // exec failed: carry on with spinning threads
}

}  // namespace

int ConfigureThreads(int requested) {
  int n = requested;
  if (n <= 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    if (env != nullptr) n = std::atoi(env);
  }
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n > 1) ReexecWithShortOpenMpSpin();
  at::set_num_threads(n);
  if (auto set = reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(n);
  return at::get_num_threads();
}

bool ConfigureAllocator() {
  // The user's own malloc settings win, as with the OpenMP policy above.
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    if (std::getenv(name) != nullptr) return true;
  }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer's allocator serves malloc instead of glibc's, and its
  // mallopt accepts no setting: there is nothing to configure.
  return true;
#else
  // 32 MiB is the largest threshold glibc accepts on 64-bit; setting it also
  // turns off the dynamic threshold, which otherwise only grows after a
  // mmapped block has been freed once.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return mmap_ok && trim_ok;
#endif
}

std::string DescribeRuntime() {
  std::string blas = MappedBlas();
  std::string real = blas;
  char buf[4096];
  if (!blas.empty()) {
    if (const char* r = realpath(blas.c_str(), buf)) real = r;
  }
  std::string out = "BLAS: ";
  // PyPI's torch wheel links MKL into libtorch_cpu: nothing to find mapped.
  out += !real.empty()  ? real
         : at::hasMKL() ? "Intel MKL, linked into libtorch"
                        : "no libblas mapped (libtorch's own kernels)";
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
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  out += std::string(", OpenMP wait policy ") + (policy ? policy : "default") + ", spin count " +
         (spin ? spin : "default");
  return out;
}

}  // namespace tune
