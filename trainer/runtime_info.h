// Thread configuration and a description of the BLAS libtorch multiplies
// with (Debian's libtorch calls the system libblas.so.3, whose choice, the
// reference BLAS or OpenBLAS, decides throughput). Call before the first
// parallel torch op. Not thread-safe.
#pragma once

#include <string>

namespace tune {

// Sets torch's intra-op threads (and OpenBLAS's, when loaded) to `requested`,
// or when 0 to OMP_NUM_THREADS if set, else the number of cores. Returns the
// count in effect. With more than one thread and neither OMP_WAIT_POLICY nor
// GOMP_SPINCOUNT set, it first re-executes the program (same argv, via
// /proc/self/exe) with GOMP_SPINCOUNT=1000, because libgomp's default
// spin-waiting loses up to 50x on a machine shared with other work (trials
// run side by side) while a short spin keeps its speed on a quiet one; call
// it before any side effect (files, sockets).
int ConfigureThreads(int requested);

// One prose sentence naming the BLAS library file, its build (OpenBLAS
// config and threading model, when it is OpenBLAS) and the thread count.
// Contains no `name=value` pair, so a metric parser never reads it.
std::string DescribeRuntime();

}  // namespace tune
