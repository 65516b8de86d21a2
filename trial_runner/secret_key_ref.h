// SecretKeyRef: a trial environment value that names a key of a Kubernetes
// Secret. A header of its own so that the spec (which parses it) needs
// nothing else of trial_runner/.
#pragma once

#include <string>

namespace tune {

// A variable whose value is one key of a Kubernetes Secret (trial.env
// {"secret": NAME, "key": KEY}): the value itself never passes through the
// tuner (not in a LaunchSpec, the database or a manifest). Kubernetes:
// valueFrom.secretKeyRef; the local backend: the tuner's own environment
// variable of the same name.
struct SecretKeyRef {
  std::string secret;  // the Secret's name
  std::string key;     // a key of its data
  bool operator==(const SecretKeyRef& o) const { return secret == o.secret && key == o.key; }
};

}  // namespace tune
