// The `tracking` section: outside trackers that get every trial.
#include "tuner/experiment_spec.h"
#include "tuner/experiment_spec_reader.h"

namespace tune {
namespace spec_internal {

Status ParseTracking(const Reader& r, const Json& v, TrackingSpec* out) {
  TUNE_ASSIGN_OR_RETURN(ObjectReader t, ObjectReader::Make(r, v, "tracking"));
  TUNE_RETURN_IF_ERROR(t.AllowOnly({"tensorboard"}));
  if (const Json* tb = t.Find("tensorboard")) {
    const std::string expected = "true, false or a directory for the event files";
    if (tb->is_boolean()) {
      if (tb->get<bool>()) out->tensorboard_dir = "";
    } else if (tb->is_string() && !tb->get<std::string>().empty()) {
      out->tensorboard_dir = tb->get<std::string>();
    } else {
      return r.FailValue(t.PathOf("tensorboard"), expected, *tb);
    }
  }
  return Status::Ok();
}

}  // namespace spec_internal
}  // namespace tune
