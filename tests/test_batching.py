"""Memory-bounded chunks over the leading dimension (theorycheck.batching)."""
import numpy as np
import pytest
import torch

from theorycheck.batching import chunk_slices, map_chunks
from theorycheck.errors import DeclarationError


def test_chunk_slices_cover_the_range_in_order_within_budget():
    slices = chunk_slices(10, item_bytes=3, budget=7)
    assert [(s.start, s.stop) for s in slices] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    assert chunk_slices(0, 1.0) == []


def test_an_item_larger_than_the_budget_is_its_own_chunk():
    assert [(s.start, s.stop) for s in chunk_slices(3, item_bytes=100, budget=1)] == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("args", [(-1, 1.0), (2.5, 1.0), (3, 0.0), (3, float("nan"))])
def test_chunk_slices_rejects_bad_input(args):
    with pytest.raises(DeclarationError):
        chunk_slices(*args)


def test_map_chunks_equals_one_batch_for_tensors_arrays_and_dicts():
    rng = np.random.default_rng(0)
    X, W = torch.as_tensor(rng.standard_normal((7, 3, 4))), torch.as_tensor(rng.standard_normal((7, 4, 5)))

    def per_trial(x, w):
        Z = x @ w
        return {"max": Z.amax((1, 2)), "numpy": Z.sum(1).numpy()}

    whole = per_trial(X, W)
    chunked = map_chunks(per_trial, X, W, item_bytes=8 * 60, budget=8 * 130)    # chunks of 2 trials
    torch.testing.assert_close(chunked["max"], whole["max"], rtol=0, atol=0)
    np.testing.assert_array_equal(chunked["numpy"], whole["numpy"])


def test_map_chunks_rejects_mismatched_or_empty_arrays():
    with pytest.raises(DeclarationError, match="one leading length"):
        map_chunks(lambda a, b: a, np.zeros(3), np.zeros(4), item_bytes=8)
    with pytest.raises(DeclarationError, match="at least one array"):
        map_chunks(lambda: 0, item_bytes=8)
    with pytest.raises(DeclarationError, match="empty"):
        map_chunks(lambda a: a, np.zeros(0), item_bytes=8)


def test_balanced_slices_differ_by_at_most_one_item():
    slices = chunk_slices(10, item_bytes=3, budget=12, balanced=True)   # 4 items a slice at most
    assert [(s.start, s.stop) for s in slices] == [(0, 3), (3, 6), (6, 10)]
    assert [(s.start, s.stop) for s in chunk_slices(9, 1.0, budget=100, balanced=True)] == [(0, 9)]
    assert chunk_slices(0, 1.0, balanced=True) == []
