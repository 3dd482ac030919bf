"""A training step captured in a CUDA graph, as the PyTorch peers of
bench/ measure it (torch_zoo_step.py, torch_lenet_cuda_epoch.py)."""
import torch


def graphed(step):
    """step captured in a CUDA graph (after three warm-up calls on a side
    stream, as torch.cuda.graphs asks): its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay
