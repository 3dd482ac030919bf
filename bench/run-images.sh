#!/usr/bin/env bash
# The image loader's throughput for bench/README.md: JPEG photos decoded,
# resized to 224x224 RGB and normalised, by thread count
# (bench_image_pipeline.c), and torchvision's DataLoader on the same photos
# when python3 can import torchvision (torch_image_pipeline.py).
#
#   bench/run-images.sh [--no-build] [--threads 1,2,4,8,16] [--epoch-images 4096]
#
# The build needs neither Vulkan nor BLAS, and links libjpeg, libpng and zlib
# statically: build/bench-images/bench_image_pipeline runs on a machine that
# has none of their packages (carry build/bench-images to it and use
# --no-build). The photos are written to /tmp/nn_bench_images_v2 on first use.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build/bench-images
make_it=1
threads=1,2,4,8,16
epoch_images=4096
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) make_it=0; shift ;;
        --threads) threads=$2; shift 2 ;;
        --epoch-images) epoch_images=$2; shift 2 ;;
        *) echo "usage: $0 [--no-build] [--threads LIST] [--epoch-images N]" >&2; exit 2 ;;
    esac
done
if [ "$make_it" = 1 ]; then
    make -s -j"$(nproc)" BUILD="$build" VULKAN=0 BLAS=0 lib "$build/obj/bench/bench_image_pipeline.o" || exit 1
    cc -o "$build/bench_image_pipeline" "$build/obj/bench/bench_image_pipeline.o" "$build/libnnengine.a" \
        -Wl,-Bstatic -ljpeg -lpng16 -lz -Wl,-Bdynamic -lm -pthread || exit 1
fi
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench_image_pipeline" --threads "$threads" --epoch-images "$epoch_images" || exit 1
# The first python3 that has torchvision (Debian's: apt-get install python3-torchvision).
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import torchvision' 2>/dev/null; then
        echo "== PyTorch peer (torchvision ImageFolder + DataLoader workers), $py"
        "$py" bench/torch_image_pipeline.py --workers "$threads" --epoch-images "$epoch_images"
        exit $?
    fi
done
echo "(no python3 with torchvision here: nn-engine only)"
