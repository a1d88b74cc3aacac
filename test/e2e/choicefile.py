"""Writes multiple-choice eval files in llm.c's format (dev/data/
data_common.py write_evalfile): 256 int32 header (magic 20240522, version 1,
example count, longest example in bytes), then per example the uint16
stream 65535, its size in bytes, index, label, completion count, context
length + tokens, and per completion length + tokens. Written here
independently of gptrun's C++ reader, which the tests check against it."""
import struct


def write(path, examples):
    """examples: (label, context_tokens, [completion_tokens, ...]) tuples."""
    streams = []
    for index, (label, context, completions) in enumerate(examples):
        stream = [65535, 0, index, label, len(completions), len(context)]
        stream += context
        for completion in completions:
            stream += [len(completion)] + list(completion)
        stream[1] = 2 * len(stream)
        streams.append(stream)
    header = [20240522, 1, len(streams), max(2 * len(s) for s in streams)]
    header += [0] * (256 - len(header))
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        for stream in streams:
            f.write(struct.pack("<%dH" % len(stream), *stream))
