#!/usr/bin/env bash
# Packs the headers and libraries kvsteer's core needs besides libtorch (PCRE2, ICU, nlohmann-json,
# stb) from this machine's Debian packages into one folder, for a GPU machine that has a compiler,
# CMake and a CUDA PyTorch but not these development packages:
#   scripts/gpu-deps.sh DIR         (then, there: scripts/gpu-check.sh --deps DIR)
# DIR gets include/, lib/ and share/cmake/nlohmann_json; about 40 MB (ICU's data is 30 MB of it).
set -euo pipefail
out=${1:?usage: scripts/gpu-deps.sh DIR}
lib=/usr/lib/$(gcc -print-multiarch)
for f in /usr/include/pcre2.h /usr/include/unicode/unorm2.h /usr/include/nlohmann/json.hpp /usr/include/stb/stb_image.h \
         /usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake "$lib"/libpcre2-8.so "$lib"/libicuuc.so "$lib"/libicudata.so; do
    [[ -e $f ]] || { echo "gpu-deps: $f is missing: run scripts/install-deps.sh first" >&2; exit 1; }
done
mkdir -p "$out/include" "$out/lib" "$out/share/cmake"
cp -a /usr/include/pcre2.h /usr/include/unicode /usr/include/nlohmann /usr/include/stb "$out/include/"
cp -a /usr/share/cmake/nlohmann_json "$out/share/cmake/"
# The linker names and the versioned files they point to (libicuuc needs libicudata at run time too).
cp -a "$lib"/libpcre2-8.so* "$lib"/libicuuc.so* "$lib"/libicudata.so* "$out/lib/"
du -sh "$out"
