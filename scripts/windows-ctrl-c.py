#!/usr/bin/env python3
"""Ctrl+C in the Windows build, under Wine (issue 27): nnengine.exe trains
an MLP on a small IDX dataset in a pseudo-terminal, which Wine's console
turns into a Windows console; a typed Ctrl+C (byte 0x03) reaches the CLI's
SetConsoleCtrlHandler as CTRL_C_EVENT. As on Linux (tests/cli's
ctrl_c_finishes_the_step_saves_and_exits_130): the step finishes, the
weights are saved, no temporary file stays, the exit status is 130.

    scripts/windows-ctrl-c.py WINE build-win/nnengine.exe

Prints one line per check; exits 1 when any failed."""
import os
import pty
import random
import re
import select
import struct
import subprocess
import sys
import tempfile
import time


def write_idx(path, magic, dims, data):
    with open(path, "wb") as f:
        f.write(struct.pack(">I" + "I" * len(dims), magic, *dims) + bytes(data))


def plain(raw):
    """The console's output as text: Wine's console writes spaces as cursor
    moves (ESC [ n C) and wraps letters in cursor show/hide sequences."""
    text = raw.decode(errors="replace").replace("\r", "")
    text = re.sub(r"\x1b\[(\d*)C", lambda m: " " * int(m.group(1) or 1), text)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def main():
    wine, exe = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="nn_ctrl_c_")
    rng = random.Random(5)
    count = 184
    write_idx(os.path.join(work, "train-images-idx3-ubyte"), 0x803, [count, 28, 28],
              [rng.randrange(256) for _ in range(count * 28 * 28)])
    write_idx(os.path.join(work, "train-labels-idx1-ubyte"), 0x801, [count], [i % 10 for i in range(count)])
    weights = os.path.join(work, "w.safetensors")
    master, slave = pty.openpty()
    p = subprocess.Popen([wine, exe, "train", "mlp", "--data", work, "--device", "cpu", "--epochs", "100000",
                          "--batch", "8", "--save", weights], stdin=slave, stdout=slave, stderr=slave,
                         env=dict(os.environ, WINEDEBUG="-all"), close_fds=True)
    os.close(slave)
    output = b""

    def read_for(seconds, until=None):
        nonlocal output
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                output += chunk
                if until and until in plain(output):
                    return

    read_for(60, "loss")
    started = "loss" in plain(output)
    os.write(master, b"\x03")
    read_for(30, "stopped")
    if "stopped" not in plain(output):
        p.send_signal(2)
        read_for(30, "stopped")
        print("note: the typed Ctrl+C did not arrive; SIGINT to Wine did" if "stopped" in plain(output) else "note: neither the typed Ctrl+C nor SIGINT arrived")
    read_for(20)
    try:
        status = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        status = None
    text = plain(output)
    checks = [
        (started, "training started (a loss printed) before the Ctrl+C"),
        ("interrupted: finishing the current step, then saving" in text, "the handler said it would finish and save"),
        (re.search(r"stopped by Ctrl\+C in epoch \d+ after step \d+ of \d+", text) is not None,
         "it stopped by Ctrl+C after a step"),
        ("saved the weights to" in text and os.path.isfile(weights), "it saved the weights"),
        (not [f for f in os.listdir(work) if ".tmp." in f], "no temporary file stayed"),
        (status == 130, f"exit status 130 (got {status})"),
    ]
    failed = 0
    for ok, what in checks:
        print(("ok   " if ok else "FAIL ") + what)
        failed += not ok
    if failed:
        print("its output:\n" + text[-2000:])
    subprocess.run(["rm", "-rf", work])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
