"""verifiers.utils.gc_utils.batch_gc: the collector settings during a batch of rollouts, and
that they are restored after it (nested, on error, with a disabled collector)."""

from __future__ import annotations

import gc

import pytest

from verifiers.utils.gc_utils import YOUNG_THRESHOLD, batch_gc


@pytest.fixture(autouse=True)
def default_collector():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.unfreeze()
    gc.set_threshold(*before)
    gc.enable()


def test_a_batch_freezes_raises_the_threshold_and_restores_both() -> None:
    frozen_before = gc.get_freeze_count()
    with batch_gc():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_freeze_count() > frozen_before
        with batch_gc():  # nested: the same setting, not restored by the inner exit
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_failing_batch_restores_the_collector() -> None:
    with pytest.raises(RuntimeError, match="boom"), batch_gc():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_during_a_batch_is_collected_after_it() -> None:
    class Node:
        pass

    import weakref

    with batch_gc():
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        ref = weakref.ref(a)
        del a, b
    gc.collect()
    assert ref() is None


def test_a_disabled_collector_is_left_alone_and_a_higher_threshold_kept() -> None:
    gc.disable()
    with batch_gc():
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
    gc.enable()
    gc.set_threshold(50_000, 10, 10)
    with batch_gc():
        assert gc.get_threshold() == (50_000, 10, 10)
    assert gc.get_threshold() == (50_000, 10, 10)
