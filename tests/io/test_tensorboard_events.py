"""nnengine train --tensorboard DIR (issue 26): the event file read back by
TensorBoard's own reader (event_accumulator) holds each epoch's scalars, equal
to the CSV log's; every record's framing and masked CRC-32C checked against
a bitwise CRC written here."""
import csv
import struct
import subprocess

import pytest
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import event_pb2

from conftest import CLI

FASHION = "/usr/share/datasets/fashion-mnist"


def crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c_bitwise(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = path.read_bytes()
    at = 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        assert length_crc == masked(data[at:at + 8]), f"record at {at}: the length's CRC"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        assert body_crc == masked(body), f"record at {at}: the data's CRC"
        yield body
        at += 12 + length + 4


def test_crc32c_reference_matches_the_standard_check_value():
    # RFC 3720's check value for "123456789".
    assert crc32c_bitwise(b"123456789") == 0xE3069283


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not CLI.exists():
        pytest.fail(f"{CLI} is missing: run `make cli` first")
    out = tmp_path_factory.mktemp("tb")
    done = subprocess.run([str(CLI), "train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "3",
                           "--device", "cpu", "--quiet", "--log", str(out / "run.csv"),
                           "--tensorboard", str(out / "events")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def test_tensorboard_reads_the_scalars_of_every_epoch(run):
    acc = event_accumulator.EventAccumulator(str(run / "events"))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert sorted(tags) == sorted(["train/loss", "train/accuracy", "test/loss", "test/accuracy",
                                   "train/images_per_s"])
    with open(run / "run.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3]
    for tag, column in [("train/loss", "train_loss"), ("train/accuracy", "train_acc"),
                        ("test/loss", "test_loss"), ("test/accuracy", "test_acc")]:
        events = acc.Scalars(tag)
        assert [e.step for e in events] == [1, 2, 3]
        for e, r in zip(events, rows):
            assert e.value == pytest.approx(float(r[column]), rel=1e-6), (tag, e.step)
    # Real training: the loss falls.
    losses = [e.value for e in acc.Scalars("train/loss")]
    assert losses[-1] < losses[0]


def test_event_records_are_framed_with_masked_crc32c(run):
    (path,) = list((run / "events").glob("events.out.tfevents.*"))
    bodies = list(records(path))
    assert len(bodies) == 4  # the file version, then one event per epoch
    first = event_pb2.Event.FromString(bodies[0])
    assert first.file_version == "brain.Event:2" and first.wall_time > 1.7e9
    steps = [event_pb2.Event.FromString(b).step for b in bodies[1:]]
    assert steps == [1, 2, 3]


def test_an_unwritable_tensorboard_folder_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = subprocess.run([str(CLI), "train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1",
                           "--device", "cpu", "--tensorboard", str(blocker / "events")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--tensorboard" in done.stderr and str(blocker / "events") in done.stderr
