"""record runs the user's program as `python` would, and keeps what it recorded however the
program ends: `python -m` of a package in the current folder, a folder with `__main__.py`,
`python -c`; `os._exit` (from the main thread, another thread or an atexit function), a
KeyboardInterrupt the program raises itself (a signal to ncu-classify still interrupts), a
`sys.exit("text")`, a fork; calls in other threads (not seen: counted as not covered); --stage
patterns that match nothing or cannot be read. os._exit and fork end a process: those run in a
child ncu-classify."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import CLI, CliRun, run_cli, terminal_signals

from ncu_classify.cli.entry import run
from ncu_classify.shapes.file import load_shapes

pytestmark = pytest.mark.needs("torch")

LINEAR = (
    "import torch\nx = torch.randn(8, 16)\nw = torch.randn(4, 16)\n"
    "y = torch.nn.functional.linear(x, w)\n"
)
THREAD_WHY = "run in another thread: record sees only the thread that runs the program"


def _linears(shapes: Path) -> list[tuple[int, int, int, int]]:
    """(M, N, K, calls) of every linear shape of a shapes file."""
    entries = load_shapes(shapes).entries()
    return [
        (e.shape.M, e.shape.N, e.shape.K, e.shape.calls) for e in entries if e.shape.op == "linear"
    ]  # type: ignore[union-attr]


def _child(tmp_path: Path, program: str, *options: str) -> CliRun:
    """`ncu-classify record -o s.yaml [options] -- python main.py` in a child process."""
    (tmp_path / "main.py").write_text(program)
    return run_cli("record", "-o", "s.yaml", *options, "--", "python", "main.py", cwd=tmp_path)


def test_python_m_finds_a_package_of_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m pkg` puts the current folder first on sys.path; record does the same."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "infer_pkg_here").mkdir()
    (tmp_path / "infer_pkg_here" / "__init__.py").write_text("")
    (tmp_path / "infer_pkg_here" / "__main__.py").write_text(LINEAR)
    assert run(["record", "-o", "s.yaml", "--", "python", "-m", "infer_pkg_here"]) == 0
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]


def test_a_folder_with_main_and_python_c_run_as_python_runs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text(LINEAR + "import sys\nprint(sys.argv)\n")
    assert run(["record", "-o", "a.yaml", "--", "python", "app", "--steps", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "['app', '--steps', '1']"
    assert _linears(tmp_path / "a.yaml") == [(8, 4, 16, 1)]
    code = LINEAR.replace("8, 16", "2, 16") + "import sys\nprint(sys.argv)\n"
    assert run(["record", "-o", "c.yaml", "--", "python", "-c", code, "x"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "['-c', 'x']"
    assert _linears(tmp_path / "c.yaml") == [(2, 4, 16, 1)]
    (tmp_path / "empty").mkdir()
    assert run(["record", "-o", "e.yaml", "--", "python", "empty"]) == 2
    assert capsys.readouterr().err == "ncu-classify: error: empty: a folder without __main__.py\n"


@pytest.mark.parametrize(
    ("ending", "code", "line"),
    [
        ("os._exit(0)", 0, "ncu-classify: warning: main.py ended with os._exit(0): what it ran"
         " before is written"),
        ("os._exit(3)", 5, "ncu-classify: error: main.py ended with os._exit(3); the 3 shapes"
         " recorded before it were written to s.yaml"),
        # a watchdog thread ends the program while the main thread still runs
        ("threading.Thread(target=os._exit, args=(0,)).start(); time.sleep(60)", 0,
         "ncu-classify: warning: main.py ended with os._exit(0): what it ran before is written"),
        ("atexit.register(os._exit, 3)", 5, "ncu-classify: error: main.py ended with"
         " os._exit(3); the 3 shapes recorded before it were written to s.yaml"),
    ],
)  # fmt: skip
def test_a_program_ending_in_os_exit_keeps_what_it_recorded(
    tmp_path: Path, ending: str, code: int, line: str
) -> None:
    """Before, os._exit(0) left exit 0 and no shapes file, os._exit(3) exit 3 (the code of
    an invalid input) and no file, and os._exit in an atexit function replaced record's code."""
    program = "import atexit, os, threading, time\n" + LINEAR + ending + "\n"
    done = _child(tmp_path, program)
    assert (done.rc, done.stderr.splitlines()[0]) == (code, line), done.stderr
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]


def test_the_programs_atexit_functions_run_as_part_of_it(tmp_path: Path) -> None:
    """As after a script: when it ends, newest first, recorded; what one raises is printed."""
    program = (
        "import atexit, torch\n" + LINEAR + "atexit.register(lambda: 1 / 0)\n"
        "atexit.register(torch.nn.functional.linear, torch.randn(3, 16), w)\n"
    )
    done = _child(tmp_path, program)
    assert done.rc == 0, done.stderr
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1), (3, 4, 16, 1)]
    assert "ZeroDivisionError: division by zero" in done.stderr


def test_a_keyboard_interrupt_the_program_raises_is_its_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, it was taken for the user's Ctrl-C: exit 130, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.py").write_text(LINEAR + "raise KeyboardInterrupt\n")
    assert run(["record", "-o", "s.yaml", "--", "python", "main.py"]) == 5
    assert capsys.readouterr().err == (
        "ncu-classify: error: main.py raised KeyboardInterrupt (not a signal to ncu-classify);"
        " the 3 shapes recorded before it were written to s.yaml\n"
    )
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]


def test_ctrl_c_to_ncu_classify_still_interrupts(tmp_path: Path) -> None:
    """SIGINT while the program runs: interrupted (130), nothing written."""
    program = LINEAR + "open('started', 'w').close()\nimport time\ntime.sleep(60)\n"
    (tmp_path / "main.py").write_text(program)
    argv = [*CLI, "record", "-o", "s.yaml", "--", "python", "main.py"]
    child = subprocess.Popen(
        argv, cwd=tmp_path, stderr=subprocess.PIPE, text=True, preexec_fn=terminal_signals
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert (child.returncode, err) == (130, "ncu-classify: interrupted\n")
    assert not (tmp_path / "s.yaml").exists()


def test_sys_exit_with_a_text_is_status_1_and_the_text_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.py").write_text(LINEAR + "import sys\nsys.exit('bad config')\n")
    assert run(["record", "-o", "s.yaml", "--", "python", "main.py"]) == 5
    assert capsys.readouterr().err == (
        "bad config\nncu-classify: error: main.py exited with 1 (bad config); the 3 shapes"
        " recorded before it were written to s.yaml\n"
    )


def test_a_forked_child_writes_nothing(tmp_path: Path) -> None:
    """Before, the child ran on into record and wrote the shapes file too (its own ops)."""
    program = LINEAR + (
        "import os\npid = os.fork()\n"
        "if pid == 0:\n    torch.nn.functional.linear(torch.randn(5, 16), w)\n"
        "else:\n    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0\n"
    )
    done = _child(tmp_path, program)
    assert done.rc == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        "recorded 3 shapes (1 typed, 2 device ops; 3 calls) in 1 stage to s.yaml"
    ]
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]


def test_calls_in_other_threads_are_said_not_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, on a CPU they were missing from the calls and the line said 0.0 % not covered."""
    monkeypatch.chdir(tmp_path)
    worker = "def work():\n    for _ in range(10):\n        torch.relu(x)\n"
    start = "import threading\nt = threading.Thread(target=work)\nt.start()\nt.join()\n"
    (tmp_path / "main.py").write_text(LINEAR + worker + start)
    assert run(["record", "-o", "s.yaml", "--", "python", "main.py"]) == 0
    out, err = capsys.readouterr()
    assert err == (
        "ncu-classify: warning: 10 device-op calls in other threads of the program were not"
        " seen (record follows the thread that runs the program); they are counted as not"
        " covered (recorded.totals.uncovered)\n"
    )
    assert out.endswith(": main 13 calls, 76.9 % not covered\n")
    totals = load_shapes(tmp_path / "s.yaml").recorded.totals  # type: ignore[union-attr]
    assert [(u.stage, u.name, u.why, u.calls) for u in totals.uncovered] == [  # type: ignore[union-attr]
        ("main", "aten.relu.default", THREAD_WHY, 10)
    ]
    # all of it in a thread: nothing to write, and the line says why
    (tmp_path / "main.py").write_text(
        "import torch\ndef work():\n" + "".join(f"    {line}\n" for line in LINEAR.splitlines())
        + start
    )  # fmt: skip
    assert run(["record", "-o", "t.yaml", "--", "python", "main.py"]) == 5
    assert capsys.readouterr().err == (
        "ncu-classify: error: python main.py: ran no op on a tensor that the replay can take;"
        " nothing written (3 device-op calls in other threads were not seen)\n"
    )


def test_stage_patterns_that_match_nothing_or_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `a=b=c` was taken as the pattern `a=b` (no module path holds a `=`), and a
    pattern that matched nothing was accepted without a word."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.py").write_text(LINEAR)
    argv = ["record", "-o", "s.yaml", "--stage", "=out", "--stage", "*=late", "--stage"]
    assert run([*argv, "transformer*=dit", "--", "python", "main.py"]) == 0
    assert capsys.readouterr().err == "".join(
        f"ncu-classify: warning: --stage {p}: no call's module path matched it (or an earlier"
        " --stage took them); paths are in the shapes' `source`\n"
        for p in ("*=late", "transformer*=dit")
    )
    assert run(["record", "-o", "x.yaml", "--stage", "a=b=c", "--", "python", "main.py"]) == 2
    assert capsys.readouterr().err == (
        "ncu-classify: error: --stage 'a=b=c': expected MODULE_PATTERN=STAGE (one `=`), STAGE"
        " in [A-Za-z0-9_]\n"
    )
    assert not (tmp_path / "x.yaml").exists()


def test_the_programs_signal_handlers_are_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that ignores Ctrl-C (or handles it) leaves record, and the process, as they
    were: before, SIGINT stayed ignored while record wrote and after."""
    monkeypatch.chdir(tmp_path)
    before = signal.getsignal(signal.SIGINT)
    (tmp_path / "main.py").write_text(
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + LINEAR
    )
    assert run(["record", "-o", "s.yaml", "--", "python", "main.py"]) == 0
    assert signal.getsignal(signal.SIGINT) is before


def test_a_program_that_changes_folder_leaves_o_as_typed(tmp_path: Path) -> None:
    """-o is the file in the folder record started in, also after the program's os.chdir (or
    os._exit in another folder); the line names it as typed."""
    (tmp_path / "elsewhere").mkdir()
    done = _child(tmp_path, LINEAR + "import os\nos.chdir('elsewhere')\n")
    assert done.rc == 0, done.stderr
    assert done.stdout.endswith(" in 1 stage to s.yaml: main 3 calls, 0.0 % not covered\n")
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]
    assert not (tmp_path / "elsewhere" / "s.yaml").exists()
    ended = LINEAR + "import os\nos.chdir('elsewhere')\nos._exit(0)\n"
    (tmp_path / "s.yaml").unlink()
    done = _child(tmp_path, ended)
    assert done.rc == 0, done.stderr
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]
    assert not (tmp_path / "elsewhere" / "s.yaml").exists()


@pytest.mark.parametrize(
    "closing",
    [
        "sys.stdout.close()",
        "sys.stderr.close()",
        "sys.__stderr__.close()",
        "os.close(1); os.close(2)",
        "sys.stdout.buffer.close(); sys.stderr.detach().close()",
        "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)",
    ],
)
def test_a_program_that_closes_its_standard_streams_is_still_recorded(
    tmp_path: Path, closing: str
) -> None:
    """What the program does to its standard streams ends with it: record writes the shapes
    file and prints its own lines on the streams it started with, exit 0."""
    done = _child(tmp_path, LINEAR + f"import os, sys\nprint('mine', flush=True)\n{closing}\n")
    assert done.rc == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("mine\nrecorded 3 shapes")
    assert done.stdout.endswith(" to s.yaml: main 3 calls, 0.0 % not covered\n")
    assert _linears(tmp_path / "s.yaml") == [(8, 4, 16, 1)]


def test_a_program_that_fails_after_closing_stderr_ends_with_5(tmp_path: Path) -> None:
    """sys.exit('text') with stderr closed: the text is lost as in python, record says why."""
    done = _child(tmp_path, LINEAR + "import sys\nsys.stderr.close()\nsys.exit('gone')\n")
    assert done.rc == 5
    assert done.stderr == (
        "ncu-classify: error: main.py exited with 1 (gone); the 3 shapes recorded before it"
        " were written to s.yaml\n"
    )


@pytest.mark.parametrize("then", ["", "import os\nos._exit(0)\n"])
def test_a_sigterm_the_program_swallows_still_interrupts(tmp_path: Path, then: str) -> None:
    """SIGTERM reaches the program as KeyboardInterrupt; one it catches and ignores (then
    ends, or calls os._exit) still ends record with 130 and nothing written."""
    program = LINEAR + (
        "import time\ntry:\n    print('ready', flush=True)\n    time.sleep(30)\n"
        "except BaseException:\n    pass\ny = torch.nn.functional.linear(x, w)\n" + then
    )
    (tmp_path / "main.py").write_text(program)
    argv = [*CLI, "record", "-o", "s.yaml", "--", "python", "main.py"]
    child = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 130
    assert stderr == b"ncu-classify: interrupted\n"
    assert not (tmp_path / "s.yaml").exists()


def test_non_daemon_threads_are_waited_for_and_counted(tmp_path: Path) -> None:
    """A non-daemon thread still running when the script ends is joined, as python joins it,
    while record still counts: its device ops are not covered ('run in another thread'); an
    executor never shut down does not hang it."""
    program = LINEAR + (
        "import threading, time, concurrent.futures\n"
        "def late():\n    time.sleep(0.5)\n"
        "    for _ in range(5):\n        torch.nn.functional.linear(x, w)\n"
        "threading.Thread(target=late).start()\n"
        "pool = concurrent.futures.ThreadPoolExecutor(1)\npool.submit(time.sleep, 0.2)\n"
    )
    done = _child(tmp_path, program)
    assert done.rc == 0, done.stderr
    assert done.stderr.startswith("ncu-classify: warning: 5 device-op calls in other threads")
    totals = load_shapes(tmp_path / "s.yaml").recorded.totals  # type: ignore[union-attr]
    assert [(u.stage, u.why, u.calls) for u in totals.uncovered] == [  # type: ignore[union-attr]
        ("main", THREAD_WHY, 5)
    ]


def test_counts_of_one_are_in_the_singular(tmp_path: Path) -> None:
    """The line, the warnings and the shapes file's header say `1 call`, `1 device op`."""
    program = (
        "import threading, torch\nx = torch.ones(2)\n"
        "threading.Thread(target=lambda: torch.relu(x)).start()\nraise SystemExit(2)\n"
    )
    done = _child(tmp_path, program)
    assert done.rc == 5
    assert done.stderr == (
        "ncu-classify: error: main.py exited with 2; the 1 shape recorded before it was"
        " written to s.yaml\n"
    )
    assert (
        (tmp_path / "s.yaml")
        .read_text()
        .splitlines()[0]
        .endswith(
            ": 1 distinct shape (0 typed, 1 device op), 1 call; 1 kind of device work not covered"
            " (recorded.totals.uncovered)."
        )
    )
    done = _child(tmp_path, program.replace("raise SystemExit(2)\n", ""))
    assert done.rc == 0
    assert done.stderr == (
        "ncu-classify: warning: 1 device-op call in other threads of the program was not"
        " seen (record follows the thread that runs the program); it is counted as not"
        " covered (recorded.totals.uncovered)\n"
    )
    assert done.stdout == (
        "recorded 1 shape (0 typed, 1 device op; 1 call) in 1 stage to s.yaml:"
        " main 2 calls, 50.0 % not covered\n"
    )


def test_a_program_that_removes_the_start_folder_gets_one_line(tmp_path: Path) -> None:
    """The folder record started in (where -o is) removed by the program: exit 7, one line
    naming -o, not 'cannot write to standard output or error'."""
    (tmp_path / "start").mkdir()
    program = (
        LINEAR + "import os, shutil\nhere = os.getcwd()\nos.chdir('..')\nshutil.rmtree(here)\n"
    )
    done = _child(tmp_path / "start", program)
    assert done.rc == 7
    assert done.stderr == (
        "ncu-classify: error: s.yaml: cannot write: the folder record started in was removed"
        " while the program ran\n"
    )


def test_arguments_and_paths_that_are_not_utf8_are_written_escaped(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in the program's arguments or script path (Python holds them
    as lone surrogates) reached the shapes file's `command` raw: after the whole program ran,
    the file could not be encoded (exit 1, an internal error, nothing written). They are now
    written as `\\xff` text, as the tool prints them; the program got its bytes as `python`
    gives them."""
    script = tmp_path / "m\udcffain.py"
    script.write_text(LINEAR + "import sys\nassert sys.argv[1:] == ['x\\udcffy', '--o=\\udcc3(']\n")
    out = tmp_path / "s.yaml"
    assert (
        run(["record", "-o", str(out), "--", "python", str(script), "x\udcffy", "--o=\udcc3("]) == 0
    )
    recorded = load_shapes(out).recorded
    assert recorded is not None
    assert recorded.command == f"python '{tmp_path}/m\\xffain.py' 'x\\xffy' '--o=\\xc3('"
    assert _linears(out) == [(8, 4, 16, 1)]
