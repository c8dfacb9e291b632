"""The ``graphscope`` command: ``inspect``, ``report``, ``diff``, ``buckets``, ``export``,
``convert``, ``serve`` and ``capture``.

Errors print as one line, ``graphscope: error: FILE[:LINE]: what is wrong``; the exit status is
2 for unreadable or invalid input, 1 for any other graphscope error, 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import faulthandler
import io
import json
import math
import os
import re
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import paths, sizes
from .analysis.buckets import DEFAULT_BUCKETS, MAX_BUDGET_MIB
from .descendants import Seen, Watch, hook_flag, is_python
from .errors import GraphscopeError, InputError, printable
from .output import is_special, refuse_inputs, write_atomic
from .recording import (
    DEFAULT_EVERY_S,
    DEFAULT_FIRST,
    DEFAULT_WINDOW,
    RUN_FILE,
    Settings,
    is_recording,
    load_recordings,
    nothing_recorded,
    process_label,
    recorded_pids,
    recording_parts,
    unrecorded_processes,
)
from .version import __version__


def _budget_bytes(mib: float | None) -> int | None:
    """``--budget-mib`` as bytes; -1 for a value that is no size in MiB."""
    if mib is None:
        return None
    if not math.isfinite(mib) or mib <= 0 or mib > MAX_BUDGET_MIB:
        return -1
    return int(mib * 2**20)


def _port(value: str) -> int:
    """``--port``: a TCP port, 1 to 65535 (argparse prints its usage and this error)."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port: {value!r}: not a number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port: {port}: a port is 1 to 65535")
    return port


def _error(message: str) -> None:
    sys.stderr.write(f"graphscope: error: {printable(message)}\n")


def _into_stdout(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is the file this process's stdout writes to (``-o /dev/stdout``):
    then no line is printed there, which would land in the output."""
    try:
        return paths.same_file(path, os.fstat(sys.stdout.fileno()))
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):  # no file behind it
        return False


def _say(line: str, output: str | os.PathLike[str]) -> None:
    """A success line on stdout, its paths already ``printable``; none when the output went
    to stdout itself."""
    if not _into_stdout(output):
        print(line)


def _dump_json(data: Any) -> None:
    """Print ``--json`` output as strict JSON: NaN and the infinities (an unknown eager time
    in ``buckets``) are null, as JSON has no such numbers."""
    # Past the escaping of control characters: JSON escapes its own, but for DEL, which it
    # may hold raw and which "\x7f" would make invalid JSON.
    out = sys.stdout._stream if isinstance(sys.stdout, _EscapingStream) else sys.stdout
    json.dump(_finite(data), out, indent=1, default=str, allow_nan=False)
    out.write("\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def cmd_inspect(args: argparse.Namespace) -> int:
    from . import text
    from .analysis.findings import findings
    from .analysis.lifecycle import process_report
    from .analysis.summary import summarize
    from .io import detect_format, load

    status = 0
    results = []
    for path in args.files:
        try:
            recording = is_recording(path, empty=True)
            reports = [process_report(r) for r in load_recordings(path)] if recording else []
        except InputError as exc:
            _error(str(exc))
            status = 2
            continue
        if recording:
            if args.json:
                results.append(
                    {
                        "file": path,
                        "recording": [r.as_dict() for r in reports],
                        "unrecorded_processes": unrecorded_processes(path),
                    }
                )
            else:
                text.render_recording(
                    printable(path),
                    reports,
                    sys.stdout.write,
                    top=args.top,
                    unrecorded=unrecorded_processes(path),
                )
            continue
        try:
            G = load(path)
            summary = {
                "format": detect_format(path),
                **summarize(G),
                "findings": [f.as_dict() for f in findings(G)],
            }
        except InputError as exc:
            _error(str(exc))
            status = 2
            continue
        if args.json:
            results.append({"file": path, **summary})
        else:
            text.render_summary(printable(path), summary, sys.stdout.write, top=args.top)
            text.render_findings(summary["findings"], sys.stdout.write)
    if args.json:
        _dump_json(results)
    return status


def cmd_convert(args: argparse.Namespace) -> int:
    from .io import load, save

    paths.output_path(args.output)  # a name that names no file: said before the input is read
    refuse_inputs(args.output, [args.input])
    G = load(args.input)
    written = save(G, args.output)
    _say(
        f"{printable(args.input)} -> {printable(str(written))} ({G.number_of_nodes()} nodes, "
        f"{G.number_of_edges()} edges)",
        written,
    )
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from .capture import session  # needs torch, cuda-python and cupti-python

    # A crash inside the driver or CUPTI kills the process without a Python error: print
    # where it happened, for the bug report.
    with contextlib.suppress(io.UnsupportedOperation, ValueError):  # stderr is no file
        faulthandler.enable()
    command = "graphscope " + " ".join(sys.argv[1:]) if sys.argv[1:] else None
    bundles = session.capture_buckets(
        args.model,
        args.batch_sizes,
        args.out,
        replays=args.replays,
        warmup=args.warmup,
        numerics=args.numerics,
        progress=lambda msg: print(printable(msg), flush=True),  # it names files under --out
        command=command,
    )
    print(f"{len(bundles)} bundles in {printable(args.out)}, listed in its .buckets.json")
    return 0


def _program(words: list[str]) -> list[str]:
    """The command to run: ``script.py ARGS`` and ``-m module ARGS`` run with this Python."""
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise GraphscopeError(
            "record needs a program to run: graphscope record [--out DIR] -- python script.py "
            "ARGS (or script.py ARGS, or -m package.module ARGS)"
        )
    if words[0] == "-m" or words[0].endswith(".py"):
        return [sys.executable, *words]
    return words


def _record_folder(name: str | None, force: bool) -> Path:
    """The folder ``record`` writes, made and empty of any recording: two runs never merge.

    Without ``--out``, a new ``graphscope-recording-<date>-<time>`` (``-2``, ``-3``... when
    one started within the same second). A named folder that holds a recording is refused,
    or with ``--force`` has that recording's parts removed (``recording_parts``), and nothing
    else of the folder."""
    import datetime
    import shutil

    if name is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out, n = Path(f"graphscope-recording-{stamp}"), 1
        while paths.lexists(out):
            n += 1
            out = Path(f"graphscope-recording-{stamp}-{n}")
    else:
        out = Path(name)
    if paths.exists(out) and not paths.is_dir(out):
        raise InputError(out, "exists and is not a folder")
    parts = recording_parts(out)
    if parts and not force:
        if parts == [out]:
            held = "is one process's folder of a recording"
        else:
            n = sum(1 for p in parts if p.name != RUN_FILE)
            held = f"already holds a recording ({n} process folder{'s' * (n != 1)}"
            held += " and run.json)" if (out / RUN_FILE) in parts else ")"
        raise InputError(
            out,
            f"{held}; record into another folder (--out NEW_FOLDER), or add --force to "
            "replace that recording",
        )
    try:
        for part in parts:
            if paths.is_dir(part) and not part.is_symlink():
                shutil.rmtree(part)
            else:
                part.unlink()
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise paths.refusal(exc.filename or out, exc) from None
    return out


def cmd_record(args: argparse.Namespace) -> int:
    import signal
    import subprocess

    from .capture.environment import now_iso
    from .capture.record import (  # no GPU import until the program's own
        BOOTSTRAP,
        ENV_OUT,
        child_environment,
    )

    program = _program(args.program)
    out = _record_folder(args.out, args.force)
    settings = Settings(
        first=args.first,
        every_s=args.every,
        window=args.window,
        attribution=not args.no_attribution,
        ops=args.ops,
    )
    env = {**os.environ, **child_environment(out, settings)}
    flagged = hook_flag(program) if is_python(program[0]) else None
    if flagged:
        print(
            f"graphscope record: warning: {printable(program[0])} is run with {flagged}: "
            "graphscope's start-up hook cannot run in it, so it will not be recorded (Python "
            "processes it starts without that option will be); leave the option out to record it",
            file=sys.stderr,
        )
    print(
        f"graphscope record: recording into {printable(str(out))}: every graph each Python "
        f"process of {printable(Path(program[0]).name)} instantiates; the first "
        f"{settings.first} replays of each and {settings.window} every {settings.every_s:g} s "
        "are timed",
        file=sys.stderr,
        flush=True,
    )
    started_at = now_iso()
    try:
        child = subprocess.Popen(program, env=env)
    except OSError as exc:
        raise GraphscopeError(f"cannot run {program[0]!r}: {exc.strerror or exc}") from None
    descendants = Watch(child.pid, hook={ENV_OUT: env[ENV_OUT], "PYTHONPATH": str(BOOTSTRAP)})
    descendants.start()
    # Described while the program starts, not before: nvidia-smi and package metadata take
    # a few hundred ms that the program need not wait for.
    run = _run_description(args.invocation, program, started_at)
    write_atomic(out / RUN_FILE, json.dumps(run, indent=1) + "\n")
    # Ctrl-C reaches the program too (one process group); the program decides how to stop.
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT,)}
    forward = signal.signal(signal.SIGTERM, lambda signum, frame: child.terminate())
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.signal(signal.SIGTERM, forward)
    # A process that left a folder was recorded, whatever its name says (a native server
    # that embeds Python runs the hook too).
    recorded = recorded_pids(out)
    missed = [s for s in descendants.stop() if s.pid not in recorded]
    run.update(
        ended_at=now_iso(),
        exit_status=code,
        unrecorded_processes=[
            {"pid": s.pid, "name": s.name, "why": s.why_unrecorded()} for s in missed
        ],
    )
    write_atomic(out / RUN_FILE, json.dumps(run, indent=1) + "\n")
    _summarize_recording(out, code)
    _say_unrecorded(missed)
    return code if code >= 0 else 128 - code


def _run_description(invocation: list[str], program: list[str], started_at: str) -> dict[str, Any]:
    """How a recording was made: the command, the machine and the versions (run.json).

    Read without initialising CUDA here (nvidia-smi, package metadata): this process only
    starts the program.
    """
    from .capture.environment import nvidia_smi, versions

    return {
        "command": shlex.join(invocation),
        "program": program,
        "cwd": os.getcwd(),
        **nvidia_smi(),
        **versions(),
        "started_at": started_at,
        "ended_at": None,
        "exit_status": None,
    }


def _say_unrecorded(missed: list[Seen], most: int = 5) -> None:
    """One line per process of the program that used CUDA where record could not follow."""
    for seen in missed[:most]:
        print(
            f"graphscope record: not recorded: {printable(seen.why_unrecorded())}", file=sys.stderr
        )
    if len(missed) > most:
        print(
            f"graphscope record: not recorded: {len(missed) - most} more such processes "
            "(run.json lists them all)",
            file=sys.stderr,
        )


def _summarize_recording(out: Path, code: int) -> None:
    from .analysis.lifecycle import process_report

    ended = "exited with status " + str(code) if code >= 0 else f"was killed by signal {-code}"
    shown = printable(str(out))
    try:
        if not is_recording(out):
            print(
                f"graphscope record: the program {ended}; no Python process of it made a CUDA "
                f"context, so nothing was recorded in {shown}",
                file=sys.stderr,
            )
            return
        reports = [process_report(r) for r in load_recordings(out)]
    except InputError as exc:
        _error(str(exc))
        return
    graphs = sum(r.graphs for r in reports)
    print(
        f"graphscope record: the program {ended}; {graphs} graphs from {len(reports)} "
        f"process(es) in {shown} (graphscope inspect {shown}; graphscope serve {shown})",
        file=sys.stderr,
    )


def _stop_on_signal(signum: int, frame: Any) -> None:
    """SIGTERM and SIGHUP stop the server as Ctrl-C does: its exit handlers run."""
    raise KeyboardInterrupt


def check_serve_files(files: list[str]) -> None:
    """Refuse, in one line, a file ``serve`` cannot show: before the dashboard's packages are
    imported or a port is taken (a graph file, a recording folder or its recording.json)."""
    for name in files:
        if not paths.is_file(name) and not is_recording(name):
            why = "not a recording folder" if paths.is_dir(name) else "no such file"
            raise InputError(name, nothing_recorded(name) or why)


def check_serve_address(host: str, port: int) -> None:
    """Refuse, in one line, a ``--host`` that names no address of this machine or a port
    that cannot be taken: before the dashboard starts, whose server would print a bare
    "Name or service not known" or its own two lines for a port in use. The socket is bound
    as Werkzeug binds it (the family by the host's form, SO_REUSEADDR) and closed again."""
    if host.startswith("unix://"):  # a Unix socket, which Werkzeug makes itself
        return
    shown = printable(host) or '""'
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        found = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        address = found[0][4]
    except (OSError, ValueError, UnicodeError, IndexError) as exc:  # gaierror, NUL, IDNA
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise GraphscopeError(
            f"--host {shown}: not an address to serve on ({why}): give one of this machine's "
            "addresses or names, 127.0.0.1 (the default), or 0.0.0.0 for every address"
        ) from None
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            what = "is in use: stop what listens there, or choose another --port"
        elif exc.errno == errno.EADDRNOTAVAIL:
            what = "cannot be bound: the host is not an address of this machine"
        elif exc.errno == errno.EACCES:
            what = "cannot be bound: a port below 1024 needs privileges; choose another --port"
        else:
            what = f"cannot be bound ({exc.strerror or exc})"
        raise GraphscopeError(f"--host {shown} --port {port}: {what}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    import signal

    check_serve_files(args.files)
    check_serve_address(args.host, args.port)
    from .app.serve import guard
    from .app.serve.server import create_app  # needs dash and plotly

    bad = [name for name in args.allow_host if guard.host_name(name) is None]
    if bad:
        raise GraphscopeError(f"--allow-host {bad[0]!r}: not a host name or address")
    hosts = guard.allowed_hosts(args.host, args.allow_host)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"graphscope: warning: serving on {printable(args.host)}: anyone who can reach this "
            "machine can read the graphs it shows",
            file=sys.stderr,
        )
    if args.files:
        print(f"graphscope: reading {printable(args.files[0])}", flush=True)
    # Without a handler SIGTERM (kill, systemd, docker stop) ends the process at once, and
    # the folder of uploaded files stays behind in the temp folder.
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, _stop_on_signal)
    app = create_app(
        args.files,
        say=lambda error: print(
            f"graphscope: warning: {printable(error)}; the page lists it as failed",
            file=sys.stderr,
        ),
    )
    guard.install(app.server, hosts)
    shown = "the bundled samples" if not args.files else f"{len(args.files)} file(s)"
    url = f"http://{printable(args.host)}:{args.port}/"
    print(f"graphscope: showing {shown} at {url} (Ctrl-C stops it)", flush=True)
    try:
        app.run(host=args.host, port=args.port, debug=False)
    except OSError as exc:  # taken between the check and the start
        raise GraphscopeError(
            f"--host {printable(args.host)} --port {args.port}: cannot serve "
            f"({exc.strerror or exc})"
        ) from None
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from . import text
    from .analysis.lifecycle import process_report
    from .analysis.report import step_report
    from .io import load

    if is_recording(args.file, empty=True):
        recordings = load_recordings(args.file)
        reports = [process_report(r) for r in recordings]
        if args.json:
            _dump_json(
                {
                    "file": args.file,
                    "processes": [
                        {**r.as_dict(), "graphs_lifecycle": rec.graphs}
                        for r, rec in zip(reports, recordings, strict=True)
                    ],
                }
            )
            return 0
        text.render_recording(printable(args.file), reports, sys.stdout.write)
        for rec in recordings:
            sys.stdout.write(f"{process_label(rec)}: the life of each graph\n")
            text.render_lifecycle(rec.graphs, sys.stdout.write)
        return 0
    report = step_report(load(args.file), top=args.top)
    if args.json:
        _dump_json({"file": args.file, **report.as_dict()})
    else:
        text.render_report(printable(args.file), report, sys.stdout.write)
    return 0


def _diff_recordings(a: str, b: str, as_json: bool) -> int:
    """Pair the processes (by rank, then order) and their graphs, and diff each pair."""
    from . import text
    from .analysis.diff import diff
    from .analysis.lifecycle import pair_graphs
    from .io import load

    ra, rb = load_recordings(a), load_recordings(b)
    out: list[dict[str, Any]] = []
    w = sys.stdout.write
    if not as_json:
        w(f"A: {printable(a)}\nB: {printable(b)}\n")
    for pa, pb in zip(ra, rb, strict=False):
        pairs, only_a, only_b = pair_graphs(pa, pb)
        entry: dict[str, Any] = {
            "a": process_label(pa),
            "b": process_label(pb),
            "only_a": only_a,
            "only_b": only_b,
            "pairs": [],
        }
        if not as_json:
            w(f"{process_label(pa)} <-> {process_label(pb)}: {len(pairs)} graphs paired\n")
        for ga, gb in pairs:
            pa_path, pb_path = pa.bundle_path(ga), pb.bundle_path(gb)
            if pa_path is None or pb_path is None:
                continue
            d = diff(load(pa_path), load(pb_path))
            verdict = d.update.result if d.update is not None else None
            entry["pairs"].append({"a": ga["id"], "b": gb["id"], **d.as_dict()})
            if not as_json:
                replay = (
                    f"; replay {text.us(d.replay_a_us)} -> {text.us(d.replay_b_us)}"
                    if d.replay_a_us is not None and d.replay_b_us is not None
                    else ""
                )
                w(
                    f"  {ga['id']} <-> {gb['id']} (batch {ga.get('batch')}): {d.matched} nodes "
                    f"matched, {len(d.added)} added, {len(d.removed)} removed, "
                    f"{len(d.configured)} changed; "
                    f"cudaGraphExecUpdate {verdict}{replay}\n"
                )
        if not as_json:
            for label, ids in (("only in A", only_a), ("only in B", only_b)):
                if ids:
                    w(f"  {label}: {', '.join(ids)}\n")
        out.append(entry)
    if len(ra) != len(rb) and not as_json:
        w(f"  A has {len(ra)} processes, B has {len(rb)}: the extra ones are not compared\n")
    if as_json:
        _dump_json({"a": a, "b": b, "processes": out})
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from . import text
    from .analysis.diff import diff
    from .io import load

    kinds = is_recording(args.a, empty=True), is_recording(args.b, empty=True)
    if all(kinds):
        return _diff_recordings(args.a, args.b, args.json)
    if any(kinds):
        raise InputError(
            args.a if kinds[0] else args.b,
            "is a recording and the other is a graph file: diff two recordings, or two graphs "
            "(a recording's bundles are the g<N>.json.gz files in its process folders)",
        )
    result = diff(load(args.a), load(args.b))
    if args.json:
        _dump_json({"a": args.a, "b": args.b, **result.as_dict()})
    else:
        text.render_diff(
            printable(args.a), printable(args.b), result, sys.stdout.write, top=args.top
        )
    return 0


_RULE_OPTIONS = (
    "no_failed_captures",
    "no_stale_pointers",
    "max_eager_share",
    "no_graph_stop",
    "no_rerecord",
    "no_skips",
    "max_graphs",
    "max_pool_mib",
    "no_unchanged_inputs",
)


def cmd_check(args: argparse.Namespace) -> int:
    from .analysis.check import DEFAULT_RULES, Rules, check

    path = args.recording
    if not is_recording(path, empty=True):
        why = (
            "a file, not a recording folder"
            if paths.is_file(path) and Path(path).name != "recording.json"
            else "not a recording folder"
            if paths.is_dir(path)
            else "no such file or folder"
        )
        raise InputError(path, f"{why}: check reads what graphscope record --out DIR wrote (DIR)")
    for name, value, top in (
        ("--max-eager-share", args.max_eager_share, 100.0),
        ("--max-pool-mib", args.max_pool_mib, float(MAX_BUDGET_MIB)),
    ):
        if value is not None and not (math.isfinite(value) and 0 <= value <= top):
            _error(f"{path}: {name} {value:g} is not a number from 0 to {top:g}")
            return 2
    if args.max_graphs is not None and args.max_graphs < 0:
        _error(f"{path}: --max-graphs {args.max_graphs} is below 0")
        return 2
    named = any(getattr(args, o) not in (None, False) for o in _RULE_OPTIONS)
    rules = (
        Rules(
            no_failed_captures=args.no_failed_captures,
            no_stale_pointers=args.no_stale_pointers,
            max_eager_share_pct=args.max_eager_share,
            no_graph_stop=args.no_graph_stop,
            no_rerecord=args.no_rerecord,
            no_skips=args.no_skips,
            max_graphs=args.max_graphs,
            max_pool_mib=args.max_pool_mib,
            no_unchanged_inputs=args.no_unchanged_inputs,
        )
        if named
        else DEFAULT_RULES
    )
    recordings = load_recordings(path)
    result = check(recordings, rules)
    shown = printable(path)
    if args.json:
        _dump_json({"path": path, **result.as_dict()})
    else:
        for v in result.violations:
            print(f"{shown}: {v.rule}: {v.message}")
        if not result.violations:
            graphs = sum(len(r.graphs) for r in recordings)
            print(
                f"{shown}: passed: {', '.join(result.checked)} ({len(recordings)} "
                f"process{'es' * (len(recordings) != 1)}, {graphs} graphs)"
            )
        for line in result.unchecked:
            print(f"{shown}: not checked: {line}")
    return 1 if result.violations else 0


def cmd_buckets(args: argparse.Namespace) -> int:
    from . import text
    from .analysis.buckets import bucket_report, read_distribution

    budget = _budget_bytes(args.budget_mib)
    if budget == -1:
        _error(f"{args.path}: --budget-mib {args.budget_mib} is not a size in MiB")
        return 2
    distribution = read_distribution(args.histogram) if args.histogram else None
    report = bucket_report(args.path, distribution, budget)
    if args.json:
        _dump_json({"path": args.path, **report.as_dict()})
    else:
        text.render_buckets(printable(args.path), report, sys.stdout.write)
    return 0


def _node_data_path(out: Path) -> Path:
    """Where the Model Explorer export puts its overlay: ``<name>.node-data.json`` by OUT (a
    file's name: ``paths.output_path`` has refused an empty one, "." and "/")."""
    return out.with_name(out.name.removesuffix(".gz").removesuffix(".json") + ".node-data.json")


def _check_overlay(out: Path, beside: Path, source: str, force: bool) -> None:
    """Refuse, before anything is written, an overlay that cannot go beside OUT."""
    if is_special(paths.stat(out)):
        raise InputError(
            out,
            "is a FIFO or a device, and the model-explorer export also writes its replay-time "
            f"overlay as a file beside OUT ({beside.name}): write to a file",
        )
    try:
        there = paths.lexists(beside)
    except InputError as exc:  # its name, longer than OUT's, can pass what the OS allows
        raise InputError(
            beside,
            f"{exc.message} (the model-explorer export names its replay-time overlay after "
            "-o: choose a shorter -o)",
        ) from None
    # The overlay's name is made from OUT, not given: a file already there is one the user
    # may not know this command writes, so it is replaced only when asked to.
    refuse_inputs(beside, [source])
    if there and not force:
        raise InputError(
            beside,
            "is already there, and the model-explorer export writes its replay-time overlay "
            "under this name, made from -o: pass --force to replace it, or choose another -o",
        )


def cmd_export(args: argparse.Namespace) -> int:
    from . import exports
    from .exports import model_explorer
    from .io import load

    out = paths.output_path(args.output)
    refuse_inputs(out, [args.file])
    G = load(args.file)
    if args.format == "html":
        try:
            from .app.render.report_html import report_html
        except ImportError as exc:
            raise GraphscopeError(
                f"the HTML report needs the dashboard's packages ({exc}): pip install graphscope"
            ) from None
        sizes.check(
            out,
            lambda e: exports.measure_html(G, e),
            "the HTML report",
            "it draws each node's name and attribution, so a long one many nodes share is "
            "written once per node; open the graph with graphscope serve instead",
        )
        written = [write_atomic(out, report_html(G, Path(args.file).name))]
    else:
        make, _ = exports.FORMATS[args.format]
        what = f"the {args.format} export"
        explorer = args.format == "model-explorer"
        overlay = exports.model_explorer_node_data(G) if explorer else {}
        beside = _node_data_path(out)
        if overlay:
            _check_overlay(out, beside, args.file, args.force)
        if explorer:  # measured on the graph: it makes a text of each value as it is built
            sizes.check(out, lambda e: model_explorer.measure(G, e), what, exports.EXPORT_INSTEAD)
        written = [exports.write_json(make(G), out, what, measured=explorer)]
        if overlay:
            written.append(exports.write_json(overlay, beside, "the replay-time overlay"))
    for path in written:
        _say(f"wrote {printable(str(path))}", path)
    return 0


def cmd_import_trace(args: argparse.Namespace) -> int:
    from .analysis.torch_trace import poor_join, with_torch_trace
    from .io import load, save

    paths.output_path(args.output)
    refuse_inputs(args.output, [args.bundle, args.trace])
    G = with_torch_trace(load(args.bundle), args.trace)
    parity = G.graph["parity"]
    poor = poor_join(parity)
    if poor is not None and not args.force:
        raise GraphscopeError(
            f"{args.trace} against {args.bundle}: {poor} Nothing written; --force writes "
            "the bundle anyway"
        )
    _say(
        f"joined {parity['matched']:,} of {parity['eager_ops']:,} GPU ops of the profiler trace "
        f"to the graph's {parity['graph_ops']:,}"
        + ("" if parity["ok"] else "; they differ: graphscope inspect shows how"),
        args.output,
    )
    written = save(G, args.output)
    _say(f"wrote {printable(str(written))}", written)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphscope",
        description="See inside CUDA graphs: read cudaGraphDebugDotPrint dumps and graphscope "
        "bundles.",
    )
    parser.add_argument("--version", action="version", version=f"graphscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = sub.add_parser(
        "inspect",
        help="summarise graph files (.dot, .json, .json.gz)",
        description="Summarise CUDA graph files: nodes by type, shape, "
        "kernels with their launch configurations, and times "
        "where the file has them.",
    )
    inspect.add_argument("files", nargs="+", metavar="FILE")
    inspect.add_argument("--json", action="store_true", help="print JSON for scripts")
    inspect.add_argument(
        "--top", type=int, default=25, metavar="N", help="kernel names to list (default 25)"
    )
    inspect.set_defaults(run=cmd_inspect)
    report = sub.add_parser(
        "report",
        help="eager step against graph replay: what the graph saved, where time goes",
        description="The step report of a bundle: eager and replay step time, CPU launch time, "
        "GPU busy and idle, speedup, the slowest nodes and module groups, the critical path "
        "against the replay span, and the findings.",
    )
    report.add_argument("file", metavar="FILE")
    report.add_argument("--json", action="store_true", help="print JSON for scripts")
    report.add_argument("--top", type=int, default=10, metavar="N", help="rows per table")
    report.set_defaults(run=cmd_report)
    compare = sub.add_parser(
        "diff",
        help="what changed between two graphs, and whether cudaGraphExecUpdate accepts it",
        description="Match the nodes of A and B by topology and kernel identity; list added, "
        "removed and changed nodes and timing deltas; predict whether cudaGraphExecUpdate "
        "would update an executable graph of A with B, with the reason for each node that "
        "prevents it.",
    )
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
    compare.add_argument("--json", action="store_true", help="print JSON for scripts")
    compare.add_argument("--top", type=int, default=15, metavar="N", help="rows per list")
    compare.set_defaults(run=cmd_diff)
    buckets = sub.add_parser(
        "buckets",
        help="which batch-size buckets are worth their memory",
        description="Per bucket of a <model>.buckets.json (or the folder holding it): replay "
        "time, time per sequence, node count and graph memory; the padding waste for a "
        "batch-size distribution; the fastest set of buckets within a memory budget.",
    )
    buckets.add_argument("path", metavar="BUCKETS", help="a .buckets.json or its folder")
    buckets.add_argument(
        "--histogram",
        metavar="FILE",
        help='batch sizes seen in traffic: "batch,count" lines or a JSON object '
        "(default: every size up to the largest bucket, equally likely)",
    )
    buckets.add_argument(
        "--budget-mib",
        type=float,
        metavar="MIB",
        help="graph memory budget for the best set (a positive number of MiB)",
    )
    buckets.add_argument("--json", action="store_true", help="print JSON for scripts")
    buckets.set_defaults(run=cmd_buckets)
    chk = sub.add_parser(
        "check",
        help="check a recording against rules, for CI: one line per rule broken, exit 1",
        description="Check every process of a recording (graphscope record --out DIR) "
        "against rules: one line for each rule a process breaks, naming the graph, the input "
        "and the program's line where the recording says them, then exit status 1; one "
        "'passed' line and status 0 otherwise. With no rule named, the default rules apply: "
        "--no-failed-captures --no-stale-pointers --max-eager-share 50 --no-graph-stop "
        "--no-rerecord --no-skips. Naming any rule "
        "checks only the rules "
        "named. A recording that ends early (the program was killed, or recording stopped) "
        "always fails.",
    )
    chk.add_argument("recording", metavar="RECORDING", help="a recording folder")
    chk.add_argument(
        "--no-failed-captures",
        action="store_true",
        help="no stream capture broken by a call inside it (a synchronize, a blocking copy), "
        "or refused",
    )
    chk.add_argument(
        "--no-stale-pointers",
        action="store_true",
        help="no graph replayed after a parameter it reads moved or went away (a weight "
        "reload that rebinds storage), or after an allocation it reads was freed (a static "
        "input or cache made anew)",
    )
    chk.add_argument(
        "--max-eager-share",
        type=float,
        metavar="PCT",
        help="most percent of the sampled GPU kernel time that may run outside graphs",
    )
    chk.add_argument(
        "--no-graph-stop",
        action="store_true",
        help="no run that goes on for a while (3 s, and a fifth of the time since the first "
        "launch) with no graph launched after graphs were (a batch past the largest graph)",
    )
    chk.add_argument(
        "--no-rerecord",
        action="store_true",
        help="no graph recorded again from one site with the same input shapes",
    )
    chk.add_argument(
        "--no-skips",
        action="store_true",
        help="no function that torch.compile ran without CUDA graphs",
    )
    chk.add_argument(
        "--no-unchanged-inputs",
        action="store_true",
        help="no small buffer a graph reads that held the same bytes at every sampled replay "
        "(an input the program binds anew instead of copying into); not a default rule: a "
        "benchmark that replays one input breaks it",
    )
    chk.add_argument("--max-graphs", type=int, metavar="N", help="most graphs a process")
    chk.add_argument(
        "--max-pool-mib", type=float, metavar="MIB", help="most graph-pool MiB a process"
    )
    chk.add_argument("--json", action="store_true", help="print JSON for scripts")
    chk.set_defaults(run=cmd_check)
    export = sub.add_parser(
        "export",
        help="write a graph for Perfetto, a browser, Model Explorer or networkx",
        description="perfetto: a Chrome trace JSON of the eager step and the graph replay "
        "(open it at ui.perfetto.dev); html: a standalone report in one file that works "
        "offline; model-explorer: Model Explorer graph JSON with namespaces from attribution, "
        "and a node-data overlay of replay times beside it (<name>.node-data.json); "
        "node-link: networkx node-link JSON (networkx.node_link_graph reads it back).",
    )
    export.add_argument("file", metavar="FILE")
    export.add_argument(
        "--format", required=True, choices=["perfetto", "html", "model-explorer", "node-link"]
    )
    export.add_argument("-o", "--output", required=True, metavar="OUT")
    export.add_argument(
        "--force",
        action="store_true",
        help="model-explorer: replace the <name>.node-data.json beside OUT if one is there "
        "(without it, the export refuses to)",
    )
    export.set_defaults(run=cmd_export)
    imported = sub.add_parser(
        "import-trace",
        help="use a PyTorch profiler trace of the eager step as a bundle's eager trace",
        description="Join a torch.profiler Chrome trace (export_chrome_trace, .json or "
        ".json.gz) of one eager step to a bundle's nodes and write a bundle whose eager "
        "side (trace, summary, parity, per-node eager timing) comes from it. A trace whose "
        "GPU ops do not join the graph's (fewer than 90% of them join with the same launch "
        "configuration: a trace of another model or batch size) is refused and nothing is "
        "written, unless --force is given.",
    )
    imported.add_argument("bundle", metavar="BUNDLE")
    imported.add_argument("trace", metavar="TRACE")
    imported.add_argument("-o", "--output", required=True, metavar="OUT")
    imported.add_argument(
        "--force",
        action="store_true",
        help="write the bundle even when the trace joins the graph poorly (another model's "
        "trace): its eager figures then describe other work",
    )
    imported.set_defaults(run=cmd_import_trace)
    convert = sub.add_parser(
        "convert",
        help="convert between .dot, .json and .json.gz",
        description="Convert a graph file; the output format follows "
        "OUT's extension (.json, .json.gz, .dot).",
    )
    convert.add_argument("input", metavar="IN")
    convert.add_argument("output", metavar="OUT")
    convert.set_defaults(run=cmd_convert)
    serve = sub.add_parser(
        "serve",
        help="open graphs in the dashboard (a local web app)",
        description="Start the dashboard on the given graph files (.dot, .json, .json.gz), or "
        "on the bundled samples when none are given. More files can be dropped into the page.",
    )
    serve.add_argument("files", nargs="*", metavar="FILE")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8050, help="port, 1 to 65535 (default 8050)")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests for this host name (a reverse proxy's, the machine's DNS "
        "name); repeatable. Without it the server answers for localhost, 127.0.0.1, [::1] "
        "and the --host address",
    )
    serve.set_defaults(run=cmd_serve)
    capture = sub.add_parser(
        "capture",
        help="capture a model's decode step on the GPU and write bundles",
        description="Capture a decode step into a CUDA graph per batch size, read every node "
        "through the driver, time every node in replay with CUPTI, and write "
        "<model>-b<batch>.json.gz with the verbose DOT dump beside it. Needs a CUDA GPU and "
        "pip install 'graphscope[capture]'.",
    )
    capture.add_argument(
        "--model",
        required=True,
        help="tiny-gpt, tiny-gpt-parallel (two streams), tiny-llama, hf:FOLDER (a Hugging "
        "Face causal LM saved with save_pretrained), or package.module:factory",
    )
    capture.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=list(DEFAULT_BUCKETS),
        metavar="N",
        help="one graph per batch size; a batch pads up to the next one "
        f"(default {' '.join(map(str, DEFAULT_BUCKETS))})",
    )
    capture.add_argument("--out", required=True, help="folder for the bundles")
    capture.add_argument(
        "--replays",
        type=int,
        default=200,
        help="timed replays, with and without tracing (default 200)",
    )
    capture.add_argument("--warmup", type=int, default=3, help="eager warm-up steps (default 3)")
    capture.add_argument(
        "--no-numerics",
        dest="numerics",
        action="store_false",
        help="skip comparing the graph's values with eager's at the next step, and the "
        "second capture that finds the arguments the graph froze",
    )
    capture.set_defaults(run=cmd_capture)
    rec = sub.add_parser(
        "record",
        help="run a program unchanged and record every CUDA graph it instantiates",
        description="Run a program (and the Python processes it starts) unchanged, and record "
        "every CUDA graph it instantiates, whoever captures it (torch.compile, vLLM, SGLang, "
        "transformers, torch.cuda.graph): each graph read at instantiation, its capture site, "
        "memory pool, replays and updates, and per-node timing from the program's own "
        "replays, sampled. Writes one folder per process with a bundle per graph and a "
        "recording.json. Needs a CUDA GPU and pip install 'graphscope[capture]' in the "
        "program's Python environment.",
        usage="graphscope record [--out DIR] [options] -- COMMAND [ARGS ...]",
    )
    rec.add_argument(
        "--out",
        metavar="DIR",
        help="folder for the recording, new or holding no recording (default: a new "
        "graphscope-recording-<date>-<time>)",
    )
    rec.add_argument(
        "--force",
        action="store_true",
        help="replace the recording --out holds (its run.json and process folders)",
    )
    rec.add_argument(
        "--first",
        type=int,
        default=DEFAULT_FIRST,
        metavar="K",
        help=f"replays timed at the start of each graph (default {DEFAULT_FIRST})",
    )
    rec.add_argument(
        "--every",
        type=float,
        default=DEFAULT_EVERY_S,
        metavar="S",
        help=f"seconds between sampling windows; 0 for none (default {DEFAULT_EVERY_S:g})",
    )
    rec.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"replays timed in each window (default {DEFAULT_WINDOW})",
    )
    rec.add_argument(
        "--no-attribution",
        action="store_true",
        help="do not label nodes with module and source line while graphs are captured",
    )
    rec.add_argument(
        "--ops",
        action="store_true",
        help="also label each node with the aten op that made it: every op captured then "
        "passes through Python (a 10,411-node capture took 3.6x its unrecorded time, "
        "against 1.6x without --ops: docs/RECORD.md)",
    )
    rec.add_argument("program", nargs=argparse.REMAINDER, help="the program: -- COMMAND ARGS")
    rec.set_defaults(run=cmd_record)
    return parser


_RECORD_VALUED = ("--out", "--first", "--every", "--window")


def _split_record(argv: list[str]) -> tuple[list[str], list[str]]:
    """``record``'s own options, and the program after them (which argparse would parse)."""
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--" or word == "-m" or not word.startswith("-"):
            break
        i += 2 if word in _RECORD_VALUED else 1
    return argv[:i], argv[i:]


def _printable_output() -> None:
    """Names from files may hold what the terminal cannot encode (a JSON string can carry a
    lone surrogate): shown escaped, not a UnicodeEncodeError halfway through a report."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
                reconfigure(errors="backslashreplace")


# What a terminal acts on: C0 controls but the tab and the newline the renderers write, DEL
# and C1 (a file's kernel name can hold ESC ] 0 ; title BEL, or CSI 2 J).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape_controls(text: str) -> str:
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class _EscapingStream:
    """stdout that writes the control characters of what it is given as their Python escapes
    (``\\x1b``), so that names and values taken from files cannot drive the terminal, in
    every command's text output at once. Lone surrogates are left to the stream's
    backslashreplace; ``--json`` output holds no raw control characters to escape."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_escape_controls(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# Every argument that names a file or a folder, whatever the command.
_PATH_ARGS = (
    *("file", "files", "a", "b", "path", "histogram", "input", "output", "bundle", "trace"),
    "out",
)


def _refuse_empty_paths(args: argparse.Namespace) -> None:
    """An empty name names no file, though pathlib reads it as "." (the current folder)."""
    for name in _PATH_ARGS:
        value = getattr(args, name, None)
        if value == "" or (isinstance(value, list) and "" in value):
            raise InputError("", "no file named: name a file")


def main(argv: Sequence[str] | None = None) -> int:
    _printable_output()
    words = list(sys.argv[1:] if argv is None else argv)
    invocation = ["graphscope", *words]
    program: list[str] | None = None
    if words and words[0] == "record":
        words, program = _split_record(words)
    args = build_parser().parse_args(words)
    if program is not None:
        args.program = program
    args.invocation = invocation
    stdout = sys.stdout
    sys.stdout = _EscapingStream(stdout)
    try:
        _refuse_empty_paths(args)
        return int(args.run(args))
    except InputError as exc:
        _error(str(exc))
        return 2
    except GraphscopeError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head and closed early
        return 0
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
