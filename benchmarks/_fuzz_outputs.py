"""The fuzz campaign's families for what graphscope writes and the paths it is given (issue
24): ``outputs`` and ``amplify``.

- ``outputs``: every command that writes (``convert``, ``export`` in each format,
  ``import-trace``, ``graphscope.save``) given a hostile output path, and every command that
  takes a path (``inspect``, ``report``, ``diff``, ``buckets``, ``serve``'s argument checks)
  given a hostile input path: a FIFO (read, or not), a character device made with
  /dev/null's numbers, a symlink loop, a dangling symlink, a name over 255 bytes, a path over
  4,096, a folder the user cannot search or write (the step runs in a child that drops to
  the nobody user where the campaign runs as root), "", ".", "/", a trailing slash, control
  characters and lone surrogates in names, the command's own input, a folder. Each step must
  be clean or one line naming the path; afterwards no special file or symlink may have been
  replaced, nothing outside the input's work folder (a sibling folder, /dev/null) changed,
  no temporary file left, and no control character printed raw.
- ``amplify``: bundles whose rows share a large constant (all rows, all but one, in a node
  field or a section's) and graphs in memory that hold one large value many times (a string
  on every node, a list, a dict, a list nested to hold itself many times over), through every
  writer. Each write must finish within its step's time and memory, written within
  ``graphscope.sizes.LIMIT`` or refused in one line with the figure. A step's time limit grows
  with what it may write (up to the limit), as a read-back's does with the file's size.

The cases have fuzz.py's ``_case_*`` signature and run every step through its ``Runner``;
fuzz.py registers them in ``FAMILIES`` and ``_CASES``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import io
import os
import shlex
import shutil
import signal
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

NOBODY = 65534
#: Standard modules the commands import lazily (see as_nobody).
_STDLIB_LAZY = ("webbrowser",)
# Kinds of hostile path, for an output and for an input.
_OUTPUTS = (
    *("fifo", "fifo-read", "chardev", "loop", "loop2", "dangling", "dangling-nodir"),
    *("long-name", "long-utf8", "long-path", "unsearchable", "unwritable", "empty"),
    *("control", "surrogate", "input", "input-link", "folder", "folder-link", "plain"),
)
_INPUTS = (
    *("fifo", "chardev", "loop", "dangling", "long-name", "long-path", "unsearchable"),
    *("empty", "control", "surrogate", "folder", "plain"),
)
_CONTROLS = ("\n", "\r", "\x1b[2J", "\x07", "\t", "\x85", "\u2028", "\u202e", "\x7f")
_WRITERS = ("convert", "export", "import-trace", "save")
_READERS = ("inspect", "report", "diff", "buckets", "serve")
_FORMATS = ("html", "perfetto", "model-explorer", "node-link")
_EXTS = (".json", ".json.gz", ".dot")


def _printable(text: str) -> str:
    from graphscope.errors import printable

    return printable(text)


def _names(*paths: str) -> list[str]:
    """How a refusal may name each path: as given, as pathlib writes it (no trailing slash,
    no doubled one), each as the CLI prints it."""
    out = []
    for path in paths:
        for form in (path, str(Path(path))) if path else ():
            out += [form, _printable(form)]
        if not path:
            out.append('""')
    return [n for n in out if n]


# ---------------------------------------------------------------------------------------------
# What a step may leave behind


class Watch:
    """The special files and symlinks an input made, and a folder beside its own: after the
    steps, none may have been replaced or changed, and no temporary file may be left."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.kept: dict[Path, tuple[int, int, str | None]] = {}
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.outside / "sentinel.json").write_text('{"untouched": true}\n')
        self.readers: list[tuple[Path, threading.Thread]] = []

    def keep(self, path: Path) -> None:
        """Remember what ``path`` is (its kind, device numbers, link target)."""
        found = path.lstat()
        target = os.readlink(path) if stat.S_ISLNK(found.st_mode) else None
        self.kept[path] = (stat.S_IFMT(found.st_mode), found.st_rdev, target)

    def problems(self) -> list[str]:
        self._release_readers()
        found = []
        for path, before in self.kept.items():
            try:
                now = path.lstat()
            except OSError:
                found.append(f"{path.name!r} is gone")
                continue
            target = os.readlink(path) if stat.S_ISLNK(now.st_mode) else None
            if (stat.S_IFMT(now.st_mode), now.st_rdev, target) != before:
                found.append(f"{path.name!r} was replaced (was {before}, is a {_kind(now)})")
        if sorted(p.name for p in self.outside.iterdir()) != ["sentinel.json"] or (
            (self.outside / "sentinel.json").read_text() != '{"untouched": true}\n'
        ):
            found.append("the folder beside the input's changed")
        extra = sorted(p.name for p in self.root.iterdir()) != ["inside", "outside"]
        if extra:
            found.append(f"the input's folder holds {sorted(os.listdir(self.root))}")
        null = os.stat("/dev/null")
        if not stat.S_ISCHR(null.st_mode) or null.st_rdev != os.makedev(1, 3):
            found.append("/dev/null is no longer the null device")
        for _, _, files in os.walk(self.root):
            found += [f"temporary file {f!r} left" for f in files if f.endswith(_TMP)]
        return found

    def reader(self, fifo: Path) -> None:
        """A thread that reads ``fifo`` to its end, as a consumer of the output would."""

        def read() -> None:
            with contextlib.suppress(OSError), open(fifo, "rb") as fh:
                while fh.read(1 << 16):
                    pass

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        self.readers.append((fifo, thread))

    def _release_readers(self) -> None:
        """A reader no command wrote to still waits in open(): a writer that opens and
        closes lets it see the end."""
        for fifo, thread in self.readers:
            for _ in range(100):
                if not thread.is_alive():
                    break
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                thread.join(0.05)
        self.readers = []


_TMP = ".graphscope-tmp"


def _kind(found: os.stat_result) -> str:
    mode = found.st_mode
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "device"), (stat.S_ISLNK, "link")):
        if test(mode):
            return name
    return "folder" if stat.S_ISDIR(mode) else "file"


# ---------------------------------------------------------------------------------------------
# Hostile paths


def _hostile(rng: Random, kind: str, ext: str, watch: Watch, said: list[str], source: str) -> str:
    """Make a path of ``kind`` (relative to the current folder, ``inside``) and return it."""
    said.append(f"path: {kind}")
    if kind in ("fifo", "fifo-read"):
        os.mkfifo("out" + ext)
        watch.keep(Path("out" + ext).resolve())
        if kind == "fifo-read":
            watch.reader(Path("out" + ext).resolve())
        return "out" + ext
    if kind == "chardev":
        try:
            os.mknod("out" + ext, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except OSError:  # not root: a FIFO is the special file this user can make
            os.mkfifo("out" + ext)
        watch.keep(Path("out" + ext).resolve())
        return "out" + ext
    if kind == "loop":
        os.symlink("loop" + ext, "loop" + ext)
        watch.keep(Path("loop" + ext).absolute())
        return "loop" + ext
    if kind == "loop2":
        os.symlink("b" + ext, "a" + ext)
        os.symlink("a" + ext, "b" + ext)
        watch.keep(Path("a" + ext).absolute())
        watch.keep(Path("b" + ext).absolute())
        return "a" + ext
    if kind == "dangling":
        os.symlink("target" + ext, "dangling" + ext)  # writing creates its target, here
        watch.keep(Path("dangling" + ext).absolute())
        return "dangling" + ext
    if kind == "dangling-nodir":
        os.symlink("nowhere/target" + ext, "dangling" + ext)
        watch.keep(Path("dangling" + ext).absolute())
        return "dangling" + ext
    if kind == "long-name":
        return "n" * rng.randint(250, 400) + ext
    if kind == "long-utf8":  # under 255 characters, over 255 bytes
        return rng.choice(["é", "漢", "😀"]) * rng.randint(90, 200) + ext
    if kind == "long-path":
        part = "d" * rng.randint(50, 255)
        return "/".join([part] * (4200 // len(part) + 1)) + "/out" + ext
    if kind == "unsearchable":
        os.mkdir("locked")
        shutil.copy(source, "locked/input.json.gz")
        os.chmod("locked", 0o000)
        return "locked/out" + ext
    if kind == "unwritable":
        os.mkdir("ro")
        os.chmod("ro", 0o555)
        return "ro/out" + ext
    if kind == "empty":
        return rng.choice(["", ".", "/", "..", "./", "sub/", "out.json/", "out.json//"])
    if kind == "control":
        marks = "".join(rng.choice(_CONTROLS) for _ in range(rng.randint(1, 3)))
        return f"out{marks}name" + ext
    if kind == "surrogate":
        return os.fsdecode(b"caf\xe9-\xff" + os.fsencode(ext))
    if kind == "input":
        return source
    if kind == "input-link":
        link = "link" + ext
        if rng.random() < 0.5:
            os.symlink(source, link)
        else:
            os.link(source, link)
        return link
    if kind == "folder":
        os.mkdir("folder" + ext)
        return "folder" + ext
    if kind == "folder-link":
        os.mkdir("realfolder")
        os.symlink("realfolder", "folder" + ext)
        return "folder" + ext
    return "out" + ext  # plain


def _existing(path: str, source: str) -> str:
    """For an input: a control-character or surrogate name that holds a real file."""
    with contextlib.suppress(OSError, ValueError):
        shutil.copy(source, path)
    return path


# ---------------------------------------------------------------------------------------------
# Running a step as a user who is refused what root is not


def _die_with_parent() -> None:
    """Ask Linux to kill this child when the worker that forked it dies (killed at its time
    limit): it must not outlive the step."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def as_nobody(run: Any, argv: list[str], names: list[str]) -> None:
    """``graphscope ARGV`` in a forked child that has dropped to the nobody user, judged as
    ``Runner.cli`` judges a step: clean, or one line naming one of ``names``."""
    from graphscope.cli import main

    line = "setpriv --reuid nobody --regid nogroup --clear-groups " + shlex.join(
        ["graphscope", *argv]
    )
    run._begin(line)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            _die_with_parent()
            # The interpreter's own library may be unreadable to nobody (a Python installed
            # under /root, mode 700): a standard module first imported after the drop would be
            # "not found", which no user running their own Python meets. What the steps
            # import lazily from it (plotly's HTML writer imports webbrowser) is imported now.
            for name in _STDLIB_LAZY:
                with contextlib.suppress(ImportError):
                    importlib.import_module(name)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), errors="strict")
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False))
            code = main(argv)
        except BaseException:
            import traceback

            with contextlib.suppress(BaseException):
                traceback.print_exc()
            code = 98
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    os.close(out_w)
    os.close(err_w)
    with open(out_r, "rb") as out, open(err_r, "rb") as err:
        said, text = out.read(), err.read().decode("utf-8", "backslashreplace")
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    run.stdout = said
    judge(run, line, code, text, names)


def judge(run: Any, line: str, code: int, text: str, names: list[str]) -> None:
    """``Runner.cli``'s verdict on a command's exit status and stderr."""
    lines = [x for x in text.splitlines() if x.strip()]
    if code == 0:
        if [x for x in lines if not x.startswith("graphscope: warning: ")]:
            run._defect(line, "stderr", "output on stderr", "?", "cli", text[-800:])
    elif code not in (1, 2):
        run._defect(line, "traceback", f"exit status {code}", "?", "cli", text[-800:])
    elif len(lines) != 1 or not lines[0].startswith("graphscope: error: "):
        why = "no message" if not lines else "not one error line"
        run._defect(line, "message", why, "?", "cli", text[-800:])
    else:
        run._refusal(line, lines[0], names, "cli")


def _raw_controls(run: Any, line: str) -> None:
    """A defect when what a command printed holds a control character a path brought in."""
    printed = getattr(run, "stdout", b"").decode("utf-8", "replace")
    odd = [c for c in set(printed) if not c.isprintable() and c not in "\n\t"]
    if odd:
        run._defect(line, "message", "a control character printed raw", "?", "cli", repr(odd))


# ---------------------------------------------------------------------------------------------
# outputs


def case_outputs(family: str, rng: Random, seeds: Any, run: Any, config: dict[str, Any]) -> None:
    from fuzz import SAMPLES

    root = Path.cwd()
    watch = Watch(root)
    inside = root / "inside"
    inside.mkdir()
    os.chdir(inside)
    sample = rng.choice(["tiny-llama-b1.json.gz", "tiny-gpt-b1.json.gz", "tiny-gpt-b1.dot"])
    source = "input" + ("".join(Path(sample).suffixes))
    shutil.copy(SAMPLES / "bundles" / sample, source)
    trace = str(SAMPLES / "traces" / "tiny-llama-b1.torch-trace.json.gz")
    run.result.seed = f"samples/bundles/{sample}"
    said = run.result.mutations
    steps = rng.randint(1, 3)
    try:
        if rng.random() < 0.6:
            kind = rng.choice(_OUTPUTS)
            path = _hostile(rng, kind, rng.choice(_EXTS), watch, said, source)
            for _ in range(steps):
                _write(rng, run, path, source, trace, kind, said)
        else:
            kind = rng.choice(_INPUTS)
            path = _hostile(rng, kind, rng.choice(_EXTS), watch, said, source)
            if kind == "unsearchable":
                path = "locked/input.json.gz"
            if kind in ("control", "surrogate", "plain") and rng.random() < 0.7:
                path = _existing(path, source)
            for _ in range(steps):
                _read(rng, run, path, source, kind, said)
    finally:
        _unlock(inside)
        os.chdir(root)
        for problem in watch.problems():
            run._defect("(after the steps)", "output", problem, "?", "output")


def _unlock(folder: Path) -> None:
    for sub in ("locked", "ro"):
        with contextlib.suppress(OSError):
            os.chmod(folder / sub, 0o755)


def _dropped(kind: str) -> bool:
    """Whether a step on this kind of path runs as nobody: only there is it refused as root."""
    return kind in ("unsearchable", "unwritable") and os.geteuid() == 0


def _write(
    rng: Random, run: Any, out: str, source: str, trace: str, kind: str, said: list[str]
) -> None:
    import graphscope

    what = rng.choice(_WRITERS)
    names = _names(out, source, trace)
    if what == "save":
        G = graphscope.load(source)
        line = f"python -c 'graphscope.save(graphscope.load({source!r}), {out!r})'"
        run.reader(line, "output", names, lambda: graphscope.save(G, out))
        return
    if what == "convert":
        argv = ["convert", source, out]
    elif what == "export":
        argv = ["export", source, "--format", rng.choice(_FORMATS), "-o", out]
        if rng.random() < 0.3:
            argv.append("--force")
    else:
        argv = ["import-trace", source, trace, "-o", out]
    _command(run, argv, names, kind)


def _read(rng: Random, run: Any, path: str, source: str, kind: str, said: list[str]) -> None:
    from graphscope.cli import check_serve_files

    what = rng.choice(_READERS)
    names = _names(path, source)
    if what == "serve":  # its checks of the files, without a server
        line = f"graphscope serve {shlex.quote(path)}  # the checks before it starts"
        run.reader(line, "cli", names, lambda: check_serve_files([path]))
        return
    if what == "diff":
        pair = [path, source] if rng.random() < 0.5 else [source, path]
        argv = ["diff", *pair]
    else:
        argv = [what, path]
    if rng.random() < 0.3 and what != "buckets":
        argv.insert(1, "--json")
    _command(run, argv, names, kind)


def _command(run: Any, argv: list[str], names: list[str], kind: str) -> None:
    line = shlex.join(["graphscope", *argv])
    run.stdout = b""
    if _dropped(kind):
        as_nobody(run, argv, names)
    else:
        run.cli(argv, names, 3.0 if "export" in argv else 1.0)
    _raw_controls(run, line)


# ---------------------------------------------------------------------------------------------
# amplify


def case_amplify(family: str, rng: Random, seeds: Any, run: Any, config: dict[str, Any]) -> None:
    from fuzz import SAMPLES

    import graphscope
    from graphscope import exports

    said = run.result.mutations
    size = rng.choice([1 << 10, 64 << 10, 1 << 20, 5 << 20])
    shape = rng.choice(list(_SHAPES))
    base = rng.choice(["empty", "empty", "llama"])
    count = rng.choice([10, 300, 2000, 20000]) if base == "empty" else 212
    G = _base(base, count, SAMPLES)
    run.result.seed = "samples/bundles/tiny-llama-b1.json.gz" if base == "llama" else "EMPTY nodes"
    said.append(f"{shape}: {size} bytes on {count} nodes")
    _SHAPES[shape](G, rng, "v" * size)
    run.factor = _factor(G)
    said_lines = _capture_refusals(run)
    # The graph in memory, through the API's writers.
    for ext in rng.sample(_EXTS, rng.randint(1, 3)):
        out = "saved" + ext
        line = f"python -c 'graphscope.save(G, {out!r})'  # G: {said[-1]}"
        run.reader(line, "output", [out], functools.partial(graphscope.save, G, out))
        _bounded(run, line, out, said_lines)
    for fmt, (make, _) in exports.FORMATS.items():
        if rng.random() < 0.5:
            out = f"api.{fmt}.json"
            line = f"python -c 'exports.write_json(exports.{make.__name__}(G), {out!r})'"
            run.reader(line, "exports", [out], functools.partial(_export, G, fmt, out))
            _bounded(run, line, out, said_lines)
    # As a file, through every command that writes.
    source = "input.json.gz"
    line = f"python -c 'graphscope.save(G, {source!r})'"
    if run.reader(line, "output", [source], functools.partial(graphscope.save, G, source)) is None:
        return  # refused (its values repeat where a bundle cannot share them): no file
    trace = str(SAMPLES / "traces" / "tiny-llama-b1.torch-trace.json.gz")
    commands = [
        ["convert", source, "out.dot"],
        ["convert", source, "out.json"],
        ["convert", source, "out.json.gz"],
        *(["export", source, "--format", f, "-o", f"out.{f}.json"] for f in _FORMATS),
        ["import-trace", source, trace, "-o", "out.imported.json.gz"],
    ]
    # Near the limit, each command reads and writes hundreds of MB: a few of them then.
    most = len(commands) if size * count < (32 << 20) else 2
    for argv in rng.sample(commands, rng.randint(min(3, most), most)):
        run.cli(argv, [source, trace, argv[-1]], 3.0)
        _bounded(run, shlex.join(["graphscope", *argv]), argv[-1], said_lines)


def _factor(G: Any) -> float:
    """Steps' time limits scaled by what they may write, as fuzz.py scales a read-back by the
    file's size (10 s, and 10 s more for each 32 MB): a write near the limit is legitimate, and
    gzipping 212 MB took 13 s on the loaded development machine. What every node's attributes
    make, capped at the limit, bounds each writer's output (a bundle's is smaller)."""
    from graphscope.sizes import LIMIT, Estimate

    estimate = Estimate()
    estimate.add(G.graph)
    estimate.add_each([data for _, data in G.nodes(data=True)])
    return 1 + min(estimate.total, LIMIT) / (32 << 20)


def _capture_refusals(run: Any) -> list[str]:
    """The refusals' lines, as the Runner judges them (to look for the figure in them)."""
    lines: list[str] = []
    judged = run._refusal

    def refusal(line: str, message: str, names: list[str], owner: str) -> None:
        lines.append(message)
        judged(line, message, names, owner)

    run._refusal = refusal
    return lines


def _export(G: Any, fmt: str, out: str) -> Any:
    """An export of ``G`` written as the CLI writes it: measured before it is built."""
    from graphscope import exports, sizes

    make, _ = exports.FORMATS[fmt]
    if fmt != "model-explorer":
        return exports.write_json(make(G), out)
    what = "the model-explorer export"
    sizes.check(out, lambda e: exports.model_explorer.measure(G, e), what, exports.EXPORT_INSTEAD)
    return exports.write_json(make(G), out, measured=True)


def _bounded(run: Any, line: str, out: str, said: list[str]) -> None:
    """A written output within the limit (a .gz file's text, decompressed, too); a refusal
    for its size with the figure ("would be about N")."""
    if said and "graphscope writes" in said[-1] and "would be about" not in said[-1]:
        run._defect(line, "message", "refused for size without the figure", "?", "output")
    said.clear()
    import gzip

    from graphscope.sizes import LIMIT

    if not os.path.isfile(out):
        return
    size = os.path.getsize(out)
    if out.endswith(".gz"):
        with gzip.open(out) as fh:
            size = 0
            while chunk := fh.read(1 << 20):
                size += len(chunk)
                if size > LIMIT:
                    break
    if size > LIMIT:
        run._defect(line, "bound", f"wrote {size} bytes, past the limit", "?", "output")
    os.remove(out)  # the next writer starts from nothing, and the disk stays free


def _base(kind: str, count: int, samples: Path) -> Any:
    import networkx as nx

    import graphscope

    if kind == "llama":
        return graphscope.load(samples / "bundles" / "tiny-llama-b1.json.gz")
    G = nx.DiGraph(schema_version=1, root_graph_ids=[0])
    for i in range(count):
        G.add_node(f"graph_0_node_{i}", graph_id=0, local_id=i, type="EMPTY", parent=None)
    G.add_edges_from((f"graph_0_node_{i}", f"graph_0_node_{i + 1}") for i in range(count - 1))
    return G


def _every(G: Any) -> list[dict[str, Any]]:
    return [data for _, data in G.nodes(data=True)]


def _node_field(G: Any, rng: Random, big: str) -> None:
    for data in _every(G):
        data["note"] = big


def _all_but_one(G: Any, rng: Random, big: str) -> None:
    nodes = _every(G)
    for data in nodes:
        data["note"] = big
    nodes[rng.randrange(len(nodes))]["note"] = rng.choice(["", "short", big + "!"])


def _two_fields(G: Any, rng: Random, big: str) -> None:
    for i, data in enumerate(_every(G)):
        data["note" if i % 2 else "other"] = big


def _module(G: Any, rng: Random, big: str) -> None:
    for data in _every(G):
        data["attribution"] = {**data.get("attribution", {}), "module": big, "op": "aten::mm"}


def _name(G: Any, rng: Random, big: str) -> None:
    for data in _every(G):
        if data.get("type") == "KERNEL":
            data["short_name"] = big


def _in_list(G: Any, rng: Random, big: str) -> None:
    shared = [big] * rng.choice([1, 2, 50])
    for data in _every(G):
        data["note"] = shared if rng.random() < 0.9 else [big]


def _in_dict(G: Any, rng: Random, big: str) -> None:
    shared = {"blob": big, "n": 1}
    for data in _every(G):
        data["note"] = shared


def _nested(G: Any, rng: Random, big: str) -> None:
    value: Any = big[: 1 << 10]
    for _ in range(rng.choice([10, 30, 50])):  # each level doubles what it writes
        value = [value, value]
    for data in _every(G):
        data["note"] = value


_SHAPES: dict[str, Callable[[Any, Random, str], None]] = {
    "node-field": _node_field,
    "all-but-one": _all_but_one,
    "two-fields": _two_fields,
    "section-field": _module,
    "kernel-name": _name,
    "list-on-every-node": _in_list,
    "dict-on-every-node": _in_dict,
    "nested-list": _nested,
}
