"""The garbage collector paused during an import (``evalcore.services.gc_pause``): off inside, cyclic garbage
still collected on a timer, everything put back by the last import to end, left alone when turned off."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from evalcore.services.gc_pause import collector_paused
from evalcore.services.runs import run_import


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_inside_the_collector_is_off_and_the_process_objects_frozen_and_after_it_all_is_put_back():
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with collector_paused():
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_cyclic_garbage_made_inside_is_collected_on_the_timer(settings):
    settings.IMPORT_GC_SECONDS = 1
    with collector_paused():
        node = Node()
        gone = weakref.ref(node)
        del node
        assert gone() is not None  # automatic collection is off
        deadline = time.monotonic() + 10
        while gone() is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone() is None, "the timer's collection frees a cycle within seconds"


def test_an_error_inside_still_puts_everything_back():
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the import failed")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_two_imports_at_once_the_first_to_end_leaves_it_paused_for_the_other():
    entered, first_done, second_may_end = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def second() -> None:
        with collector_paused():
            entered.set()
            first_done.wait(5)
            seen["after the first ended"] = gc.isenabled()
            second_may_end.wait(5)

    with collector_paused():
        thread = threading.Thread(target=second)
        thread.start()
        assert entered.wait(5)
    first_done.set()
    time.sleep(0.1)
    assert not gc.isenabled(), "the other import still runs"
    second_may_end.set()
    thread.join(5)
    assert seen["after the first ended"] is False
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_zero_seconds_leaves_the_collector_as_it_is(settings):
    settings.IMPORT_GC_SECONDS = 0
    with collector_paused():
        assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_collector_the_caller_turned_off_is_left_off_and_nothing_is_frozen():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled() and gc.get_freeze_count() == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.django_db
def test_a_run_import_runs_with_the_collector_paused_and_puts_it_back(version, rows_file, monkeypatch):
    import evalcore.services.run_store as run_store

    states = []
    store = run_store.store_rows

    def recording(*args, **kwargs):
        states.append(gc.isenabled())
        return store(*args, **kwargs)

    monkeypatch.setattr("evalcore.services.runs.store_rows", recording)
    assert run_import(path=rows_file, evalset="support", name="base", k=3).created
    assert states == [False]
    assert gc.isenabled() and gc.get_freeze_count() == 0
