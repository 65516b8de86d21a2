// How the Kubernetes backend starts kubectl children (internal to k8s/).
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/process/extend.hpp>

namespace tune::internal {

// Boost.Process initializer: the child leads a process group of its own
// (so that it and anything it starts can be killed together, and a Ctrl-C
// at the terminal reaches tune alone), and is killed when the thread that
// started it dies, so that no kubectl outlives a killed tune.
struct OwnGroupDieWithParent : boost::process::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
};

}  // namespace tune::internal
