"""The two scripts of issue 4, verbatim: they must run unchanged."""
import nn_engine

SNIPPET_LINEAR = '''
import numpy as np
from nn_engine import Tensor, Linear, relu
x = Tensor(np.random.randn(32, 128).astype(np.float32))
layer = Linear(128, 64)
y = relu(layer(x))
print(y.shape) # (32, 64)
'''

SNIPPET_LENET = '''
from nn_engine import ConvLayer, Linear, Model, maxpool2d, flatten
class LeNet(Model):
    def __init__(self):
        super().__init__()
        self.c1 = ConvLayer(1, 6, 5)
        self.c2 = ConvLayer(6, 16, 5)
        self.l1 = Linear(16*4*4, 120)
        self.l2 = Linear(120, 84)
        self.l3 = Linear(84, 10)
    def forward(self, x):
        x = self.c1(x, relu=True)
        x = maxpool2d(x)
        x = self.c2(x, relu=True)
        x = maxpool2d(x)
        x = flatten(x, 1)
        x = self.l1(x, relu=True)
        x = self.l2(x, relu=True)
        return self.l3(x)
model = LeNet()
model.export("lenet.onnx", input_shape=[1, 1, 28, 28])
'''


def test_linear_snippet(capsys):
    namespace = {}
    exec(SNIPPET_LINEAR, namespace)
    assert capsys.readouterr().out == "(32, 64)\n"
    y = namespace["y"].sync()
    assert y.shape == (32, 64) and (y >= 0).all() and (y > 0).any()


def test_lenet_snippet(tmp_path, monkeypatch):
    import pytest
    monkeypatch.chdir(tmp_path)
    namespace = {}
    if nn_engine._lib.has_symbol("nn_onnx_export"):
        exec(SNIPPET_LENET, namespace)
        import onnx
        model = onnx.load(str(tmp_path / "lenet.onnx"))
        onnx.checker.check_model(model)
        names = {init.name for init in model.graph.initializer}
        assert {"c1.weight", "c1.bias", "l3.weight", "l3.bias"} <= names
    else:
        # Native export (issue 7) is not in this build: a clear error, after
        # everything before the export line ran.
        with pytest.raises(NotImplementedError, match="native ONNX export"):
            exec(SNIPPET_LENET, namespace)
        assert len(namespace["model"].parameters()) == 10
        assert not (tmp_path / "lenet.onnx").exists()
