"""NVIDIA's metrics library loads on a thread beside the plan (preload) and never costs the
readers their fork: the thread is not counted as one that makes fork unsafe, it has left the
process before any fork, and a large report is still read in windows by children. Each check
runs in a fresh interpreter, where the library is not loaded yet and torch is absent."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from helpers import ROOT

WAN = ROOT / "fixtures" / "record_h200_wan14b"


def _run(script: str) -> dict[str, object]:
    """The JSON object the script prints as its last line, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_library_loads_on_a_thread_that_is_gone_before_any_fork() -> None:
    seen = _run(
        """
        import json
        from pathlib import Path
        from ncu_classify.read import parallel, preload

        maps = lambda: "libnvperf_host.so" in Path("/proc/self/maps").read_text()
        before = maps()
        preload.start_loading()
        task = preload.loading_task()
        running = task is not None and Path(f"/proc/self/task/{task}").exists()
        threaded = parallel._threaded()
        preload.finish_loading()
        print(json.dumps({
            "before": before, "running": running, "threaded": threaded,
            "after": preload.loading_task(), "tasks": len(list(Path("/proc/self/task").iterdir())),
            "loaded": maps(),
        }))
        """
    )
    assert seen == {
        "before": False,  # ncu_report loads it at the first kernel read, not at import
        "running": True,  # the set-up takes 75-200 ms: the thread still runs when checked
        "threaded": False,  # and does not stop the readers from forking
        "after": None,
        "tasks": 1,  # its OS thread has left too
        "loaded": True,
    }


def test_a_large_report_is_still_read_in_windows_by_children() -> None:
    seen = _run(
        f"""
        import json
        from pathlib import Path
        from ncu_classify.read import parallel
        from ncu_classify.verdicts.classify import classify
        from ncu_classify.verdicts.rules import load_rules

        children = []
        forked = parallel._read_in_children
        def counted(units, batches, workers, progress):
            children.append(len(units))
            return forked(units, batches, workers, progress)
        parallel._read_in_children = counted
        cards = classify([Path({str(WAN)!r})], load_rules(), jobs=3)  # starts the preload
        kernels = sum(len(card.kernels) for card in cards.cards)
        print(json.dumps({{"children": children, "kernels": kernels, "cards": len(cards.cards)}}))
        """
    )
    assert seen == {"children": [3], "kernels": 392, "cards": 253}


def test_one_job_reads_while_the_library_loads_and_forks_only_after_it() -> None:
    seen = _run(
        f"""
        import json
        from pathlib import Path
        from ncu_classify.read import parallel
        from ncu_classify.verdicts.classify import classify
        from ncu_classify.verdicts.rules import load_rules

        order = []
        for name in ("finish_loading", "_read_here", "_read_in_children"):
            def step(*args, _name=name, _real=getattr(parallel, name)):
                order.append(_name)
                return _real(*args)
            setattr(parallel, name, step)
        kernels = {{}}
        for jobs in (1, 3):
            order.append(f"jobs {{jobs}}")
            cards = classify([Path({str(WAN)!r})], load_rules(), jobs=jobs)
            kernels[jobs] = sum(len(card.kernels) for card in cards.cards)
        print(json.dumps({{"order": order, "kernels": kernels}}))
        """
    )
    assert seen == {
        # one job: the framing check, the lean copy and the first kernel overlap the load
        # (ncu_report's own dlopen waits for it); several: the thread is gone before a fork
        "order": ["jobs 1", "_read_here", "jobs 3", "finish_loading", "_read_in_children"],
        "kernels": {"1": 392, "3": 392},
    }
