"""LeNet-5 trained data-parallel over MPI: one process per GPU (or CPU rank),
each on its shard of every global batch, gradients averaged over the ranks.

    mpirun -n 2 env PYTHONPATH=python python3 examples/train_lenet_ddp.py \\
        --idx /usr/share/datasets/fashion-mnist --device cpu --limit 6400
    (as root add --allow-run-as-root; with fewer cores than ranks --oversubscribe)

Every rank shuffles with the same seed and takes items [rank*B, (rank+1)*B)
of each global batch of N*B, so N ranks at --batch B see what one process
sees at batch N*B. Rank 0 prints and saves.
"""
import argparse
import time

import numpy as np

import nn_engine as nn
import nn_engine.distributed as dist
from nn_engine import SGD, end_batch, softmax_ce
from nn_engine.datasets import load_idx_pair

from train_lenet import LeNet


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idx", required=True, help="folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32, help="images per step on each rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--limit", type=int, default=0, help="use only this many training images")
    parser.add_argument("--device", default=None, help="cpu | vulkan | auto (a GPU per rank on the host)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", help="rank 0 writes the trained weights (safetensors) here")
    args = parser.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.device:
        nn.set_device(args.device)
    nn.manual_seed(args.seed)
    x_train, y_train = load_idx_pair(args.idx, "train")
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    mean, std = float(x_train.mean()), float(x_train.std()) or 1.0
    x_train = (x_train - np.float32(mean)) / np.float32(std)

    model = LeNet()
    dist.broadcast_parameters(model, src=0)
    optimizer = dist.DistributedOptimizer(SGD(model.parameters(), lr=args.lr, momentum=0.9))
    global_batch = args.batch * world
    steps = len(x_train) // global_batch
    if rank == 0:
        print(f"{world} ranks ({dist.library()}), {args.batch} images each per step, {steps} steps an epoch")
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = np.random.default_rng([args.seed, epoch]).permutation(len(x_train))
        loss_sum = 0.0
        for step in range(steps):
            mine = order[step * global_batch + rank * args.batch:][:args.batch]
            optimizer.zero_grad()
            loss = softmax_ce(model(nn.Tensor(x_train[mine])), nn.Tensor(y_train[mine].astype(np.int32)))
            loss.backward()
            optimizer.step()
            loss_sum += float(loss.numpy().reshape(-1)[0])
            end_batch()
        mean_loss = nn.Tensor(np.array([loss_sum / steps], np.float32), track=False)
        dist.all_reduce(mean_loss, dist.ReduceOp.AVG)  # the mean over every rank's batches
        seconds = time.perf_counter() - start
        if rank == 0:
            print(f"epoch {epoch}  train loss {float(mean_loss.numpy()[0]):.4f}  {seconds:.1f} s  "
                  f"{steps * global_batch / seconds:.0f} images/s", flush=True)
    if rank == 0 and args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
