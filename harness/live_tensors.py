"""A per-rank memory budget on the bytes of tensors a rank holds live, the same on every machine.

A GPU runs out of memory when its caching allocator cannot find room for the next tensor. A CPU
has no such wall, and a limit on the process (``RLIMIT_DATA``, :mod:`harness.memory`) also counts
what malloc, oneDNN and the runtime keep, which differs from one CPU to the next: the headroom
levels of ``fsdp-ads-v2`` bisected on one CPU never bind on another. :class:`LiveTensorBytes`
counts what a GPU allocator would: every tensor storage an operator creates while it is active
(through a ``TorchDispatchMode``; a tensor subclass such as FSDP2's ``DTensor`` counts its inner
tensors), minus storages freed, plus and minus ``UntypedStorage.resize_`` (how FSDP2 frees and
re-allocates unsharded parameters). Past ``limit_bytes`` it raises :class:`TensorBudgetExceeded`
at the allocation that crossed it, an out-of-memory error (:func:`harness.memory.is_oom`). The
count depends on the configuration alone, so a job's peak and its status are the same on every
repeat and every CPU.

>>> import torch
>>> with LiveTensorBytes() as live:
...     a = torch.ones(1024)          # 4 KiB
...     b = a.view(32, 32)            # a view: no new storage
...     c = torch.ones(256)           # 1 KiB
...     del c
>>> live.peak, live.live
(5120, 4096)
>>> with LiveTensorBytes(limit_bytes=4096):
...     x = torch.ones(2048)
Traceback (most recent call last):
...
harness.live_tensors.TensorBudgetExceeded: out of memory: tensors live on this rank would reach 8.0 KiB, over the 4.0 KiB budget (tensor_budget_mib)
"""

from __future__ import annotations

import weakref
from typing import Callable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass
from torch.utils._pytree import tree_leaves

from harness.memory import MIB


class TensorBudgetExceeded(MemoryError):
    """Raised at the allocation that takes a rank's live tensors past its budget."""


def _size(n: int) -> str:
    return f"{n / MIB:.2f} MiB" if n >= MIB else f"{n / 1024:.1f} KiB"


class LiveTensorBytes(TorchDispatchMode):
    """Counts the bytes of the tensor storages created while it is active and still alive.

    ``live``: bytes now; ``peak``: the most at any point; ``limit_bytes``: raise past it (None: never).
    """

    def __init__(self, limit_bytes: Optional[int] = None):
        super().__init__()
        self.limit_bytes = limit_bytes
        self.live = 0
        self.peak = 0
        self._bytes: dict[int, int] = {}  # id(storage) -> the bytes it holds now
        self._refs: dict[int, weakref.ref] = {}
        self._resize: Optional[Callable] = None

    def _change(self, delta: int) -> None:
        self.live += delta
        self.peak = max(self.peak, self.live)
        if self.limit_bytes is not None and delta > 0 and self.live > self.limit_bytes:
            raise TensorBudgetExceeded(f"out of memory: tensors live on this rank would reach {_size(self.live)}, "
                                       f"over the {_size(self.limit_bytes)} budget (tensor_budget_mib)")

    def _known(self, storage: torch.UntypedStorage) -> bool:
        ref = self._refs.get(id(storage))
        return ref is not None and ref() is storage

    def _freed(self, key: int) -> None:
        self.live -= self._bytes.pop(key, 0)
        self._refs.pop(key, None)

    def _storages(self, tree) -> list[torch.UntypedStorage]:
        """The storages behind the tensors of ``tree`` (a subclass such as DTensor: its inner tensors')."""
        out = []
        for t in tree_leaves(tree):
            if not isinstance(t, torch.Tensor):
                continue
            if is_traceable_wrapper_subclass(t):
                out += self._storages([getattr(t, attr) for attr in t.__tensor_flatten__()[0]])
            elif t.device.type != "meta":
                out.append(t.untyped_storage())
        return out

    def _track(self, storage: torch.UntypedStorage) -> None:
        if self._known(storage):
            return
        key = id(storage)
        self._refs[key] = weakref.ref(storage)
        self._bytes[key] = storage.nbytes()
        weakref.finalize(storage, self._freed, key)
        self._change(storage.nbytes())

    def __enter__(self) -> "LiveTensorBytes":
        original = self._resize = torch.UntypedStorage.resize_
        tracker = self

        def resize_(storage, size):
            out = original(storage, size)
            if tracker._known(storage):
                key, now = id(storage), storage.nbytes()
                delta, tracker._bytes[key] = now - tracker._bytes[key], now
                tracker._change(delta)
            return out

        torch.UntypedStorage.resize_ = resize_
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        torch.UntypedStorage.resize_ = self._resize
        super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        inputs = {id(s) for s in self._storages((args, kwargs))}  # in place, out= and views: nothing new
        out = func(*args, **(kwargs or {}))
        for storage in self._storages(out):
            if id(storage) not in inputs:
                self._track(storage)
        return out
