"""nn_engine.utils.data, as torch.utils.data: Dataset, TensorDataset,
DataLoader (nn_engine.data's, under torch's module path)."""
from ...data import DataLoader, Dataset, TensorDataset  # noqa: F401

__all__ = ["Dataset", "TensorDataset", "DataLoader"]
