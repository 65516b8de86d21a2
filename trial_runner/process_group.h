// Supervised worker processes, each in its own process group (POSIX layer
// of LocalBackend).
//
// Why not Boost.Process: it always execs the target in the forked child, so
// it cannot provide what the no-orphan guarantee needs, a tiny supervisor
// that stays a (non-exec'd) forked process, leads the worker's process group
// and kills the whole group (grandchildren included) when the tuner dies;
// and its wait()/wait_for() block per child instead of fitting one poll()
// loop over many children (we use pidfds for that). The layer is small:
// fork, setpgid, prctl, execve, sigwaitinfo.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tune {

struct WorkerCommand {
  std::string path;               // resolved executable (ResolveExecutable)
  std::vector<std::string> argv;  // argv[0] as the user gave it
  std::vector<std::string> env;   // complete environment, "NAME=value"
  std::string working_dir;        // "" keeps the caller's
  int output_fd = -1;             // becomes the worker's stdout and stderr
};

// Starts `cmd` under a supervisor process and returns the supervisor's pid,
// which is also the process group id of the supervisor, the worker and
// everything the worker starts. The supervisor:
//  - has PR_SET_PDEATHSIG: when the forking *thread* exits (or the whole
//    tuner is SIGKILLed) it SIGKILLs its process group, so no worker or
//    grandchild outlives the tuner. Call this only from a thread that lives
//    as long as the workers (LocalBackend's monitor thread);
//  - survives SIGTERM/SIGINT/SIGHUP sent to the group and waits for the
//    worker, then exits the way the worker did (same exit code, or killed by
//    the same signal), so the caller sees the worker's status;
//  - is a child subreaper (PR_SET_CHILD_SUBREAPER): before it exits, and
//    when the tuner dies or calls KillWorkerTree, it SIGKILLs and reaps
//    every descendant of the worker, also those that left its process group
//    or session (setsid), so nothing a trial started outlives its attempt
//    (needs /proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN);
//  - gives the worker stdin /dev/null, stdout+stderr `output_fd`, no other
//    descriptors, default signal dispositions, an empty signal mask and
//    PR_SET_PDEATHSIG(SIGKILL).
// An exec failure shows up as the worker exiting with code 127 and a
// message in its output. Non-OK (kInternal) only if fork fails.
// The caller should block signals in the calling thread (the child inherits
// the mask, which closes the window before the supervisor blocks them).
Result<pid_t> SpawnInProcessGroup(const WorkerCommand& cmd);

// Asks supervisor `supervisor` (a pid SpawnInProcessGroup returned) to
// SIGKILL its worker and every descendant now, reap them, and exit. Use it
// instead of SIGKILL to the group, which would kill the supervisor first
// and orphan what left the group.
void KillWorkerTree(pid_t supervisor);

// argv[0] with a '/' is resolved relative to `working_dir` (absolute paths
// as they are); otherwise it is searched in `path_env` (a PATH value).
// kNotFound if there is no executable regular file there.
Result<std::string> ResolveExecutable(const std::string& argv0, const std::string& working_dir,
                                      const std::string& path_env);

// The PATH a trial's workers search: `trial_env`'s PATH if it sets one,
// else this process's, else "/usr/local/bin:/usr/bin:/bin".
std::string TrialPath(const std::map<std::string, std::string>& trial_env);

// "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string DescribeWaitStatus(int wait_status);

}  // namespace tune
