#!/usr/bin/env bash
# Installs the Debian 12 packages kvsteer builds and runs with (idempotent).
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache
  libtorch-dev libopenblas0-pthread             # libtorch; OpenBLAS behind libblas.so.3 (reference BLAS is ~50x slower)
  qt6-base-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libstb-dev nlohmann-json3-dev
  python3-numpy                                 # test_cli: a vector file written by plain Python (docs/FORMAT.md)
  libsentencepiece-dev sentencepiece            # spm_train/spm_encode: the demo tokenizer and the tokenizer tests
  libpcre2-dev libicu-dev                       # byte-level BPE (Qwen2): the pre-tokenizer regex (PCRE2), NFC (ICU unorm2)
  python3-sentencepiece python3-yaml ninja-build # ../shared/peer/bench-llamacpp.sh: GGUF conversion, llama.cpp's build
  xvfb xauth imagemagick                        # the studio screenshot script
  clang libclang-rt-14-dev libomp-dev           # scripts/fuzz.sh: libFuzzer + ASan/UBSan runtimes, clang's OpenMP
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Make sure libblas.so.3 is OpenBLAS (pthread build), not the reference BLAS.
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
if [ -e "$openblas" ] && update-alternatives --query libblas.so.3-x86_64-linux-gnu >/dev/null 2>&1; then
  current=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
  [ "$current" = "$openblas" ] || $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu "$openblas"
fi
