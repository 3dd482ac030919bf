#!/usr/bin/env python3
"""LeNet-5, one epoch of Fashion-MNIST on the CPU (1 thread, seed 1), by the
Linux build and by the Windows build under Wine: every step's loss must be
the same float (issue 27: the Windows build trains as the Linux one does).
Usage: compare-windows-lenet.py WINE LINUX_NNENGINE WINDOWS_NNENGINE_EXE DATA"""
import json
import os
import subprocess
import sys
import tempfile


def train(command, steps_log):
    args = ["train", "lenet5", "--data", data, "--epochs", "1", "--threads", "1", "--device", "cpu",
            "--seed", "1", "--log-steps", steps_log]
    run = subprocess.run(command + args, capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        sys.exit(f"FAIL {' '.join(command)} exited {run.returncode}:\n{run.stderr[-2000:]}")
    epoch = [line for line in run.stdout.replace("\r", "").splitlines() if line.startswith("epoch 1/1")]
    with open(steps_log, encoding="utf-8") as f:  # Windows writes CRLF; universal newlines drop the CR
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    return losses, epoch[0] if epoch else "(no epoch line)"


wine, linux_cli, windows_exe, data = sys.argv[1:5]
with tempfile.TemporaryDirectory() as tmp:
    linux, linux_epoch = train([linux_cli], os.path.join(tmp, "linux.jsonl"))
    windows, windows_epoch = train([wine, windows_exe], os.path.join(tmp, "windows.jsonl"))
print(f"linux:   {linux_epoch}\nwindows: {windows_epoch}")
differ = [i for i, (a, b) in enumerate(zip(linux, windows)) if a != b]
if len(linux) != len(windows) or not linux or differ:
    first = differ[0] if differ else min(len(linux), len(windows))
    print(f"FAIL lenet5 under Wine: {len(windows)} steps against {len(linux)}; first different loss at step "
          f"{first + 1}")
    sys.exit(1)
print(f"ok   lenet5 under Wine: all {len(linux)} step losses equal the Linux build's")
