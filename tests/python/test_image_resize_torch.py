"""The image loader's resize (nn_image_resize_bilinear, include/nn_loader.h)
against PyTorch: torch.nn.functional.interpolate(mode="bilinear",
align_corners=False) on the cropped image, which is what torchvision's
tensor Resize(antialias=False) does, then per-channel normalisation."""
import ctypes

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from nn_engine._lib import lib  # noqa: E402

_resize = lib.nn_image_resize_bilinear
_resize.restype = ctypes.c_int
_resize.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                    ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_double,
                    ctypes.c_bool, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_int, ctypes.c_int]

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def ours(image, box, out_hw, flip):
    h, w, c = image.shape
    image = np.ascontiguousarray(image)
    out = np.empty((c, out_hw[0], out_hw[1]), dtype=np.float32)
    status = _resize(image.ctypes.data, w, h, c, *box, flip, MEAN.ctypes.data, STD.ctypes.data,
                     out.ctypes.data, out_hw[1], out_hw[0])
    assert status == 0
    return out


def torch_reference(image, box, out_hw, flip):
    x0, y0, w, h = (int(v) for v in box)
    crop = torch.from_numpy(image[y0:y0 + h, x0:x0 + w]).permute(2, 0, 1).double()[None]
    resized = torch.nn.functional.interpolate(crop, size=out_hw, mode="bilinear",
                                              align_corners=False)[0]
    if flip:
        resized = resized.flip(-1)
    c = image.shape[2]
    mean = torch.from_numpy(MEAN[:c]).double()[:, None, None]
    std = torch.from_numpy(STD[:c]).double()[:, None, None]
    return ((resized / 255 - mean) / std).numpy()


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("size,box,out_hw", [
    ((375, 500), (0, 0, 500, 375), (224, 224)),   # a photo, down
    ((31, 17), (0, 0, 17, 31), (45, 40)),         # up, odd
    ((63, 47), (5, 9, 33, 21), (13, 29)),         # a crop, mixed
    ((9, 11), (3, 2, 1, 1), (2, 3)),              # a 1x1 box
    ((40, 50), (0, 0, 50, 40), (1, 1)),           # to one pixel
])
@pytest.mark.parametrize("flip", [False, True])
def test_resize_matches_torch_interpolate(channels, size, box, out_hw, flip):
    rng = np.random.default_rng(sum(size) + channels)
    image = rng.integers(0, 256, size=(size[0], size[1], channels), dtype=np.uint8)
    got = ours(image, box, out_hw, flip)
    want = torch_reference(image, box, out_hw, flip)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)
