"""Output paths (issue 25): nn_engine.check_writable says before a run
whether a save would succeed, and Model.save / Model.export refuse a
directory or a FIFO with an OSError naming the path, leaving it as it was."""
import os
import stat

import numpy as np
import pytest

import nn_engine as nn


class Tiny(nn.Model):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 3)

    def forward(self, x):
        return self.fc(x)


class TinyWithGraph(Tiny):
    """Exported through the onnx package (the seed's _onnx_graph hook)."""

    def _onnx_graph(self, input_shape, helper, TensorProto, numpy_helper):
        nodes, inits = [], []
        out = self._linear_onnx(self.fc, "fc", "input", "output", helper, numpy_helper, inits, nodes)
        return nodes, inits, out, [input_shape[0], 3]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_check_writable_accepts_new_files_regular_files_and_links_to_them(tmp_path):
    new = tmp_path / "new.safetensors"
    assert nn.check_writable(new) == new and nn.check_writable(str(new)) == str(new)
    existing = tmp_path / "old.bin"
    existing.write_bytes(b"kept")
    link = tmp_path / "link.bin"
    link.symlink_to(existing)
    nn.check_writable(existing)
    nn.check_writable(link)
    # Nothing is left behind and nothing is changed.
    assert sorted(os.listdir(tmp_path)) == ["link.bin", "old.bin"] and existing.read_bytes() == b"kept"


def test_check_writable_refuses_directories_fifos_and_missing_folders_naming_them(tmp_path, fifo):
    with pytest.raises(OSError, match=f"{tmp_path} is a folder, not a regular file"):
        nn.check_writable(tmp_path)
    with pytest.raises(OSError, match=f"{fifo} is a FIFO, not a regular file"):
        nn.check_writable(fifo)
    missing = tmp_path / "no" / "such" / "m.safetensors"
    with pytest.raises(OSError, match="nn_check_writable_path.*no/such"):
        nn.check_writable(missing)
    with pytest.raises(ValueError, match="nn_check_writable_path: path is NULL or empty"):
        nn.check_writable("")
    with pytest.raises(TypeError, match="check_writable: path must be"):
        nn.check_writable(3)


def test_save_refuses_a_directory_and_a_fifo(tmp_path, fifo):
    model = Tiny()
    folder = tmp_path / "weights"
    folder.mkdir()
    with pytest.raises(OSError, match=f"{folder} is a folder, not a regular file"):
        model.save(folder)
    with pytest.raises(OSError, match=f"{fifo} is a FIFO"):
        model.save(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(folder) == []
    assert sorted(os.listdir(tmp_path)) == ["pipe", "weights"]  # no temporary file left


@pytest.mark.parametrize("make", [Tiny, TinyWithGraph], ids=["native", "onnx_graph"])
def test_export_refuses_a_directory_and_a_fifo(tmp_path, fifo, make):
    if make is TinyWithGraph:
        pytest.importorskip("onnx")
    model = make()
    folder = tmp_path / "graphs"
    folder.mkdir()
    with pytest.raises(OSError, match=f"{folder} is a folder, not a regular file"):
        model.export(str(folder), input_shape=[1, 7])
    with pytest.raises(OSError, match=f"{fifo} is a FIFO"):
        model.export(str(fifo), input_shape=[1, 7])
    # The FIFO is still a FIFO (the onnx package's path used to replace it).
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(folder) == []
    # And a regular path still works.
    out = tmp_path / "tiny.onnx"
    model.export(str(out), input_shape=[1, 7])
    assert out.stat().st_size > 0
    np.testing.assert_equal(sorted(os.listdir(tmp_path)), ["graphs", "pipe", "tiny.onnx"])
