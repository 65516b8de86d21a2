"""Reads TensorBoard event files with TensorBoard's own reader and prints
what TensorBoard sees, as JSON, for tests/tracking.

Usage: read_events.py LOGDIR
Output: {"<run>": {"scalars": {"<tag>": [[step, value], ...]},
                   "hparams": {"<name>": value}, "status": "STATUS_SUCCESS"|null}}
where <run> is the run directory relative to LOGDIR. Everything is read with
the EventAccumulator that TensorBoard's Python data loader uses
(plugin_event_accumulator: orphaned data purged on a restart, as TensorBoard
does); hparams and the session status with the HParams plugin's own parsers.
"""
import json
import os
import sys

from tensorboard.backend.event_processing import plugin_event_accumulator as event_accumulator
from tensorboard.plugins.hparams import api_pb2, metadata
from tensorboard.util import tensor_util


def read_run(path):
    acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    scalars = {}
    for tag in acc.Tags()[event_accumulator.TENSORS]:
        if tag.startswith("_hparams_/"):
            continue
        if acc.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
            continue
        scalars[tag] = [[e.step, tensor_util.make_ndarray(e.tensor_proto).item()] for e in acc.Tensors(tag)]
    hparams, status = {}, None
    try:
        content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    except KeyError:
        content = {}
    if metadata.SESSION_START_INFO_TAG in content:
        start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
        for name, v in start.hparams.items():
            kind = v.WhichOneof("kind")
            hparams[name] = getattr(v, kind)
    if metadata.SESSION_END_INFO_TAG in content:
        end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
        status = api_pb2.Status.Name(end.status)
    return {"scalars": scalars, "hparams": hparams, "status": status}


def main():
    logdir = sys.argv[1]
    runs = {}
    for root, _dirs, files in os.walk(logdir):
        if any(f.startswith("events.out.tfevents.") for f in files):
            runs[os.path.relpath(root, logdir)] = read_run(root)
    json.dump(runs, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
