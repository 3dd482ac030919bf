"""Writes the ONNX importer's fuzz seeds into tests/fuzz/corpus_onnx/: a
one-node graph, torch.onnx exports of a small convolutional network
(3 input channels) in evaluation mode (BatchNorm folded) and in training
mode (BatchNorm and Dropout kept), and of a one-layer transformer encoder
over the rows of the [2, 3, 8, 8] input (attention, LayerNorm, GELU in its
Erf form)."""
from pathlib import Path

import torch
from onnx import TensorProto, helper

out = Path(__file__).resolve().parent / "corpus_onnx"
out.mkdir(exist_ok=True)
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 8, 8])])
(out / "relu.onnx").write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                          torch.nn.MaxPool2d(2), torch.nn.Dropout(0.1), torch.nn.Flatten(), torch.nn.Linear(64, 5))
x = torch.zeros(2, 3, 8, 8)
torch.onnx.export(net.eval(), x, str(out / "convnet-eval.onnx"), opset_version=17)
torch.onnx.export(net.train(), x, str(out / "convnet-train.onnx"), opset_version=17,
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.layer(x.flatten(1, 2)).mean(dim=1))


torch.onnx.export(Encoder().eval(), x, str(out / "encoder.onnx"), opset_version=17, do_constant_folding=False)
