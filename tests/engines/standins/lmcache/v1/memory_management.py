"""Stand-in of lmcache.v1.memory_management: the memory objects L1 hands an L2 adapter."""

from __future__ import annotations

import abc

import torch


class MemoryObj(abc.ABC):
    @abc.abstractmethod
    def get_size(self) -> int: ...

    @property
    @abc.abstractmethod
    def data_ptr(self) -> int: ...

    @property
    @abc.abstractmethod
    def tensor(self) -> torch.Tensor | None: ...


class TensorMemoryObj(MemoryObj):
    def __init__(self, raw_data: torch.Tensor, metadata=None, parent_allocator=None) -> None:
        self.raw_tensor = raw_data
        self.metadata = metadata

    def get_size(self) -> int:
        return self.raw_tensor.numel() * self.raw_tensor.element_size()

    @property
    def data_ptr(self) -> int:
        return self.raw_tensor.data_ptr()

    @property
    def tensor(self) -> torch.Tensor:
        return self.raw_tensor
