"""Base class of generated messages: equality, repr, whole-buffer encode/decode helpers."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, NamedTuple

from wire._primitives import DecodeError, Reader, Writer

_UNSET: Any = object()


class FieldSpec(NamedTuple):
    """Schema of one field, kept on each generated class (used by tests and tooling)."""

    name: str
    type: str
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tag: int | None
    tagged: tuple[int, int] | None
    struct: Any


class Message:
    """A generated message or struct. Subclasses define ``__slots__``, ``FIELDS`` and the codecs."""

    __slots__: tuple[str, ...] = ()
    NAME: ClassVar[str] = ""
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = ()
    # set by requests and responses (not by their structs)
    API_KEY: ClassVar[int]
    LOWEST_VERSION: ClassVar[int]
    HIGHEST_VERSION: ClassVar[int]
    FIRST_FLEXIBLE_VERSION: ClassVar[int | None]
    # the values of __slots__ in one C call (equality runs for every tagged struct a response encodes)
    _slot_values: ClassVar[Callable[..., Any]] = staticmethod(lambda _: ())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots = cls.__slots__
        cls._slot_values = staticmethod(attrgetter(*slots) if slots else lambda _: ())

    def encode_into(self, w: Writer, version: int) -> None:  # pragma: no cover - generated
        raise NotImplementedError

    @classmethod
    def decode_from(cls, r: Reader, version: int) -> Message:  # pragma: no cover - generated
        raise NotImplementedError

    def encode(self, version: int) -> bytes:
        """Encode to bytes (messages without file-backed records)."""
        w = Writer()
        self.encode_into(w, version)
        return w.getvalue()

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Message:
        """Decode a whole buffer; trailing bytes are an error."""
        r = Reader(data)
        msg = cls.decode_from(r, version)
        if r.pos != r.end:
            raise DecodeError(f"{r.end - r.pos} trailing bytes after {cls.NAME} v{version}")
        return msg

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        values = self._slot_values
        return bool(values(self) == values(other))

    def __repr__(self) -> str:
        inner = ", ".join(f"{s}={getattr(self, s)!r}" for s in self.__slots__)
        return f"{type(self).__name__}({inner})"
