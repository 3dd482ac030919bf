"""PyTorch's peer of bench_image_pipeline.c: torchvision's ImageFolder and a
DataLoader with N worker processes, on the same generated photos, with the
same two recipes:

  seed:  Resize((224, 224)) + ToTensor + Normalize (ImageNet mean/std)
  train: RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize,
         shuffled

Pillow decodes (libjpeg-turbo) and resizes (its bilinear filter is
antialiased, a little more work than nn-engine's plain bilinear). Each row
is the best of --epochs epochs after a warm-up epoch; an epoch is
--epoch-images images, the photos over and over, as in the C benchmark.

    build/bench/bench_image_pipeline --threads 1   # writes the photos once
    /usr/bin/python3 bench/torch_image_pipeline.py --workers 1,2,4,8,16

Debian's python3-torch and python3-torchvision (apt) are enough."""
import argparse
import time

import torch
import torchvision
import torchvision.transforms as T

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def rate(dataset, workers, batch, shuffle, epochs):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=shuffle,
                                         num_workers=workers, persistent_workers=True,
                                         prefetch_factor=3)
    best = 0.0
    for epoch in range(epochs + 1):
        start, seen = time.perf_counter(), 0
        for x, _ in loader:
            seen += x.shape[0]
        if epoch > 0:  # the first epoch starts the workers and warms the page cache
            best = max(best, seen / (time.perf_counter() - start))
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/tmp/nn_bench_images_v2")
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--epoch-images", type=int, default=4096)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    normalize = [T.ToTensor(), T.Normalize(MEAN, STD)]
    recipes = {
        "seed": T.Compose([T.Resize((args.size, args.size))] + normalize),
        "train": T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip()] + normalize),
    }
    datasets = {}
    for name, transform in recipes.items():
        folder = torchvision.datasets.ImageFolder(args.dir, transform=transform)
        indices = [i % len(folder) for i in range(args.epoch_images)]
        datasets[name] = torch.utils.data.Subset(folder, indices)
    print(f"PyTorch {torch.__version__}, torchvision {torchvision.__version__}: "
          f"{args.epoch_images} images an epoch from {args.dir}, batch {args.batch}")
    print("| workers | seed resize: images/s | per worker | train (random-resized crop + flip): "
          "images/s | per worker |")
    print("|---:|---:|---:|---:|---:|")
    for workers in (int(w) for w in args.workers.split(",") if w):
        seed = rate(datasets["seed"], workers, args.batch, False, args.epochs)
        train = rate(datasets["train"], workers, args.batch, True, args.epochs)
        print(f"| {workers} | {seed:.0f} | {seed / workers:.0f} | {train:.0f} | {train / workers:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
