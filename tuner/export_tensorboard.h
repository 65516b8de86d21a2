// `tune export tensorboard`: TensorBoard event files for a stored
// experiment, the same files `"tracking": {"tensorboard": ...}` writes
// during `tune run` (tracking/tensorboard_sink.h), made afterwards from the
// database.
#pragma once

#include <ostream>
#include <string>

#include "core/status.h"
#include "storage/storage.h"

namespace tune {

// Writes <out_dir>/<experiment>/trial_NNNN for every trial that started:
// its parameters (HParams session start), the counted reports of its
// current attempt, and its final status if it is finished. `experiment` empty: the
// newest. FailedPrecondition if <out_dir>/<experiment> exists already (an
// export never mixes with or overwrites earlier files); nothing is left
// behind when a write fails. Prints one line saying what it wrote.
Status ExportTensorBoard(Storage& storage, const std::string& experiment, const std::string& out_dir,
                         std::ostream& out);

}  // namespace tune
