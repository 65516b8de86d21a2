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

// Makes glibc's malloc keep freed memory for reuse instead of handing large
// blocks back to the kernel: tensors up to 32 MiB come from the heap (not a
// fresh mmap each time) and freed heap memory is not trimmed. A training step
// frees and reallocates the same activation sizes every step; with glibc's
// defaults each of them is page-faulted and zeroed by the kernel again (5-7%
// of a step's CPU on the small benchmark model). Leaves malloc alone when
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES is set,
// and in a sanitizer build (whose allocator replaces glibc's). Returns false when glibc rejected a setting (the defaults then stay in
// force). Call once, early.
bool ConfigureAllocator();

// One prose sentence naming the BLAS library file, its build (OpenBLAS
// config and threading model, when it is OpenBLAS) and the thread count.
// Contains no `name=value` pair, so a metric parser never reads it.
std::string DescribeRuntime();

}  // namespace tune
