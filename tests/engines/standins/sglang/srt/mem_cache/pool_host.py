"""Stand-in of the host KV pools (sglang/srt/mem_cache/memory_pool_host.py, SGLang
001067fffe33): the layouts, the page buffers get_page_buffer_meta reports, and the flat data
pages of the generic path."""

from __future__ import annotations

import torch


class HostKVCache:
    """size tokens of KV for layer_num layers, page_size tokens a page."""

    def __init__(self, size: int, page_size: int, layer_num: int, layout: str,
                 dtype: torch.dtype) -> None:
        self.size, self.page_size, self.layer_num = size, page_size, layer_num
        self.layout, self.dtype = layout, dtype
        self.free = list(range(0, size, page_size))

    def alloc(self, tokens: int) -> torch.Tensor:
        pages = [self.free.pop(0) for _ in range(tokens // self.page_size)]
        return torch.tensor([p + i for p in pages for i in range(self.page_size)], dtype=torch.long)

    def release(self, indices: torch.Tensor) -> None:
        self.free.extend(int(i) for i in indices[::self.page_size])


class MHATokenToKVPoolHost(HostKVCache):
    def __init__(self, size, page_size, layer_num, head_num, head_dim, layout="page_first",
                 dtype=torch.bfloat16):
        super().__init__(size, page_size, layer_num, layout, dtype)
        self.head_num, self.head_dim = head_num, head_dim
        if layout == "layer_first":
            shape = (2, layer_num, size, head_num, head_dim)
        elif layout == "page_first":
            shape = (2, size, layer_num, head_num, head_dim)
        else:  # page_first_direct
            shape = (2, size // page_size, layer_num, page_size, head_num, head_dim)
        self.kv_buffer = torch.zeros(shape, dtype=dtype)

    def token_view(self, kv: int, layer: int) -> torch.Tensor:
        """[size, heads, dim] of one layer's K (0) or V (1), whatever the layout."""
        if self.layout == "layer_first":
            return self.kv_buffer[kv, layer]
        if self.layout == "page_first":
            return self.kv_buffer[kv, :, layer]
        return self.kv_buffer[kv, :, layer].reshape(self.size, self.head_num, self.head_dim)

    def get_page_buffer_meta(self, indices: torch.Tensor):
        ptrs, sizes = [], []
        for first in indices.tolist()[::self.page_size]:
            page = first // self.page_size
            if self.layout == "layer_first":
                for layer in range(self.layer_num):
                    for kv in (0, 1):
                        t = self.kv_buffer[kv, layer, first:first + self.page_size]
                        ptrs.append(t.data_ptr())
                        sizes.append(t.numel() * t.element_size())
            elif self.layout == "page_first":
                for kv in (0, 1):
                    t = self.kv_buffer[kv, first:first + self.page_size]
                    ptrs.append(t.data_ptr())
                    sizes.append(t.numel() * t.element_size())
            else:
                for kv in (0, 1):
                    t = self.kv_buffer[kv, page]
                    ptrs.append(t.data_ptr())
                    sizes.append(t.numel() * t.element_size())
        return ptrs, sizes

    def get_data_page(self, index, flat=True):
        first = int(index)
        parts = [self.token_view(kv, layer)[first:first + self.page_size].flatten()
                 for layer in range(self.layer_num) for kv in (0, 1)]
        return torch.cat(parts)

    def get_dummy_flat_data_page(self):
        return torch.zeros(2 * self.layer_num * self.page_size * self.head_num * self.head_dim,
                           dtype=self.dtype)

    def set_from_flat_data_page(self, index, data_page):
        first = int(index)
        n = self.page_size * self.head_num * self.head_dim
        parts = data_page.view(self.layer_num, 2, n)
        for layer in range(self.layer_num):
            for kv in (0, 1):
                self.token_view(kv, layer)[first:first + self.page_size] = parts[layer, kv].view(
                    self.page_size, self.head_num, self.head_dim)


class MLATokenToKVPoolHost(HostKVCache):
    """One latent vector a token and layer, the same on every rank."""

    def __init__(self, size, page_size, layer_num, latent_dim, layout="page_first",
                 dtype=torch.bfloat16):
        super().__init__(size, page_size, layer_num, layout, dtype)
        self.latent_dim = latent_dim
        self.kv_buffer = torch.zeros((size, layer_num, 1, latent_dim), dtype=dtype)

    def token_view(self, layer: int) -> torch.Tensor:
        return self.kv_buffer[:, layer, 0]

    def get_page_buffer_meta(self, indices: torch.Tensor):
        ptrs, sizes = [], []
        for first in indices.tolist()[::self.page_size]:
            t = self.kv_buffer[first:first + self.page_size]
            ptrs.append(t.data_ptr())
            sizes.append(t.numel() * t.element_size())
        return ptrs, sizes

    def get_data_page(self, index, flat=True):
        first = int(index)
        return self.kv_buffer[first:first + self.page_size].flatten().clone()

    def get_dummy_flat_data_page(self):
        return torch.zeros(self.page_size * self.layer_num * self.latent_dim, dtype=self.dtype)

    def set_from_flat_data_page(self, index, data_page):
        first = int(index)
        self.kv_buffer[first:first + self.page_size] = data_page.view(
            self.page_size, self.layer_num, 1, self.latent_dim)
