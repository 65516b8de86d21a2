"""tune_trial: the trial side of `tune` for your own Python training script.

A `tune` trial is any program that reads its parameters from the
environment and prints metric lines (docs/architecture.md, section 4). This
module does both, and the rest of the trial protocol:

    import tune_trial

    p = tune_trial.params({"lr": 1e-3})           # TUNE_PARAMS, typed
    for step in range(start, 100):
        ...
        tune_trial.report(step, loss=loss)          # "step=7 loss=0.25"
        if tune_trial.should_stop():                 # pruned: SIGTERM came
            break

Outside a `tune` trial (no TUNE_TRIAL_ID) every call still works: params()
returns the defaults, report() prints its line.

Pure Python, no dependency, Python 3.9 or newer. The metric-line rules it
checks are those of tune's one parser (trial_runner/metric_parser.h), the
checkpoint layout that of docs/architecture.md, section 4.7.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import signal
import sys
import threading
from typing import Any, Dict, Mapping, Optional

__all__ = [
    "params",
    "report",
    "trial_id",
    "in_trial",
    "trial_dir",
    "checkpoint_dir",
    "resume_from",
    "resume_step",
    "should_stop",
    "install_signal_handler",
]

__version__ = "0.1.0"

# A metric name of the Katib text form: [A-Za-z0-9_.\-/]+ (ASCII only; the
# parser's isalnum runs in the C locale).
_NAME = re.compile(r"[A-Za-z0-9_.\-/]+\Z")
# The folder name tune looks for: checkpoint-<decimal digits>, at most 18
# (trial_runner/checkpoint_folder.h).
_CHECKPOINT = re.compile(r"checkpoint-([0-9]{1,18})\Z")
# The largest step report() takes: every integer up to 2**53 is exact as a
# double, which is what the parser reads the step as (the parser itself
# takes up to 9e18 but would then round to a neighbouring step).
_MAX_STEP = 2**53


def in_trial() -> bool:
    """True inside a `tune` trial (TUNE_TRIAL_ID is set)."""
    return bool(os.environ.get("TUNE_TRIAL_ID"))


def trial_id() -> Optional[int]:
    """The trial's number (TUNE_TRIAL_ID, 0-based), or None outside a trial."""
    value = os.environ.get("TUNE_TRIAL_ID")
    if not value:
        return None
    return int(value)


def params(defaults: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The trial's parameters, typed: integers int, floats float, booleans
    bool, choices of strings str (TUNE_PARAMS, a JSON object; tune writes
    floats with a decimal point, so 1.0 stays a float).

    Outside a trial, a copy of `defaults` (or {}). Inside, TUNE_PARAMS with
    `defaults` filling the keys it lacks (values of parameters tune does not
    search). Raises ValueError if TUNE_PARAMS is not a JSON object.
    """
    out: Dict[str, Any] = dict(defaults or {})
    if not in_trial():
        return out
    text = os.environ.get("TUNE_PARAMS", "")
    if not text:
        return out
    try:
        given = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"TUNE_PARAMS is not JSON: {e}") from None
    if not isinstance(given, dict):
        raise ValueError("TUNE_PARAMS is not a JSON object")
    out.update(given)
    return out


def _format_value(name: str, value: Any) -> str:
    # bool first: it is an Integral too. The JSON form reads booleans as
    # 1 and 0; the text form needs the digits.
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)  # shortest round-trip: 0.1, 1e-05, 1e+30
    raise ValueError(
        f"report: metric {name!r} must be a real number (int, float, bool), "
        f"got {type(value).__name__} {value!r}"
    )


def _rank() -> int:
    # torchrun, tune's local backend, a Kubernetes Job and a PyTorchJob all
    # set RANK, the global rank. LOCAL_RANK is not used: it is 0 on every
    # node (every pod, on Kubernetes).
    try:
        return int(os.environ.get("RANK", "0") or "0")
    except ValueError:
        return 0


def report(step: int, **metrics: Any) -> None:
    """Prints one metric line, `step=<step> name=value ...`, on stdout and
    flushes it.

    `step` is the report's step under scheduler.time_attr "step" (the
    default; with another time_attr, pass that one as a metric too, e.g.
    `report(step, epoch=2, loss=0.3)`): an int from -2**53 to 2**53.
    `metrics` are real numbers: int, float (nan and inf are taken; a NaN
    objective is stored as no value), bool (as 1 and 0), or numpy scalars;
    a 0-d tensor needs `.item()`. Names are what tune's metric-line parser takes:
    [A-Za-z0-9_.\\-/]+, so `report(3, **{"eval/loss": 0.2})` works and
    "step" is not a metric name here. Anything else raises ValueError and
    prints nothing.

    With torch.distributed, tune reads only rank 0's output
    (docs/architecture.md, section 4.3): on a process whose RANK is not 0
    the line is checked but not printed, so every rank may call report.
    """
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise ValueError(f"report: step must be an int, got {type(step).__name__} {step!r}")
    if abs(int(step)) > _MAX_STEP:
        raise ValueError(f"report: step {step} is beyond 2**53 (not exact as a double)")
    parts = [f"step={int(step)}"]
    for name, value in metrics.items():
        if not _NAME.match(name):
            raise ValueError(
                f"report: metric name {name!r} must be ASCII letters, digits and _ . - / only"
            )
        parts.append(f"{name}={_format_value(name, value)}")
    if _rank() != 0:
        return
    # One write, so that a line is never split by another thread's print.
    sys.stdout.write(" ".join(parts) + "\n")
    sys.stdout.flush()


def trial_dir() -> str:
    """The trial's directory (TUNE_TRIAL_DIR), the same for every attempt:
    checkpoints go there. Outside a trial: TUNE_TRIAL_DIR if set, else the
    current directory."""
    return os.environ.get("TUNE_TRIAL_DIR") or os.getcwd()


def checkpoint_dir(step: int) -> str:
    """trial_dir()/checkpoint-<step>: the folder tune looks for when it
    continues a trial. It is not created. A folder counts once it exists
    under that name, so write the checkpoint into another folder (e.g.
    checkpoint_dir(step) + ".tmp") and os.rename it to this one. Keep at
    least the two newest (docs/architecture.md, section 4.7)."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ValueError(f"checkpoint_dir: step must be an int >= 0, got {step!r}")
    return os.path.join(trial_dir(), f"checkpoint-{int(step)}")


def resume_from() -> Optional[str]:
    """The checkpoint folder this attempt continues from (TUNE_RESUME_FROM:
    a retry, a resumed or paused trial, a PBT exploit), or None when the
    variable is unset or empty or the folder does not exist: start from
    step 0."""
    path = os.environ.get("TUNE_RESUME_FROM", "")
    if not path or not os.path.isdir(path):
        return None
    return path


def resume_step() -> Optional[int]:
    """The step of resume_from()'s folder (checkpoint-<step>), or None."""
    path = resume_from()
    if path is None:
        return None
    m = _CHECKPOINT.match(os.path.basename(os.path.normpath(path)))
    return int(m.group(1)) if m else None


_stop = threading.Event()
_installed = False
_previous: Any = None


def _on_sigterm(signum: int, frame: Any) -> None:
    _stop.set()
    if callable(_previous):
        _previous(signum, frame)


def install_signal_handler() -> bool:
    """Makes SIGTERM set the flag that should_stop() returns instead of
    ending the process. Called by the first should_stop(); call it yourself
    to catch a SIGTERM that comes before. Importing the module installs
    nothing, so a script that never asks keeps dying on SIGTERM at once.

    A Python handler installed before is called after the flag is set
    (chained); SIG_DFL and SIG_IGN are replaced. Each SIGTERM only sets the
    flag: what ends a process that does not stop is tune's SIGKILL,
    `trial.stop_grace_s` seconds (default 5) after the SIGTERM.

    Python runs handlers in the main thread only, so it must be installed
    from there. Returns True once installed; False when called from another
    thread before that (it is then installed by the next call from the main
    thread).
    """
    global _installed, _previous
    if _installed:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _on_sigterm)
    _previous = previous if previous is not _on_sigterm else None
    _installed = True
    return True


def should_stop() -> bool:
    """True once the process got SIGTERM: tune pruned, paused or stopped the
    trial (or its time ran out). Check it at least once per step; when True,
    save a checkpoint if you want one and exit (code 0) within
    `trial.stop_grace_s` seconds of the signal (experiment.json, default
    5 s), after which tune sends SIGKILL. Its result no longer counts.

    The first call installs the SIGTERM handler (install_signal_handler).
    With torch.distributed every rank gets SIGTERM but may see it at a
    different step: agree before leaving a collective loop, e.g. with an
    all_reduce of the flag (MAX).
    """
    install_signal_handler()
    return _stop.is_set()
