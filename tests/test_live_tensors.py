"""The live-tensor memory budget (harness.live_tensors): what it counts, and the out-of-memory it raises."""

import pytest
import torch
from torch.testing._internal.two_tensor import TwoTensor

from harness import memory
from harness.live_tensors import MIB, LiveTensorBytes, TensorBudgetExceeded


def test_new_storages_count_views_do_not_and_freed_ones_leave():
    with LiveTensorBytes() as live:
        a = torch.zeros(256, 1024)  # 1 MiB
        view = a[:128]
        b = a * 2  # another MiB
        assert live.live == 2 * MIB
        del b
        assert live.live == MIB and live.peak == 2 * MIB
    assert view.untyped_storage().nbytes() == MIB


def test_tensors_from_before_are_not_counted():
    before = torch.ones(1024)
    with LiveTensorBytes() as live:
        before.add_(1)  # in place: no new storage
    assert live.peak == 0


def test_storage_resizes_count_as_fsdp2_frees_and_reallocates_its_unsharded_parameters():
    with LiveTensorBytes() as live:
        t = torch.empty(1024)  # 4 KiB
        t.untyped_storage().resize_(0)
        assert live.live == 0
        t.untyped_storage().resize_(8192)
        assert live.live == 8192 and live.peak == 8192
    assert torch.UntypedStorage.resize_ is not None
    t.untyped_storage().resize_(0)  # after exit resizes are not counted (and do not fail)
    assert live.live == 8192


def test_a_tensor_subclass_counts_the_tensors_it_holds():
    with LiveTensorBytes() as live:
        pair = TwoTensor(torch.zeros(1024), torch.zeros(1024))
        doubled = pair * 2
    assert isinstance(doubled, TwoTensor) and live.live >= 2 * 4096


def test_past_the_budget_the_allocation_fails_as_an_out_of_memory_and_the_mode_is_undone():
    original = torch.UntypedStorage.resize_
    with pytest.raises(TensorBudgetExceeded, match=r"would reach 1\.00 MiB, over the 512\.0 KiB budget") as err:
        with LiveTensorBytes(limit_bytes=512 * 1024):
            torch.zeros(64, 1024)  # 256 KiB: fits
            torch.zeros(256, 1024)  # 1 MiB: past the budget
    assert memory.is_oom(err.value)
    assert torch.UntypedStorage.resize_ is original
    torch.zeros(1024, 1024)  # no budget any more
