// `tune render`: the Kubernetes manifests a trial would get, without a
// cluster (docs/kubernetes.md). The only command that needs the Kubernetes
// backend's renderer itself, whatever backend.type says.
#include "search/grid.h"
#include "search/sampler.h"
#include "spec/experiment_spec.h"
#include "tuner/cli_commands.h"
#include "tuner/cli_common.h"
#include "tuner/components.h"
#include "tuner/tuner.h"

#ifdef TUNE_HAVE_K8S
#include "k8s/render.h"
#endif

namespace tune {

using namespace cli;

int RenderCommand(const std::string& path, int trial_number, std::ostream& out, std::ostream& err) {
  auto spec_or = LoadExperimentSpec(path);
  if (!spec_or.ok()) return Fail(err, spec_or.status());
  ExperimentSpec spec = std::move(spec_or).value();
  if (trial_number < 0) {
    return Fail(err, Status::InvalidArgument("--trial: expected a trial number of at least 0, got " +
                                             std::to_string(trial_number)));
  }
#ifdef TUNE_HAVE_K8S
  // What the Kubernetes backend needs (an image), whatever backend.type says.
  if (Status st = OverrideBackend(&spec, "kubernetes"); !st.ok()) return Fail(err, st);
  // Parameters as tune run would draw them for this trial with no history:
  // its point to evaluate and grid point, the sampler for the rest.
  auto sampler = MakeSampler(spec);
  if (!sampler.ok()) return Fail(err, sampler.status());
  auto grid = GridPoints(spec.parameters, spec.search.algorithm == "grid");
  if (!grid.ok()) return Fail(err, grid.status());
  sampler->get()->Reseed(TrialSeed(spec.search.seed, trial_number));
  Trial t;
  t.number = trial_number;
  t.params = NewTrialParams(spec, *grid, trial_number, **sampler, {});
  std::string trial_dir = "/tune/runs/" + spec.name + "/trial_" + std::to_string(trial_number);
  LaunchSpec launch = MakeLaunchSpec(spec, t, trial_dir);
  auto text = RenderTrialManifests(spec.backend.kubernetes, launch, KubernetesObjectName(spec.name, trial_number, 0));
  if (!text.ok()) return Fail(err, text.status());
  out << *text << "\n";
  return kExitOk;
#else
  (void)trial_number;
  (void)out;
  return Fail(err, Status::FailedPrecondition("this tune was built without the Kubernetes backend (TUNE_WITH_K8S=OFF)"));
#endif
}

}  // namespace tune
