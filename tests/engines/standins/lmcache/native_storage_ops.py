"""Stand-in of lmcache.native_storage_ops.Bitmap (a C++ extension in LMCache)."""


class Bitmap:
    def __init__(self, size: int) -> None:
        self._bits = [False] * size

    def set(self, index: int) -> None:
        self._bits[index] = True

    def test(self, index: int) -> bool:
        return self._bits[index]

    def __len__(self) -> int:
        return len(self._bits)

    def to_list(self) -> list[bool]:
        return list(self._bits)
