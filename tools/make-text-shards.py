#!/usr/bin/env python3
"""Writes llm.c token shards from plain-text files, one token per byte.

A stand-in until the GPT-2 BPE tokenizer lands: every byte becomes the token
id of its value (0..255, all inside GPT-2's vocabulary) and documents are
separated by GPT-2's end-of-text token (50256). The shard format is llm.c's:
a header of 256 little-endian int32 (magic 20240520, version 1, token
count), then the tokens as little-endian uint16.

usage: make-text-shards.py OUT_DIR --train FILE... --val FILE...
       make-text-shards.py OUT_DIR --licenses

--licenses uses the English license texts every Debian machine ships
(/usr/share/common-licenses, from base-files): GPL-3 is held out for
validation, the others are the training text.
"""
import argparse
import os
import struct
import sys

MAGIC, VERSION, END_OF_TEXT = 20240520, 1, 50256
LICENSES = "/usr/share/common-licenses"


def tokens_of(paths):
    tokens = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        tokens.append(END_OF_TEXT)
        tokens.extend(data)
    return tokens


def write_shard(path, tokens):
    header = [MAGIC, VERSION, len(tokens)] + [0] * 253
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % len(tokens), *tokens))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--train", nargs="+")
    parser.add_argument("--val", nargs="+")
    parser.add_argument("--licenses", action="store_true",
                        help="train on %s, validate on its GPL-3" % LICENSES)
    args = parser.parse_args()
    if args.licenses:
        names = sorted(os.listdir(LICENSES))
        args.train = [os.path.join(LICENSES, n) for n in names
                      if n != "GPL-3" and not os.path.islink(os.path.join(LICENSES, n))]
        args.val = [os.path.join(LICENSES, "GPL-3")]
    if not args.train or not args.val:
        parser.error("give --train and --val files, or --licenses")
    os.makedirs(args.out_dir, exist_ok=True)
    for name, paths in (("train", args.train), ("val", args.val)):
        tokens = tokens_of(paths)
        write_shard(os.path.join(args.out_dir, name + "_000000.bin"), tokens)
        print("%s: %d tokens from %d file(s)" % (name, len(tokens), len(paths)))


if __name__ == "__main__":
    sys.exit(main())
