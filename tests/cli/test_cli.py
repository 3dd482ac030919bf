#!/usr/bin/env python3
"""The nnengine command line: flags, exit statuses, messages for bad input,
output format, the JSON log, --save/eval, and a short training run on a
slice of Fashion-MNIST whose accuracy must pass a bound.

usage: tests/cli/test_cli.py BUILD/nnengine [NAME-SUBSTRING]
(with a substring, only the tests whose name contains it run).
Standard library only. The last line is "N passed, N failed"."""
import gzip
import json
import random
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from png_files import write_png, write_rgb_png  # noqa: E402

FASHION = "/usr/share/datasets/fashion-mnist"
EPOCH_LINE = re.compile(
    r"^epoch +\d+/\d+  train loss \d+\.\d{4} acc +\d+\.\d\d%  (test|val) loss \d+\.\d{4} "
    r"acc +\d+\.\d\d% +\d+\.\d s +\d+ img/s$")

binary = os.path.abspath(sys.argv[1])
only = sys.argv[2] if len(sys.argv) > 2 else ""
work = tempfile.mkdtemp(prefix="nn_cli_")
passed, failed = 0, 0


def run(*args, timeout=600, env=None):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                       env=None if env is None else {**os.environ, **env})
    if "AddressSanitizer" in p.stderr or "runtime error" in p.stderr:
        raise AssertionError("sanitizer report:\n" + p.stderr[-3000:])
    return p


def expect(args, status, *fragments, stream="stderr"):
    p = run(*args)
    text = getattr(p, stream)
    assert p.returncode == status, f"nnengine {' '.join(args)}: exit {p.returncode}, want {status}\n{p.stderr}"
    for f in fragments:
        assert f in text, f"nnengine {' '.join(args)}: {stream} lacks {f!r}:\n{text}"
    return p


def test(fn):
    global passed, failed
    only_here = only or os.environ.get("NN_ENGINE_CLI_ONLY", "")  # a substring of the names to run
    if only_here not in fn.__name__:
        return fn
    started = time.monotonic()
    # NN_TESTS_TIMES=1 appends each test's wall time, as the C suite's does.
    took = lambda: f" [{time.monotonic() - started:.2f} s]" if os.environ.get("NN_TESTS_TIMES", "0") != "0" else ""
    try:
        fn()
        passed += 1
        print(f"ok   {fn.__name__}{took()}")
    except Exception as e:  # one failing case must not hide the others
        failed += 1
        print(f"FAIL {fn.__name__}{took()}: {e}")
    return fn


def path(*parts):
    return os.path.join(work, *parts)


def write_idx(file, magic, dims, data, gz=False):
    blob = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)
    with (gzip.open if gz else open)(file, "wb") as f:
        f.write(blob)



def shape_image(kind, rng, size=48):
    """Stripes (horizontal or vertical, any period and phase) or dots, in
    random colours on a random dark background."""
    bg = [rng.randrange(0, 100) for _ in range(3)]
    fg = [rng.randrange(150, 256) for _ in range(3)]
    on = [[False] * size for _ in range(size)]
    if kind == "stripes":
        period, width, vertical = rng.randrange(6, 12), rng.randrange(2, 4), rng.random() < 0.5
        phase = rng.randrange(period)
        for y in range(size):
            for x in range(size):
                on[y][x] = ((x if vertical else y) + phase) % period < width
    else:
        for _ in range(rng.randrange(8, 16)):
            cx, cy, r = rng.randrange(size), rng.randrange(size), rng.randrange(2, 4)
            for y in range(max(0, cy - r), min(size, cy + r + 1)):
                for x in range(max(0, cx - r), min(size, cx + r + 1)):
                    on[y][x] = on[y][x] or (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    return [c for y in range(size) for x in range(size) for c in (fg if on[y][x] else bg)]


def idx_dir(name, images=20, labels=20, magic=0x803, cut=0):
    d = path(name)
    os.makedirs(d)
    pixels = bytes((i * 37) % 256 for i in range(images * 28 * 28))
    write_idx(os.path.join(d, "train-images-idx3-ubyte.gz"), magic, [images, 28, 28],
              pixels[:len(pixels) - cut], gz=True)
    write_idx(os.path.join(d, "train-labels-idx1-ubyte"), 0x801, [labels], [i % 10 for i in range(labels)])
    return d


def small_images(name, count, classes, step, seed):
    """An IDX training set of `count` 8x8 images, image i of class i % classes,
    its pixels the class times `step` plus noise below 60: classes a small
    model tells apart in a few steps."""
    d = path(name)
    os.makedirs(d)
    rng = random.Random(seed)
    labels = [i % classes for i in range(count)]
    write_idx(os.path.join(d, "train-images-idx3-ubyte"), 0x803, [count, 8, 8],
              bytes(min(255, labels[i // 64] * step + rng.randrange(60)) for i in range(count * 64)))
    write_idx(os.path.join(d, "train-labels-idx1-ubyte"), 0x801, [count], labels)
    return d


@test
def help_and_usage():
    expect([], 2, "usage: nnengine COMMAND")
    p = expect(["--help"], 0, "train", "eval", "devices", stream="stdout")
    for command in ["train", "eval", "devices"]:
        expect([command, "--help"], 0, "usage: nnengine " + command, stream="stdout")
    expect(["train", "--help"], 0, "--epochs", "--batch", "--lr", "--momentum", "--weight-decay",
           "--device", "--threads", "--seed", "--limit", "--save", "--log", stream="stdout")
    expect(["frobnicate"], 2, "unknown command 'frobnicate'")


@test
def readme_and_help_name_the_same_flags_and_models():
    # Issue 41: the README's command-line section and --help drift apart unless held together.
    readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")).read()
    start = readme.index("## The command line: `nnengine`")
    section = readme[start:readme.index("\n## ", start + 1)]
    flag = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
    in_help = set()
    for command in ["train", "train gpt-mini", "eval", "export", "devices", "generate"]:
        text = expect([*command.split(), "--help"], 0, stream="stdout").stdout
        listed = set(re.findall(r"^  (--[a-z][a-z0-9-]*)", text, re.M))
        assert listed or command == "devices", text  # devices takes no flags
        missing = sorted(f for f in listed if f not in set(flag.findall(section)) and f != "--help")
        assert not missing, f"nnengine {command} --help lists {missing}, which the README's command-line section lacks"
        in_help |= listed
    others = {"--logdir"}  # other programs' flags the section shows: tensorboard --logdir DIR
    unknown = sorted(set(flag.findall(section)) - in_help - others - {"--help"})
    assert not unknown, f"the README's command-line section names {unknown}, which no command's --help lists"
    models = re.search(r"^models: (.+)$", expect(["--help"], 0, stream="stdout").stdout, re.M).group(1).split(", ")
    synopsis = section[:section.index("```", section.index("```") + 3)]
    assert all(m in synopsis for m in models), (models, synopsis)


@test
def bad_flags():
    expect(["train", "resnet", "--data", FASHION], 2, "unknown model 'resnet'", "lenet5, mlp")
    expect(["train", "lenet5", "--data", FASHION, "--bogus", "1"], 2, "unknown flag '--bogus'")
    # Issue 41: a typo gets the name it is near; a word near nothing gets none.
    for args, said in [(["train", "lenet5", "--data", FASHION, "--epoch", "3"], "'--epoch' (did you mean --epochs?)"),
                       (["train", "lenet5", "--data", FASHION, "--hlep"], "'--hlep' (did you mean --help?)"),
                       (["eval", "lenet5", "--weigths", "w", "--data", FASHION], "(did you mean --weights?)"),
                       (["train", "resnet18cifar", "--data", FASHION], "'resnet18cifar' (did you mean resnet18-cifar?"),
                       (["eval", "LeNet5", "--weights", "w", "--data", FASHION], "(did you mean lenet5?"),
                       (["export", "mobilenetv2", "--weights", "w", "--onnx", "o.onnx"], "(did you mean mobilenet_v2?")]:
        expect(args, 2, said)
    p = expect(["train", "lenet5", "--data", FASHION, "--zzzzzz"], 2, "unknown flag '--zzzzzz'")
    assert "did you mean" not in p.stderr, p.stderr
    expect(["train", "lenet5", "--data", FASHION, "--epochs", "0"], 2, "--epochs must be in [1,")
    expect(["train", "lenet5", "--data", FASHION, "--epochs", "ten"], 2, "--epochs needs a whole number, got 'ten'")
    expect(["train", "lenet5", "--data", FASHION, "--lr"], 2, "--lr needs a value")
    expect(["train", "lenet5", "--data", FASHION, "--lr", "-1"], 2, "--lr must be in")
    expect(["train", "lenet5", "--data", FASHION, "--momentum", "nan"], 2, "--momentum needs a number")
    expect(["train", "lenet5"], 2, "--data DIR is required")
    expect(["train", "--data", FASHION], 2, "missing argument")
    expect(["train", "lenet5", "mlp", "--data", FASHION], 2, "unexpected argument 'mlp'")
    expect(["train", "lenet5", "--data", FASHION, "--schedule", "triangle"], 2,
           "--schedule takes constant, step, multistep, exponential, cosine, onecycle or linear")
    expect(["train", "lenet5", "--data", FASHION, "--normalize", "0.5,0"], 2, "--normalize takes")
    expect(["train", "lenet5", "--data", FASHION, "--device", "tpu", "--limit", "10"], 2,
           "cannot open device 'tpu'", "unknown device")
    expect(["devices", "--all"], 2, "unknown flag '--all'")
    expect(["eval", "lenet5", "--data", FASHION], 2, "--weights FILE and --data DIR are required")


@test
def bad_data():
    expect(["train", "lenet5", "--data", path("nowhere")], 2, "nowhere: no such folder")
    # Issue 41: a file given as the data folder is named as a file.
    notes = path("notes.txt")
    open(notes, "w").write("not data\n")
    for model in ["lenet5", "alexnet"]:
        expect(["train", model, "--data", notes], 2, "notes.txt: a file, not a folder")
    empty = path("empty")
    os.makedirs(empty)
    expect(["train", "lenet5", "--data", empty], 2, "neither IDX files")
    d = idx_dir("magic", magic=0x804)
    expect(["train", "lenet5", "--data", d], 2, "train-images-idx3-ubyte.gz: not an IDX image",
           "magic number 0x00000804")
    d = idx_dir("truncated", cut=100)
    expect(["train", "lenet5", "--data", d], 2, "truncated")
    d = idx_dir("counts", images=20, labels=19)
    expect(["train", "lenet5", "--data", d], 2, "19 labels, but the image file has 20 images")
    d = idx_dir("no-labels")
    os.remove(os.path.join(d, "train-labels-idx1-ubyte"))
    expect(["train", "lenet5", "--data", d], 2, "missing train-labels-idx1-ubyte[.gz]")
    # class folders: one image of the wrong size
    folders = path("sizes")
    for c in "ab":
        os.makedirs(os.path.join(folders, c))
        for i in range(3):
            write_png(os.path.join(folders, c, f"{i}.png"), 28, 28, [i * 9] * 28 * 28)
    write_png(os.path.join(folders, "b", "9.png"), 28, 27, [0] * 28 * 27)
    expect(["train", "lenet5", "--data", folders], 2, "b/9.png: image is 28x27, but the dataset's images are 28x28")
    # an empty class folder
    os.remove(os.path.join(folders, "b", "9.png"))
    os.makedirs(os.path.join(folders, "c"))
    expect(["train", "lenet5", "--data", folders], 2, "/c: class folder has no readable PNG or JPEG image")
    # images lenet5 cannot take
    small = path("small")
    for c in "ab":
        os.makedirs(os.path.join(small, c))
        for i in range(4):
            write_png(os.path.join(small, c, f"{i}.png"), 8, 8, [i * 20] * 64)
    expect(["train", "lenet5", "--data", small], 2, "lenet5 takes 1x28x28 images; the data has 1x8x8")
    # AlexNet decodes photos of any size from class folders, so IDX files are not its data
    expect(["train", "alexnet", "--data", FASHION], 2, "no class folders (expected DIR/<class>/<image>")
    expect(["train", "alexnet-tv", "--data", FASHION], 2, "no class folders")
    expect(["train", "mlp", "--data", small, "--save", path("no", "such", "dir", "w.safetensors")], 2,
           "cannot write")


@test
def vulkan_profile_times_the_captured_steps_stretches():
    """NN_ENGINE_VULKAN_PROFILE=1 with the step captured: a table of its
    stretches (the commands between barriers) from every replay, whose
    times add up to the replay's."""
    p = run("train", "lenet5", "--data", FASHION, "--device", "vulkan", "--epochs", "1", "--batch", "64",
            "--limit", "320", env={"NN_ENGINE_VULKAN_PROFILE": "1"})
    assert p.returncode == 0, p.stderr
    head = re.search(r"a captured step, (\d+) stretches, ([0-9.]+) us a replay \(mean of (\d+)\)", p.stderr)
    assert head, p.stderr[-3000:]
    stretches, total, samples = int(head.group(1)), float(head.group(2)), int(head.group(3))
    # 5 full steps, of which the first ones run eagerly (one of them while it is captured)
    assert stretches >= 2 and 1 <= samples <= 4, head.group(0)
    rows = re.findall(r"^  stretch +(\d+) +([0-9.]+) us  (.+)$", p.stderr, re.M)
    assert [int(r[0]) for r in rows] == list(range(1, stretches + 1)), rows
    assert all(float(r[1]) > 0 for r in rows), rows
    assert abs(sum(float(r[1]) for r in rows) - total) <= 0.02 * total + 0.05, (rows, total)
    # the replay's schedule may place the next batch's gathers and the rate's update last
    assert "conv+pool forward" in rows[0][2] and any("sgd_update" in r[2] for r in rows), rows


@test
def devices_lists_the_cpu():
    p = expect(["devices"], 0, "cpu", stream="stdout")
    assert re.search(r"^cpu +0 ", p.stdout, re.M), p.stdout
    assert "vulkan" in p.stdout, p.stdout


@test
def mlp_on_class_folders_with_validation_split():
    """Two classes that differ in brightness: the MLP must separate them."""
    d = path("bright")
    for c, level in (("dark", 40), ("light", 200)):
        os.makedirs(os.path.join(d, c))
        for i in range(30):
            noise = [(level + (k * 31 + i * 17) % 41 - 20) for k in range(10 * 6)]
            write_png(os.path.join(d, c, f"{i:02d}.png"), 10, 6, noise)
    os.makedirs(os.path.join(d, "light", "nested"))  # sub-folders of a class are not images
    with open(os.path.join(d, "light", "notes.txt"), "w") as f:
        f.write("not an image")
    p = expect(["train", "mlp", "--data", d, "--epochs", "3", "--batch", "8", "--val-fraction", "0.2"], 0,
               "skipped 1 files", "48 training and 12 validation images of 1x6x10, 2 classes")
    lines = p.stdout.splitlines()
    assert len(lines) == 3 and all(EPOCH_LINE.match(l) for l in lines), p.stdout
    assert " val loss " in lines[-1] and lines[-1].split("acc")[2].strip().startswith("100.00%"), lines[-1]


@test
def train_slice_of_fashion_mnist_log_save_and_eval():
    log, weights = path("log.jsonl"), path("lenet.safetensors")
    p = expect(["train", "lenet5", "--data", FASHION, "--limit", "5000", "--epochs", "2",
                "--log", log, "--save", weights, "--seed", "3"], 0, "device: cpu", "5000 training and 10000 test")
    # not a terminal: only the epoch lines on stdout
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and all(EPOCH_LINE.match(l) for l in lines), p.stdout
    records = [json.loads(l) for l in open(log)]
    assert [r["epoch"] for r in records] == [1, 2], records
    for r in records:
        assert set(r) == {"epoch", "train_loss", "train_acc", "test_loss", "test_acc", "seconds",
                          "images_per_s"}, r
        assert 0 <= r["test_acc"] <= 1 and r["seconds"] > 0 and r["images_per_s"] > 0, r
    final = records[-1]
    assert final["test_acc"] >= 0.74, f"test accuracy {final['test_acc']:.4f} after 2 epochs on 5000 images"
    assert final["train_loss"] < records[0]["train_loss"], records
    # the epoch line shows the same figures as the log
    assert f"{100 * final['test_acc']:6.2f}%" in lines[-1], (lines[-1], final)
    # eval reproduces the final test accuracy from the saved weights
    p = expect(["eval", "lenet5", "--weights", weights, "--data", FASHION], 0, "on 10000 test images",
               stream="stdout")
    assert f"accuracy {100 * final['test_acc']:.2f}%" in p.stdout, (p.stdout, final)
    # the same seed gives the same run
    again = expect(["train", "lenet5", "--data", FASHION, "--limit", "5000", "--epochs", "2", "--seed", "3"], 0)
    strip_timing = lambda l: re.sub(r" +[\d.]+ s +\d+ img/s$", "", l)
    assert [strip_timing(l) for l in again.stdout.splitlines()] == [strip_timing(l) for l in lines]


@test
def progress_bar_on_a_terminal():
    import pty
    leader, follower = pty.openpty()
    p = subprocess.run([binary, "train", "mlp", "--data", FASHION, "--limit", "3000", "--epochs", "1",
                        "--batch", "32"], stdout=follower, stderr=subprocess.PIPE, timeout=600)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    text = out.decode("utf-8", "replace").replace("\r\n", "\n")  # the terminal's line ends
    assert p.returncode == 0, p.stderr
    bars = [part for part in text.split("\r") if "ETA" in part]
    assert bars, repr(text[:500])
    assert re.search(r"epoch 1/1 .*94/94 +\d+ img/s  loss \d+\.\d{4}  ETA 0s", text), repr(bars[-1])
    # Issue 41: the evaluation after the epoch shows its progress too.
    assert re.search(r"\repoch 1/1 evaluating \d+/10000", text), repr(text[-600:])
    assert EPOCH_LINE.match(text.split("\r")[-1].replace("\x1b[K", "").strip()), repr(text[-300:])


@test
def eval_limit_and_no_eval():
    # Issue 41: evaluation within a budget. --eval-limit 7: the accuracy is a count of 7 images.
    log = path("eval-limit.jsonl")
    common = ["train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "2", "--quiet"]
    expect(common + ["--eval-limit", "7", "--log", log], 0,
           "evaluating on the first 7 of the 10000 test images after each epoch (--eval-limit)")
    for entry in (json.loads(l) for l in open(log)):
        assert abs(entry["test_acc"] * 7 - round(entry["test_acc"] * 7)) < 1e-6, entry
    # --no-eval: no test figures in the epoch line and the log, and nothing that needs them.
    csv_log = path("no-eval.csv")
    p = expect(common + ["--no-eval", "--log", csv_log], 0)
    # The peak is the run's, the reserved memory the end's (a peak above it read as a contradiction).
    assert re.search(r"peak device memory [\d.]+ MiB allocated \([\d.]+ MiB reserved at the end\)", p.stderr), p.stderr
    lines = [l for l in p.stdout.splitlines() if l.startswith("epoch ")]
    assert len(lines) == 2 and all("(not evaluated)" in l and "test loss" not in l for l in lines), p.stdout
    rows = open(csv_log).read().splitlines()
    assert rows[0].endswith("test_loss,test_acc,seconds,images_per_s") and rows[1].split(",")[3:5] == ["", ""], rows
    for flag, value in [("--save-best", path("best.st")), ("--patience", "2"), ("--eval-limit", "100")]:
        expect(common + ["--no-eval", flag, value], 2, f"--no-eval cannot be combined with {flag}")
    expect(common + ["--eval-limit", "0"], 2, "--eval-limit must be in [1,")


@test
def a_run_too_short_for_its_schedule_names_the_flags_that_fit_it():
    # Issue 41: resnet18-cifar's one-cycle on --limit 256 --epochs 1 stopped with the library's words alone.
    # (torch's OneCycleLR takes 2 steps at pct_start 0.3; at 0.5 its first phase has none)
    expect(["train", "mlp", "--data", FASHION, "--limit", "128", "--epochs", "1", "--schedule", "onecycle",
            "--pct-start", "0.5"], 2,
           "onecycle with total_steps 2", "the run has 2 optimizer steps (--epochs 1 x 2 an epoch)",
           "give more --epochs, more images (--limit) or a smaller --batch, or another --schedule")


@test
def eval_uses_the_normalization_saved_with_the_weights():
    weights, log = path("norm.safetensors"), path("norm.jsonl")
    # Not train's default: eval must find these values in the weights, not recompute "auto".
    expect(["train", "lenet5", "--data", FASHION, "--limit", "1000", "--epochs", "1", "--quiet", "--seed", "7",
            "--normalize", "0.4,0.2", "--log", log, "--save", weights], 0)
    final = [json.loads(l) for l in open(log)][-1]
    p = expect(["eval", "lenet5", "--weights", weights, "--data", FASHION], 0,
               "normalisation saved with the weights: mean 0.4, std 0.2")
    assert f"accuracy {100 * final['test_acc']:.2f}%" in p.stdout and f"loss {final['test_loss']:.4f}" in p.stdout, \
        (p.stdout, final)
    # --normalize overrides the saved values and says so.
    p = expect(["eval", "lenet5", "--weights", weights, "--data", FASHION, "--normalize", "auto"], 0,
               "--normalize auto overrides the normalisation saved with the weights (mean 0.4, std 0.2)")
    assert f"loss {final['test_loss']:.4f}" not in p.stdout, p.stdout
    # Weights without a normalisation (a plain state_dict) fall back to auto, saying so.
    bare = path("bare.safetensors")
    blob = open(weights, "rb").read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    del header["__metadata__"]
    text = json.dumps(header).encode()
    open(bare, "wb").write(struct.pack("<Q", len(text)) + text + blob[8 + size:])
    expect(["eval", "lenet5", "--weights", bare, "--data", FASHION], 0, "carries no normalisation; using --normalize auto")
    expect(["eval", "--help"], 0, "instead of the normalisation saved with the weights", stream="stdout")


@test
def class_names_file_names_idx_classes_in_the_weights_and_the_confusion_matrix():
    names_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "fashion-mnist.names")
    names = open(names_file, encoding="utf-8").read().splitlines()
    assert len(names) == 10 and names[0] == "T-shirt/top" and names[9] == "Ankle boot"
    weights = path("named.safetensors")
    expect(["train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "1", "--quiet", "--save", weights,
            "--class-names", names_file], 0)
    blob = open(weights, "rb").read()
    metadata = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])["__metadata__"]
    assert json.loads(metadata["nn_engine.classes"]) == names, metadata
    p = expect(["eval", "lenet5", "--weights", weights, "--data", FASHION, "--confusion"], 0, stream="stdout")
    assert "  0 T-shirt/top " in p.stdout and "  9 Ankle boot " in p.stdout, p.stdout
    # --class-names overrides the saved names; Windows line ends and a missing last newline are taken.
    other = path("other.names")
    open(other, "wb").write("\r\n".join(f"Klasse {i} \u00e4" for i in range(10)).encode())
    p = expect(["eval", "lenet5", "--weights", weights, "--data", FASHION, "--confusion", "--class-names", other], 0,
               stream="stdout")
    assert "  3 Klasse 3 \u00e4 " in p.stdout and "T-shirt" not in p.stdout, p.stdout
    # Bad files are refused before training, naming the file and the line.
    bad = path("bad.names")
    for content, words in [("a\nb\n", "2 names for the data's 10 classes"),
                           ("\n".join(names + ["extra"]), "line 11: more than the data's 10 classes"),
                           ("a\nb\n\nd", "line 3: an empty name"),
                           ("a\tb\n", "line 1: not UTF-8 text (or a control character)"),
                           (b"\xff\xfe\n", "line 1: not UTF-8 text"),
                           ("x" * 300, "line 1: a name longer than 255 bytes"),
                           ("\n".join(names[:4] + ["a", "b", "a"] + names[7:]), "line 7: repeats line 5's name")]:
        open(bad, "wb").write(content if isinstance(content, bytes) else content.encode())
        expect(["train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1", "--class-names", bad], 2,
               "nnengine train: --class-names " + bad, words)
    expect(["eval", "lenet5", "--weights", weights, "--data", FASHION, "--class-names", path("absent.names")], 2,
           "absent.names", "No such file")
    expect(["train", "--help"], 0, "--class-names FILE", stream="stdout")
    expect(["eval", "--help"], 0, "--class-names FILE", stream="stdout")


@test
def eval_refuses_bad_weights():
    bad = path("bad.safetensors")
    with open(bad, "wb") as f:
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    expect(["eval", "lenet5", "--weights", bad, "--data", FASHION], 2, "bad.safetensors")
    expect(["eval", "lenet5", "--weights", path("absent.safetensors"), "--data", FASHION], 2,
           "absent.safetensors")


# ---- io (issue 7): export to ONNX, --checkpoint / --resume ----

def same_epoch_lines(a, b):
    strip_timing = lambda l: re.sub(r" +[\d.]+ s +\d+ img/s$", "", l)
    return [strip_timing(l) for l in a] == [strip_timing(l) for l in b]


@test
def resume_continues_bit_for_bit():
    data = idx_dir("resume", images=300, labels=300)  # 270 training, 30 validation images
    common = ["train", "lenet5", "--data", data, "--limit", "250", "--device", "cpu", "--batch", "32",
              "--seed", "4", "--epochs", "4"]
    full, part, resumed, ck = (path(n) for n in ["full.st", "part.st", "resumed.st", "ck.st"])
    whole = expect(common + ["--save", full], 0)
    # The default cosine schedule spans --epochs: stop after 2, then resume.
    first = expect(common + ["--stop-after", "2", "--checkpoint", ck, "--save", part], 0)
    second = expect(common + ["--resume", ck, "--save", resumed], 0, "resuming from", "after epoch 2 (step 16)")
    assert open(full, "rb").read() == open(resumed, "rb").read(), "resumed weights differ"
    assert open(full, "rb").read() != open(part, "rb").read()
    lines = whole.stdout.splitlines()
    assert same_epoch_lines(first.stdout.splitlines() + second.stdout.splitlines(), lines), \
        (first.stdout, second.stdout, whole.stdout)
    # A constant schedule: literally 2 epochs, save, resume to 4.
    const = common[:-2] + ["--schedule", "constant"]
    expect(const + ["--epochs", "4", "--save", full], 0)
    expect(const + ["--epochs", "2", "--checkpoint", ck], 0)
    expect(const + ["--epochs", "4", "--resume", ck, "--save", resumed], 0)
    assert open(full, "rb").read() == open(resumed, "rb").read(), "resumed weights differ (constant lr)"
    # Refusals: another seed, another batch, a weights-only file, a finished run, another model.
    expect(const + ["--epochs", "4", "--resume", ck, "--seed", "5"], 2, "--seed 4", "give the same --seed")
    expect(const + ["--epochs", "4", "--resume", ck, "--batch", "16"], 2,
           "give the same --data, --limit, --batch and --accumulate")
    expect(const + ["--epochs", "4", "--resume", ck, "--accumulate", "2"], 2, "--accumulate 2")
    # Issue 41: another model is refused by name (it was a tensor's shape), another setting named.
    expect(["train", "mlp", "--data", data, "--limit", "250", "--device", "cpu", "--batch", "32", "--seed", "4",
            "--epochs", "4", "--schedule", "constant", "--resume", ck], 2,
           "--resume " + ck + " was saved by a run of model lenet5, not mlp")
    p = expect(const + ["--epochs", "4", "--resume", ck, "--lr", "0.01", "--save", resumed], 0,
               "was saved by a run with --lr (default); this run has --lr 0.01 and continues with it")
    assert "was saved by a run with --epochs 2; this run has --epochs 4" in p.stderr, p.stderr
    assert p.stderr.count("note: --resume") == 2, p.stderr  # --lr and --epochs; nothing else differs
    expect(const + ["--epochs", "4", "--resume", ck, "--limit", "200"], 2, "(200 images, batch 32,")
    expect(const + ["--epochs", "4", "--resume", full], 2, "full.st", "not an nn-engine training state")
    expect(const + ["--epochs", "2", "--resume", ck], 2, "already trained 2 epochs")
    expect(["train", "mlp", "--data", data, "--resume", ck], 2, "ck.st", "was saved by a run of model lenet5, not mlp")
    expect(const + ["--epochs", "4", "--checkpoint", path("missing", "ck.st")], 2, "cannot write")


@test
def resume_inside_an_epoch_is_bit_for_bit():
    # Issue 41: a run stopped inside an epoch (Ctrl+C, or --stop-after-step
    # here, at chosen steps) and resumed ends with an uninterrupted run's
    # weights, bit for bit, on the CPU and on Vulkan: with augmentation drawn
    # on the device, --accumulate and a smaller last step (7 full batches of
    # 32 and one of 26: 4 optimizer steps an epoch, the last of 1 batch and
    # the tail).
    data = idx_dir("resume-mid", images=300, labels=300)
    for device, stops in [("cpu", [1, 3, 5, 7]), ("vulkan", [3, 6])]:
        common = ["train", "lenet5", "--data", data, "--limit", "250", "--device", device, "--batch", "32",
                  "--accumulate", "2", "--crop-pad", "2", "--flip", "--seed", "4", "--epochs", "2"]
        full, resumed, ck = (path(f"mid-{device}-{n}") for n in ["full.st", "resumed.st", "ck.st"])
        whole = expect(common + ["--save", full], 0)
        epoch_lines = [l for l in whole.stdout.splitlines() if l.startswith("epoch ")]
        for stop in stops:
            epoch, within = stop // 4 + 1, stop % 4
            expect(common + ["--stop-after-step", str(stop), "--checkpoint", ck], 0,
                   f"stopped after step {stop} of the run (--stop-after-step) in epoch {epoch} after step {within} "
                   "of 4", f"wrote the training state to {ck}")
            second = expect(common + ["--resume", ck, "--save", resumed], 0,
                            f"within epoch {epoch} after its step {within} (stopped part way)")
            assert open(full, "rb").read() == open(resumed, "rb").read(), f"{device}: stopped at {stop}: weights differ"
            # The stopped epoch's line too is the uninterrupted run's: the state keeps its figures so far.
            again = [l for l in second.stdout.splitlines() if l.startswith("epoch ")]
            assert same_epoch_lines(again, epoch_lines[epoch - 1:]), (device, stop, again, epoch_lines)
    # At an epoch's end the run ends as after --stop-after; the count continues across --resume.
    expect(common + ["--stop-after-step", "4", "--checkpoint", ck], 0,
           "stopped after step 4 of the run (--stop-after-step) at the end of epoch 1")
    expect(common + ["--stop-after-step", "4", "--resume", ck], 2, "already trained 4 optimizer steps",
           "--stop-after-step 4")
    # resnet18-cifar's recipe (BatchNorm, Nesterov, one-cycle, shifts and flips) on 8x8 images, CPU
    # only (lavapipe takes minutes for it): 6 steps an epoch, stopped inside each.
    small = small_images("resume-8x8", 200, 10, 25, seed=3)
    common = ["train", "resnet18-cifar", "--data", small, "--limit", "96", "--batch", "16", "--device", "cpu",
              "--epochs", "2", "--quiet"]
    full, resumed, ck = (path(f"mid-cifar-{n}") for n in ["full.st", "resumed.st", "ck.st"])
    expect(common + ["--save", full], 0)
    for stop in [2, 9]:
        expect(common + ["--stop-after-step", str(stop), "--checkpoint", ck], 0, "(--stop-after-step)")
        expect(common + ["--resume", ck, "--save", resumed], 0, "(stopped part way)")
        assert open(full, "rb").read() == open(resumed, "rb").read(), f"resnet18-cifar: stopped at {stop}: weights differ"


@test
def vit_tiny_trains_with_its_recipe_and_refuses_what_it_cannot_take():
    # Issue 34: the vision transformer with its recipe (AdamW, warm-up and cosine, label smoothing,
    # shifts and flips) on 8x8 images (4 patches), CPU; its ONNX export runs.
    small = small_images("vit-8x8", 48, 3, 80, seed=4)
    weights = path("vit.safetensors")
    r = expect(["train", "vit-tiny", "--data", small, "--batch", "16", "--epochs", "2",
                "--device", "cpu", "--quiet", "--save", weights], 0,
               "adamw lr 0.001 (cosine, warm-up)", "weight decay 0.05, label smoothing 0.1",
               "shifts of up to 2 pixels, random flips")
    assert len([l for l in r.stdout.splitlines() if l.startswith("epoch ")]) == 2, r.stdout
    expect(["train", "vit-tiny", "--data", small, "--batch", "16", "--epochs", "1", "--device", "cpu", "--quiet",
            "--label-smoothing", "0", "--optimizer", "sgd"], 0, "sgd lr 0.05", "label smoothing 0,")
    expect(["train", "vit-tiny", "--data", small, "--label-smoothing", "1.5"], 2, "--label-smoothing")
    odd = path("vit-10x10")
    os.makedirs(odd)
    write_idx(os.path.join(odd, "train-images-idx3-ubyte"), 0x803, [20, 10, 10], bytes(2000))
    write_idx(os.path.join(odd, "train-labels-idx1-ubyte"), 0x801, [20], [i % 2 for i in range(20)])
    expect(["train", "vit-tiny", "--data", odd, "--device", "cpu"], 2, "vit-tiny takes square images whose side is a multiple of 4",
           "10x10")


@test
def gpt_mini_learns_a_text_resumes_and_generates():
    # Issue 34: the language model of bytes on a small made-up text, on the CPU: the held-out loss
    # falls far below a uniform guess's ln 256 = 5.55, bits per byte are the loss over ln 2, a run
    # stopped and resumed ends with the uninterrupted run's weights, and generate samples from the
    # saved weights (the same seed, the same bytes).
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "kappa", "omega"]
    corpus = path("corpus.txt")
    with open(corpus, "w") as f:
        f.write("".join(" ".join(rng.choice(words) for _ in range(rng.randrange(3, 7))) + f" {rng.randrange(100)}.\n"
                        for _ in range(2000)))
    common = ["train", "gpt-mini", "--text", corpus, "--context", "32", "--width", "32", "--depth", "1", "--heads", "2",
              "--batch", "16", "--steps", "150", "--lr", "3e-3", "--eval-every", "75", "--device", "cpu", "--quiet"]
    full, resumed, ck, log = (path(n) for n in ["gpt-full.st", "gpt-resumed.st", "gpt-ck.st", "gpt-log.json"])
    r = expect(common + ["--save", full, "--log", log, "--sample", "0"], 0, "warm-up 15 steps, cosine to 0.0003",
               "weight decay 0.1 on matrices and embeddings")
    lines = [l for l in r.stdout.splitlines() if l.startswith("step ")]
    assert len(lines) == 2 and lines[-1].startswith("step 150/150  train loss"), r.stdout
    entries = [json.loads(l) for l in open(log)]
    assert [e["step"] for e in entries] == [75, 150], entries
    for e in entries:
        assert abs(e["val_bits_per_byte"] - e["val_loss"] / 0.6931471805599453) < 1e-6, e
    assert entries[-1]["val_loss"] < min(2.0, entries[0]["val_loss"]), entries
    expect(common + ["--stop-after-step", "100", "--checkpoint", ck, "--sample", "0"], 0,
           "stopped after step 100 of 150", "wrote the training state")
    expect(common + ["--resume", ck, "--save", resumed, "--sample", "0"], 0, "resuming from")
    assert open(full, "rb").read() == open(resumed, "rb").read(), "resumed weights differ"
    expect(common + ["--steps", "200", "--resume", ck], 2, "saved by another run")

    def generate(*args):  # bytes: a sample need not be UTF-8
        p = subprocess.run([binary, "generate", full, "--device", "cpu", *args], capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout
    a, b = generate("--prompt", "alpha", "--bytes", "60", "--seed", "5"), generate("--prompt", "alpha", "--bytes", "60",
                                                                              "--seed", "5")
    assert a == b and a.startswith(b"alpha") and len(a) == 5 + 60 + 1, a
    assert generate("--prompt", "alpha", "--bytes", "60", "--seed", "6") != a
    assert len(generate("--bytes", "40", "--no-prompt", "--top-k", "3")) == 41
    # a sample of the trained model reads like its text: mostly the words' letters, spaces and digits
    text = generate("--bytes", "400", "--temperature", "0.5")
    assert sum(chr(c) in "abcdeghklmopt .0123456789\n" for c in text) > 0.9 * len(text), text

    expect(["generate", ck], 2, "training state")
    lenet = path("gpt-lenet.st")
    expect(["train", "lenet5", "--data", idx_dir("gpt-lenet"), "--epochs", "1", "--save", lenet, "--quiet"], 0)
    expect(["generate", lenet], 2, "no \"nn_engine.gpt\" in its metadata")
    expect(["train", "gpt-mini", "--text", path("nowhere.txt")], 2, "nowhere.txt")
    expect(["train", "gpt-mini", "--data", corpus], 2, "--text")
    expect(["train", "lenet5", "--text", corpus], 2, "--text trains gpt-mini, not lenet5")
    expect(common + ["--heads", "3"], 2, "--heads 3 does not divide --width 32")
    expect(common + ["--context", "40000"], 2, "a window of --context 40000")
    expect(common + ["--warmup", "150"], 2, "--warmup 150")
    expect(["train", "gpt-mini", "--help"], 0, "--text", "--context", "--temperature", stream="stdout")


@test
def schedule_accumulate_and_ema_resume_bit_for_bit():
    # A one-cycle schedule, 2 batches per step and a weights' average, stopped
    # and resumed: the saved (averaged) weights equal an uninterrupted run's.
    data = idx_dir("resume-extras", images=300, labels=300)
    common = ["train", "lenet5", "--data", data, "--limit", "250", "--device", "cpu", "--batch", "16",
              "--seed", "4", "--epochs", "3", "--schedule", "onecycle", "--max-lr", "0.1",
              "--accumulate", "2", "--ema", "0.9"]
    full, resumed, ck = (path(n) for n in ["x-full.st", "x-resumed.st", "x-ck.st"])
    expect(common + ["--save", full], 0, "accumulating the gradients of 2 batches", "moving average")
    expect(common + ["--stop-after", "1", "--checkpoint", ck], 0)
    expect(common + ["--resume", ck, "--save", resumed], 0, "after epoch 1 (step 8)")
    assert open(full, "rb").read() == open(resumed, "rb").read(), "resumed weights differ"
    no_ema = [a for a in common if a not in ("--ema", "0.9")]
    expect(no_ema + ["--resume", ck], 2, "moving-average")
    for schedule in ["step", "exponential", "cosine", "constant", "linear"]:
        expect(common[:-6] + ["--schedule", schedule, "--warmup", "3", "--step-size", "4", "--gamma", "0.5",
                              "--epochs", "1"], 0)
    expect(common[:-6] + ["--schedule", "multistep", "--milestones", "3,5", "--epochs", "1"], 0)
    expect(common[:-6] + ["--schedule", "multistep", "--milestones", "5,3"], 2, "--milestones")
    expect(common[:-6] + ["--schedule", "multistep"], 2, "needs --milestones")
    expect(common[:-6] + ["--schedule", "triangle"], 2, "--schedule takes")


@test
def export_writes_onnx_and_refuses_bad_input():
    data = idx_dir("export", images=60, labels=60)
    weights, onnx = path("export.safetensors"), path("lenet.onnx")
    expect(["train", "lenet5", "--data", data, "--epochs", "1", "--device", "cpu", "--save", weights], 0)
    expect(["export", "--help"], 0, "usage: nnengine export", "--input-shape", "--static-batch", stream="stdout")
    expect(["export", "lenet5", "--weights", weights, "--onnx", onnx], 0, "input [batch, 1, 28, 28], opset 17")
    blob = open(onnx, "rb").read()
    # ModelProto: ir_version 8 first, then the producer; the initializers carry PyTorch names.
    assert blob[:2] == b"\x08\x08" and b"nn-engine" in blob[:40], blob[:40]
    assert all(name.encode() in blob for name in ["c1.weight", "l3.bias", "Conv", "Gemm", "MaxPool"])
    expect(["export", "lenet5", "--weights", weights, "--onnx", onnx, "--input-shape", "3,1,28,28",
            "--static-batch"], 0, "input [3, 1, 28, 28]")
    expect(["export", "lenet5", "--weights", weights], 2, "--onnx OUT are required")
    expect(["export", "lenet5", "--weights", weights, "--onnx", onnx, "--input-shape", "1,28,28"], 2,
           "--input-shape takes N,C,H,W")
    expect(["export", "lenet5", "--weights", weights, "--onnx", onnx, "--input-shape", "1,1,32,32"], 2,
           "lenet5 takes 1x28x28")
    expect(["export", "mlp", "--weights", weights, "--onnx", onnx], 2, "export.safetensors", "in the file, expected")
    expect(["export", "lenet5", "--weights", weights, "--onnx", onnx, "--classes", "7"], 2, "'l3.weight' has shape [10, 84] in the file, expected [7, 84]")
    expect(["export", "lenet5", "--weights", weights, "--onnx", path("missing", "x.onnx")], 2,
           "missing/x.onnx", "No such file or directory")
    expect(["export", "resnet", "--weights", weights, "--onnx", onnx], 2, "unknown model 'resnet'")

# ---- issue 26: best weights, early stopping, CSV log, confusion matrix, model summary ----

@test
def new_flags_in_help_and_their_bad_values():
    expect(["train", "--help"], 0, "--save-best", "--save-best-by", "--patience", "--log-format", "--tensorboard",
           "--quiet", stream="stdout")
    expect(["eval", "--help"], 0, "--confusion", stream="stdout")
    base = ["train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1"]
    expect(base + ["--save-best-by", "speed"], 2, "--save-best-by takes accuracy or loss, got 'speed'")
    expect(base + ["--log-format", "xml"], 2, "--log-format takes json or csv, got 'xml'")
    expect(base + ["--patience", "-1"], 2, "--patience must be in [0,")
    expect(base + ["--save-best", path("no", "such", "best.safetensors")], 2, "--save-best",
           "cannot create files in the folder", path("no", "such"))


def saved_best_epochs(stderr):
    return [int(m) for m in re.findall(r"saved the best weights so far \(epoch (\d+),", stderr)]


@test
def save_best_keeps_the_best_epoch_by_accuracy_or_loss():
    for metric in ["accuracy", "loss"]:
        log, best = path(f"best-{metric}.jsonl"), path(f"best-{metric}.safetensors")
        p = expect(["train", "lenet5", "--data", FASHION, "--limit", "1500", "--epochs", "4", "--lr", "0.2",
                    "--schedule", "constant", "--quiet", "--log", log, "--save-best", best,
                    "--save-best-by", metric], 0)
        records = [json.loads(l) for l in open(log)]
        key = (lambda r: -r["test_acc"]) if metric == "accuracy" else (lambda r: r["test_loss"])
        # Each epoch better than every earlier one is saved, the first included.
        want, so_far = [], None
        for r in records:
            if so_far is None or key(r) < so_far:
                want.append(r["epoch"])
                so_far = key(r)
        assert saved_best_epochs(p.stderr) == want, (p.stderr, records)
        best_record = records[want[-1] - 1]
        e = expect(["eval", "lenet5", "--weights", best, "--data", FASHION], 0, stream="stdout")
        assert f"accuracy {100 * best_record['test_acc']:.2f}%" in e.stdout, (e.stdout, best_record)
        assert f"loss {best_record['test_loss']:.4f}" in e.stdout, (e.stdout, best_record)


@test
def patience_stops_when_the_metric_stops_improving():
    # lr 0: the weights never change, so no epoch beats the first.
    log = path("patience.csv")
    p = expect(["train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "9", "--lr", "0", "--quiet",
                "--patience", "2", "--log", log], 0,
               "early stopping after epoch 3: test accuracy has not improved for 2 epochs (--patience 2; best: epoch 1")
    assert len(p.stdout.splitlines()) == 3, p.stdout
    assert len(open(log).read().splitlines()) == 1 + 3
    # An improving run is not stopped.
    p = expect(["train", "lenet5", "--data", FASHION, "--limit", "1500", "--epochs", "3", "--quiet",
                "--patience", "1", "--save-best-by", "loss"], 0)
    assert "early stopping" not in p.stderr and len(p.stdout.splitlines()) == 3, p.stderr


@test
def save_best_and_patience_survive_resume():
    # This run's best test accuracy is epoch 4's; 5 and 6 are worse, so a
    # resumed run that forgot the best epoch would save epoch 5 as "best".
    base = ["train", "lenet5", "--data", FASHION, "--device", "cpu", "--threads", "1", "--limit", "1500",
            "--epochs", "6", "--lr", "0.05", "--schedule", "constant", "--quiet", "--seed", "2"]
    full_best, part_best, state = path("full-best.st"), path("part-best.st"), path("best-resume.state")
    full = expect(base + ["--save-best", full_best], 0)
    first = expect(base + ["--save-best", part_best, "--stop-after", "4", "--checkpoint", state], 0)
    second = expect(base + ["--save-best", part_best, "--resume", state], 0, "resuming from")
    assert saved_best_epochs(first.stderr) + saved_best_epochs(second.stderr) == saved_best_epochs(full.stderr), \
        (full.stderr, first.stderr, second.stderr)
    assert open(full_best, "rb").read() == open(part_best, "rb").read(), "the resumed run's best file differs"
    expect(base + ["--resume", state, "--save-best-by", "loss"], 2, "kept its best epoch by accuracy",
           "give the same --save-best-by")
    # lr 0: no epoch beats the first; --patience 2 stops after epoch 3 across a resume too.
    still = ["train", "lenet5", "--data", FASHION, "--device", "cpu", "--limit", "640", "--epochs", "9", "--lr", "0",
             "--quiet", "--patience", "2"]
    expect(still + ["--stop-after", "2", "--checkpoint", state], 0)
    p = expect(still + ["--resume", state], 0, "early stopping after epoch 3: test accuracy has not improved for 2 "
                                              "epochs (--patience 2; best: epoch 1")
    assert len(p.stdout.splitlines()) == 1, p.stdout


@test
def csv_log_by_extension_or_flag():
    import csv as csv_module
    log = path("run.csv")
    p = expect(["train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "2", "--quiet", "--log", log], 0)
    rows = list(csv_module.DictReader(open(log)))
    assert list(rows[0]) == ["epoch", "train_loss", "train_acc", "test_loss", "test_acc", "seconds",
                             "images_per_s"], rows[0]
    assert [int(r["epoch"]) for r in rows] == [1, 2]
    for r, line in zip(rows, p.stdout.splitlines()):
        assert f"test loss {float(r['test_loss']):.4f} acc {100 * float(r['test_acc']):6.2f}%" in line, (r, line)
    # --log-format overrides the extension both ways.
    expect(["train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1", "--quiet", "--log",
            path("run.txt"), "--log-format", "csv"], 0)
    assert open(path("run.txt")).readline().startswith("epoch,train_loss,")
    expect(["train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1", "--quiet", "--log",
            path("run2.csv"), "--log-format", "json"], 0)
    assert json.loads(open(path("run2.csv")).readline())["epoch"] == 1
    # A resumed run appends its rows under the one header.
    resumed, state = path("resumed.csv"), path("resumed.state")
    base = ["train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "2", "--quiet", "--log", resumed]
    expect(base + ["--stop-after", "1", "--checkpoint", state], 0)
    expect(base + ["--resume", state], 0)
    lines = open(resumed).read().splitlines()
    assert len(lines) == 3 and lines[0].startswith("epoch,") and [l.split(",")[0] for l in lines[1:]] == ["1", "2"], lines


@test
def eval_confusion_matrix_agrees_with_the_accuracy():
    weights = path("confusion.safetensors")
    expect(["train", "lenet5", "--data", FASHION, "--limit", "2000", "--epochs", "1", "--quiet", "--save", weights], 0)
    p = expect(["eval", "lenet5", "--weights", weights, "--data", FASHION, "--confusion"], 0, "per-class accuracy",
               "confusion matrix (rows: true class, columns: predicted class)", stream="stdout")
    accuracy = float(re.search(r"accuracy (\d+\.\d\d)%", p.stdout).group(1))
    lines = p.stdout.splitlines()
    start = lines.index("confusion matrix (rows: true class, columns: predicted class):")
    matrix = [[int(v) for v in l.split()[1:]] for l in lines[start + 2:start + 12]]
    assert len(matrix) == 10 and all(len(row) == 10 for row in matrix), lines[start:]
    # Fashion-MNIST's test set: 1000 images per class.
    assert [sum(row) for row in matrix] == [1000] * 10, matrix
    correct = sum(matrix[c][c] for c in range(10))
    assert abs(100 * correct / 10000 - accuracy) < 0.006, (correct, accuracy)
    per_class = [float(re.search(r"(\d+\.\d\d)%$", l).group(1)) for l in lines[3:13]]
    assert per_class == [round(100 * matrix[c][c] / 1000, 2) for c in range(10)], (per_class, matrix)


@test
def model_summary_before_training_and_quiet():
    p = expect(["train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1"], 0,
               "model lenet5 (input 1x28x28", "c1", "Conv2d", "6x24x24", "16x4x4", "l3", "Linear",
               # 1*6*25+6 + 6*16*25+16 + 256*120+120 + 120*84+84 + 84*10+10
               "total 44,426 parameters (44,426 trainable)", "activations about")
    assert len(p.stdout.splitlines()) == 1, p.stdout  # the summary is on stderr
    p = expect(["train", "lenet5", "--data", FASHION, "--limit", "64", "--epochs", "1", "--quiet"], 0)
    assert "model lenet5" not in p.stderr and "parameters (" not in p.stderr, p.stderr


shutil.rmtree(work, ignore_errors=True)

@test
def alexnet_learns_stripes_against_dots():
    """The seed's AlexNet (224x224 RGB, from 48x48 PNGs) on the CPU with the
    default settings tells stripes from dots: >= 90% validation accuracy
    within 8 epochs. The folders also hold a corrupt, an empty and a
    non-image file, reported once and left out. NN_ENGINE_CLI_QUICK=1 (the
    sanitizer build) trains one epoch on a few images instead."""
    d = path("shapes")
    rng = random.Random(7)
    for kind in ("dots", "stripes"):
        os.makedirs(os.path.join(d, kind))
        for i in range(60):
            write_rgb_png(os.path.join(d, kind, f"{i:03d}.png"), 48, 48, shape_image(kind, rng))
    with open(os.path.join(d, "dots", "zz-corrupt.png"), "wb") as f:
        f.write(open(os.path.join(d, "dots", "000.png"), "rb").read()[:200])
    open(os.path.join(d, "stripes", "zz-empty.jpg"), "wb").close()
    with open(os.path.join(d, "stripes", "zz-notes.txt"), "w") as f:
        f.write("not an image")
    log = path("alexnet.json")
    quick = os.environ.get("NN_ENGINE_CLI_QUICK") == "1"
    weights = path("alexnet.safetensors")
    args = ["train", "alexnet", "--data", d, "--device", "cpu", "--log", log, "--save", weights]
    args += ["--epochs", "1", "--limit", "20"] if quick else ["--epochs", "8"]
    p = expect(args, 0, "skipped 3 files that are not readable images", "training and 12 validation",
               "decoded to 3x224x224")
    lines = [json.loads(line) for line in open(log)]
    assert len(lines) == (1 if quick else 8), p.stdout
    if not quick:
        assert lines[-1]["test_acc"] >= 0.9, f"validation accuracy {lines[-1]['test_acc']:.3f} after 8 epochs:\n{p.stdout}"
    # eval on the saved weights reproduces the last epoch's validation figures
    e = expect(["eval", "alexnet", "--weights", weights, "--data", d, "--device", "cpu"], 0,
               "alexnet on 12 validation images", stream="stdout")
    assert f"accuracy {100 * lines[-1]['test_acc']:.2f}%" in e.stdout, (e.stdout, lines[-1])

@test
def photo_run_resumes_inside_an_epoch_bit_for_bit():
    """Issue 41: AlexNet's photos (decoded on worker threads, random resized
    crops and flips drawn per image) stopped inside an epoch and resumed end
    with an uninterrupted run's weights, bit for bit on the CPU: 6 steps an
    epoch (the last of 2 images), stopped inside the first epoch and inside
    the second. NN_ENGINE_CLI_QUICK=1 (the sanitizer build): 4 steps an
    epoch, stopped inside the second."""
    quick = os.environ.get("NN_ENGINE_CLI_QUICK") == "1"
    d = path("shapes-resume")
    rng = random.Random(11)
    for kind in ("dots", "stripes"):
        os.makedirs(os.path.join(d, kind))
        for i in range(8 if quick else 12):
            write_rgb_png(os.path.join(d, kind, f"{i:03d}.png"), 48, 48, shape_image(kind, rng))
    common = ["train", "alexnet", "--data", d, "--device", "cpu", "--batch", "4", "--epochs", "2",
              "--random-crop", "--flip", "--workers", "2", "--seed", "6", "--quiet"]
    full, resumed, ck = (path(f"photo-{n}") for n in ["full.st", "resumed.st", "ck.st"])
    whole = expect(common + ["--save", full], 0)
    epoch_lines = [l for l in whole.stdout.splitlines() if l.startswith("epoch ")]
    steps = 4 if quick else 6
    for stop in [5] if quick else [2, 8]:
        expect(common + ["--stop-after-step", str(stop), "--checkpoint", ck], 0, "(--stop-after-step)")
        second = expect(common + ["--resume", ck, "--save", resumed], 0, "(stopped part way)")
        assert open(full, "rb").read() == open(resumed, "rb").read(), f"alexnet: stopped at {stop}: weights differ"
        again = [l for l in second.stdout.splitlines() if l.startswith("epoch ")]
        assert same_epoch_lines(again, epoch_lines[stop // steps:]), (stop, again, epoch_lines)


# ---- issue 25, files: special paths are refused at once, before training ----

@test
def special_paths_refused_before_training():
    data = idx_dir("hardening")
    fifo = path("weights.fifo")
    os.mkfifo(fifo)
    # A FIFO nobody writes to: refused at once, not waited on (timeout fails the test).
    for args in (["eval", "lenet5", "--weights", fifo, "--data", data],
                 ["export", "lenet5", "--weights", fifo, "--onnx", path("x.onnx")],
                 ["train", "lenet5", "--data", data, "--epochs", "1", "--resume", fifo],
                 ["train", "lenet5", "--data", data, "--epochs", "1", "--class-names", fifo]):
        p = run(*args, timeout=30)
        assert p.returncode != 0 and fifo in p.stderr and "FIFO" in p.stderr, (args, p.returncode, p.stderr)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # Outputs that cannot be written are found before the first epoch.
    folder = path("a-folder")
    os.mkdir(folder)
    for flag, target, words in (("--save", folder, "is a folder"), ("--save", "/proc/version", "/proc"),
                                ("--checkpoint", fifo, "FIFO"), ("--log", path("no", "such", "log.json"), "no"),
                                ("--log-steps", "/proc/version", "/proc"), ("--log-steps", fifo, "FIFO"),
                                ("--log-steps", "/dev/full", "/dev/full")):
        p = run("train", "lenet5", "--data", data, "--epochs", "1", flag, target, timeout=60)
        assert p.returncode == 2 and flag in p.stderr and target in p.stderr and words in p.stderr, (flag, p.stderr)
        assert "epoch" not in p.stdout, p.stdout
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.isdir(folder)
    expect(["export", "lenet5", "--weights", fifo, "--onnx", folder], 2, "--onnx", "is a folder")


# ---- issue 25, the runtime half: options, divergence, Ctrl+C, labels, training states ----

def learnable_idx_dir(name, images=200, labels=None):
    """IDX training files whose class shows in the pixels' brightness."""
    d = path(name)
    os.makedirs(d)
    labels = labels if labels is not None else [i % 10 for i in range(images)]
    rng = random.Random(5)
    pixels = bytes(min(255, labels[i // 784] % 10 * 25 + rng.randrange(60)) for i in range(images * 784))
    write_idx(os.path.join(d, "train-images-idx3-ubyte"), 0x803, [images, 28, 28], pixels)
    write_idx(os.path.join(d, "train-labels-idx1-ubyte"), 0x801, [images], labels)
    return d


@test
def normalize_refuses_non_finite_and_tiny_std():
    d = learnable_idx_dir("normalize")
    for text, why in [("nan,1", "MEAN is not a finite"), ("inf,1", "MEAN is not a finite"),
                      ("0,1e-45", "STD is below 1e-6"), ("0,inf", "STD is not a finite"), ("0,nan", "STD is not")]:
        expect(["train", "mlp", "--data", d, "--device", "cpu", "--normalize", text], 2, f"'{text}'", why)


@test
def divergence_stops_with_exit_1_and_keeps_the_last_checkpoint():
    d = learnable_idx_dir("diverge")
    state, weights = path("diverge.state"), path("diverge.safetensors")
    p = expect(["train", "mlp", "--data", d, "--device", "cpu", "--lr", "100", "--epochs", "3", "--checkpoint", state,
                "--save", weights], 1, "the training loss became nan in epoch 2, steps 1-3", "--allow-nan",
               f"{state} keeps the state after epoch 1")
    assert not os.path.exists(weights), "a diverged run saved its weights"
    # The checkpoint is epoch 1's (finite, loss huge); resuming it diverges again, not a crash.
    with open(state, "rb") as f:
        before = f.read()
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--lr", "100", "--epochs", "3", "--checkpoint", state,
            "--resume", state], 1, "resuming from", "became nan in epoch 2", f"{state} keeps the state after epoch 1")
    # Issue 41: diverging before any epoch finished names no checkpoint as kept.
    fresh = path("diverge-fresh.state")
    expect(["train", "mlp", "--data", FASHION, "--limit", "200", "--device", "cpu", "--lr", "1000", "--epochs", "3",
            "--checkpoint", fresh], 1, "became nan in epoch 1", f"no epoch finished, so {fresh} was not written")
    assert not os.path.exists(fresh)
    with open(state, "rb") as f:
        assert f.read() == before, "the diverged epoch wrote over the last good checkpoint"
    p = expect(["train", "mlp", "--data", d, "--device", "cpu", "--lr", "100", "--epochs", "3", "--allow-nan"], 0,
               "warning: the training loss became nan in epoch 2")
    assert p.stdout.count("epoch ") == 3, p.stdout


def start_training(d, *extra):
    return subprocess.Popen([binary, "train", "mlp", "--data", d, "--device", "cpu", "--epochs", "100000", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@test
def ctrl_c_finishes_the_step_saves_and_exits_130():
    import signal
    d = learnable_idx_dir("interrupt")
    state, weights = path("interrupt.state"), path("interrupt.safetensors")
    p = start_training(d, "--checkpoint", state, "--save", weights, "--batch", "8")  # 23 steps an epoch
    first = p.stdout.readline()
    assert first.startswith("epoch "), first
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, f"exit {p.returncode}\n{err}"
    stopped = re.search(r"stopped by Ctrl\+C in epoch (\d+) after step (\d+) of (\d+)", err)
    assert stopped, err
    assert f"saved the weights to {weights}" in err and f"wrote the training state to {state}" in err, err
    assert not [f for f in os.listdir(work) if ".tmp." in f], os.listdir(work)
    expect(["eval", "mlp", "--weights", weights, "--data", d, "--device", "cpu"], 0, "accuracy", stream="stdout")
    # The training state resumes within the interrupted epoch.
    epoch = stopped.group(1)
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "100000", "--batch", "8", "--stop-after", epoch,
            "--resume", state], 0, "resuming from")


@test
def second_ctrl_c_exits_at_once():
    import signal
    d = learnable_idx_dir("interrupt2")
    p = start_training(d)
    assert p.stdout.readline().startswith("epoch ")
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, f"exit {p.returncode}\n{err}"
    assert "stopped at once" in err or "stopped by Ctrl+C" in err, err


@test
def sigterm_is_named_as_itself():
    # Issue 40, item 15: SIGTERM was reported as "stopped by Ctrl+C".
    import signal
    d = learnable_idx_dir("terminate")
    state = path("terminate.state")
    p = start_training(d, "--checkpoint", state, "--batch", "8")
    assert p.stdout.readline().startswith("epoch ")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130 and "terminated: finishing the current step" in err, f"exit {p.returncode}\n{err}"
    assert re.search(r"stopped by SIGTERM in epoch \d+ after step \d+", err) and "Ctrl+C" not in err, err


@test
def labels_with_gaps_or_past_classes_are_refused():
    labels = [i % 10 for i in range(200)]
    labels[17] = 255
    d = learnable_idx_dir("stray_label", labels=labels)
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "1"], 2, "label 255", "1 image",
           "no image of", "--classes")
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "1", "--classes", "10"], 2, "label 255",
           "train-labels-idx1-ubyte", "--classes 10")
    # --classes above every label accepts the gaps.
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "1", "--classes", "256"], 0)


@test
def resume_refuses_out_of_range_progress():
    d = learnable_idx_dir("bad_state")
    state = path("bad.state")
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "1", "--checkpoint", state], 0)
    blob = open(state, "rb").read()
    header_size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + header_size])
    meta = header["__metadata__"]
    key = next(k for k in meta if "epoch" in k)
    meta[key] = str(2**63 - 1)
    text = json.dumps(header).encode()  # offsets count from the data, so the header may grow
    with open(state, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob[8 + header_size:])
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "3", "--resume", state], 2, "\"epoch\"",
           "[0, 2147483647]")


@test
def tensorboard_folder_and_its_parents_are_made():
    # Issue 40, item 15: --tensorboard a/b/c failed when a/b did not exist.
    d = idx_dir("tensorboard")
    folder = path("tb", "runs", "first")
    expect(["train", "lenet5", "--data", d, "--epochs", "2", "--tensorboard", folder], 0)
    files = os.listdir(folder)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents."), files
    blob = open(os.path.join(folder, files[0]), "rb").read()
    assert b"brain.Event:2" in blob and blob.count(b"loss") >= 2, blob[:200]
    expect(["train", "lenet5", "--data", d, "--epochs", "1", "--tensorboard", os.path.join(d, "train-labels-idx1-ubyte",
                                                                                          "x")], 2, "--tensorboard")


@test
def library_refusals_of_flag_values_exit_2():
    # Issue 40, item 15: --beta1 1 exited 1 (a run-time failure); --ema 1 trained, then evaluated and saved the
    # untrained initial weights.
    d = idx_dir("flag-values")
    base = ["train", "lenet5", "--data", d, "--epochs", "1"]
    expect(base + ["--optimizer", "adam", "--beta1", "1"], 2, "betas must be in [0, 1)")
    p = expect(base + ["--ema", "1"], 2, "--ema takes a decay in [0, 1)")
    assert "epoch" not in p.stdout, p.stdout


@test
def full_log_file_warns_and_training_saves():
    # Issue 40, item 11: a log that could not be written ended the run with exit 1 and no --save. Here the logs
    # a resumed run appends to are already at the process's file size limit (RLIMIT_FSIZE: EFBIG, as a full disk).
    import resource
    import signal
    d = learnable_idx_dir("full-log")
    state, weights, log, steps = (path(n) for n in ("full-log.state", "full-log.st", "full-log.json",
                                                     "full-log-steps.json"))
    base = ["train", "lenet5", "--data", d, "--device", "cpu", "--epochs", "3"]
    expect(base + ["--stop-after", "1", "--checkpoint", state, "--log", log, "--log-steps", steps], 0)
    limit = 1 << 20
    for f in (log, steps):
        with open(f, "ab") as out:
            out.write(b" " * (limit - os.path.getsize(f)))

    def capped():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run([binary, *base, "--resume", state, "--checkpoint", state, "--log", log, "--log-steps", steps,
                        "--save", weights], capture_output=True, text=True, timeout=300, preexec_fn=capped)
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    for flag, f in (("--log", log), ("--log-steps", steps)):
        assert f"{flag} {f}: writing failed (File too large)" in p.stderr, p.stderr[-2000:]
    assert "epoch 3/3" in p.stdout and f"saved the weights to {weights}" in p.stderr, (p.stdout, p.stderr[-1000:])
    assert os.path.getsize(weights) > 0


@test
def onnx_file_is_a_model():
    # Issue 38: an ONNX file as train's, eval's and export's model. The file is our own export of
    # trained LeNet-5 weights, so its import must evaluate exactly as the weights do in lenet5.
    d = learnable_idx_dir("onnx-model")
    weights, graph = path("onnx-lenet.st"), path("onnx-lenet.onnx")
    expect(["train", "lenet5", "--data", d, "--device", "cpu", "--epochs", "1", "--save", weights], 0)
    expect(["export", "lenet5", "--weights", weights, "--onnx", graph, "--no-normalize-in-graph"], 0)
    built = expect(["eval", "lenet5", "--weights", weights, "--data", d, "--device", "cpu"], 0, stream="stdout")
    imported = expect(["eval", graph, "--weights", weights, "--data", d, "--device", "cpu"], 0, stream="stdout")
    score = re.compile(r"loss (\d+\.\d+) +accuracy +(\d+\.\d+)%")
    assert score.search(built.stdout).groups() == score.search(imported.stdout).groups(), (built.stdout, imported.stdout)
    p = expect(["train", graph, "--data", d, "--device", "cpu", "--epochs", "2", "--save", path("onnx-again.st")], 0,
               stream="stdout")
    assert len([line for line in p.stdout.splitlines() if EPOCH_LINE.match(line)]) == 2, p.stdout
    # Fine-tuning on other classes: a new classifier, the rest as trained; frozen, only it trains.
    p = expect(["train", graph, "--data", d, "--device", "cpu", "--epochs", "1", "--classes", "12", "--freeze", "c", "--freeze", "l1", "--freeze", "l2",
                "--save", path("onnx-12.st")], 0, "classifier gets 12 outputs", "frozen: 8 of 10")
    expect(["eval", graph, "--weights", path("onnx-12.st"), "--data", d, "--device", "cpu", "--classes", "12"], 0)
    expect(["train", path("absent.onnx"), "--data", d, "--device", "cpu"], 2, "absent.onnx", "cannot open")


@test
def eval_takes_the_classes_train_gave():
    # Issue 40, item 15: eval had no --classes, so weights trained with train --classes K could not be evaluated.
    d = learnable_idx_dir("eval-classes")
    weights = path("eval-classes.st")
    expect(["train", "lenet5", "--data", d, "--device", "cpu", "--epochs", "1", "--classes", "12", "--save", weights], 0)
    expect(["eval", "lenet5", "--weights", weights, "--data", d, "--device", "cpu"], 2, "[12, 84]",
           "need eval --classes K")
    p = expect(["eval", "lenet5", "--weights", weights, "--data", d, "--device", "cpu", "--classes", "12",
                "--confusion"], 0, stream="stdout")
    assert "accuracy" in p.stdout and "\n  11 " in p.stdout, p.stdout
    expect(["eval", "lenet5", "--weights", weights, "--data", d, "--device", "cpu", "--classes", "8"], 2,
           "--classes 8 is fewer than the 10 classes")


def edit_state(source, target, meta=None, tensors=None):
    """A copy of a training state with metadata values and whole tensors (name: packed bytes) replaced."""
    blob = open(source, "rb").read()
    header_size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + header_size])
    data = bytearray(blob[8 + header_size:])
    header["__metadata__"].update(meta or {})
    for name, packed in (tensors or {}).items():
        begin, end = header[name]["data_offsets"]
        assert end - begin == len(packed), (name, end - begin, len(packed))
        data[begin:end] = packed
    text = json.dumps(header).encode()
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


@test
def resume_refuses_states_no_run_leaves():
    # Issue 40, item 4: a loss scale of NaN, 0, inf or 1e-45 resumed with every step skipped; a schedule
    # step of 2^31-1 overflowed its counter; a best accuracy of 2.0 was taken.
    d = learnable_idx_dir("odd_states")
    state, edited = path("odd.state"), path("odd-edited.state")
    base = ["train", "lenet5", "--data", d, "--device", "cpu", "--precision", "fp16", "--save-best",
            path("odd-best.safetensors")]
    expect(base + ["--epochs", "1", "--checkpoint", state], 0)
    for scale in (float("nan"), 0.0, float("inf"), 1e-45, -1.0):
        edit_state(state, edited, tensors={"loss_scale.state": struct.pack("<4f", scale, 0, 0, 0)})
        expect(base + ["--epochs", "2", "--resume", edited], 2, "loss scale", "scale")
    edit_state(state, edited, tensors={"schedule.step": struct.pack("<i", 2**31 - 1)})
    expect(base + ["--epochs", "2", "--resume", edited], 2, "schedule.step", "2147483647")
    edit_state(state, edited, meta={"best_metric": "2.0"})
    expect(base + ["--epochs", "2", "--resume", edited], 2, "best accuracy of 2")
    # A metadata value quoted in a message reaches the terminal without its control characters.
    edit_state(state, edited, meta={"best_metric": "\x1b[2Jgone"})
    p = expect(base + ["--epochs", "2", "--resume", edited], 2, "?[2Jgone", "is not a finite number")
    assert "\x1b" not in p.stderr, p.stderr[-500:]
    # The file as written still resumes.
    expect(base + ["--epochs", "2", "--resume", state], 0)
    # A scale so large that every step of the resumed epoch overflows and is skipped: the weights do not move,
    # which is divergence, not a finished run (it exited 0).
    edit_state(state, edited, tensors={"loss_scale.state": struct.pack("<4f", 3e37, 0, 0, 0)})
    expect(base + ["--epochs", "2", "--resume", edited], 1, "skipped all", "steps of epoch 2", "diverged")
    # Another model's state is named as such (it blamed the optimizer's momentum buffers); since the state
    # keeps the run's flags, by the model's name.
    mlp_state = path("odd-mlp.state")
    expect(["train", "mlp", "--data", d, "--device", "cpu", "--epochs", "1", "--checkpoint", mlp_state], 0)
    expect(["train", "lenet5", "--data", d, "--device", "cpu", "--epochs", "2", "--resume", mlp_state], 2,
           f"--resume {mlp_state} was saved by a run of model mlp, not lenet5")

# ---- issue 23: products in reduced precision, dynamic loss scaling for fp16 ----

@test
def precision_flag_trains_and_scales_fp16_losses():
    base = ["train", "lenet5", "--data", FASHION, "--limit", "640", "--epochs", "1", "--device", "cpu"]
    p = expect(base + ["--precision", "fp16"], 0, "take fp16 operands with fp32 sums",
               "fp16 loss scaling: 0 steps skipped", "scale now 65536")
    assert "epoch 1/1" in p.stdout, p.stdout
    p = expect(base + ["--precision", "fp16", "--no-loss-scale"], 0)
    assert "loss scaling" not in p.stderr, p.stderr
    p = expect(base + ["--precision", "bf16"], 0, "take bf16 operands")
    assert "loss scaling" not in p.stderr, p.stderr
    expect(base + ["--precision", "fp8"], 2, "--precision", "'fp8' is not fp32, fp16 or bf16")


# ---- issue 40: outputs that name the same file ----

@test
def outputs_naming_the_same_file_are_refused():
    data = idx_dir("same-file")
    folder = path("same-file-out")
    os.mkdir(folder)
    state = os.path.join(folder, "state")
    with open(state, "wb") as f:
        f.write(b"an earlier run's training state")
    os.symlink("state", os.path.join(folder, "link"))
    os.link(state, os.path.join(folder, "hard"))
    base = ["train", "lenet5", "--data", data, "--epochs", "1"]
    for a, b in ((["--save", state], ["--checkpoint", os.path.join(folder, ".", "state")]),
                 (["--log", os.path.join(folder, "log.json")], ["--save", os.path.join(folder, "..", "same-file-out",
                                                                                      "log.json")]),
                 (["--save", os.path.join(folder, "link")], ["--checkpoint", state]),
                 (["--save-best", os.path.join(folder, "hard")], ["--checkpoint", state]),
                 (["--log-steps", os.path.join(folder, "steps")], ["--log", os.path.join(folder, "steps")])):
        p = run(*base, *a, *b, timeout=60)
        assert p.returncode == 2 and a[0] in p.stderr and b[0] in p.stderr and "the same file" in p.stderr, \
            (a, b, p.returncode, p.stderr)
        assert "epoch" not in p.stdout, p.stdout
    with open(state, "rb") as f:
        assert f.read() == b"an earlier run's training state"
    expect(["export", "lenet5", "--weights", state, "--onnx", os.path.join(folder, "link")], 2, "--weights",
           "--onnx", "the same file")
    # Resuming from the file the checkpoint goes on writing is the point of --resume: not refused as such.
    p = run(*base, "--checkpoint", state, "--resume", state, timeout=60)
    assert "the same file" not in p.stderr, p.stderr



@test
def closed_stdout_leaves_the_log_alone():
    # With descriptor 1 closed, the --log file opened first would have become it and taken the epoch lines.
    data = idx_dir("closed-stdout")
    log = path("closed-stdout.json")
    p = subprocess.run([binary, "train", "lenet5", "--data", data, "--epochs", "2", "--log", log],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                       preexec_fn=lambda: os.close(1))
    assert p.returncode == 0, p.stderr
    with open(log) as f:
        lines = f.read().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["epoch"] == i + 1 for i, line in enumerate(lines)), lines



@test
def closed_pipe_or_full_disk_on_stdout_keeps_the_save():
    data = idx_dir("stdout-lost")
    for name, target in (("pipe", subprocess.PIPE), ("full", "/dev/full")):
        save = path(f"stdout-lost-{name}.safetensors")
        args = [binary, "train", "lenet5", "--data", data, "--epochs", "3", "--save", save]
        if target == subprocess.PIPE:  # the reader gone before the first line (`| head -1` after one)
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            proc.stdout.close()
            err = proc.stderr.read()
            status = proc.wait(timeout=120)
        else:
            with open(target, "w") as out:
                p = subprocess.run(args, stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
            status, err = p.returncode, p.stderr
        assert status == 1 and "writing the standard output failed" in err, (name, status, err)
        assert os.path.getsize(save) > 0, name


print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
