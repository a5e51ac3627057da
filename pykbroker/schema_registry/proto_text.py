""".proto source as a ``FileDescriptorProto``: what Confluent's Java serializers register (the Python ones register
the serialized descriptor), so the broker can check and decode it without protoc.

The subset schemas use: ``syntax``/``edition``, ``package``, ``import`` (the file's dependencies, resolved by
the registry's references), ``option`` (skipped), messages with nested messages and enums, fields with
``repeated``/``optional``/``required`` labels, ``map<K, V>`` (an entry message, as protoc makes it), ``oneof``,
``reserved`` and ``extensions`` (skipped), enums, and ``service``/``extend`` blocks (skipped). Type names are
left for the descriptor pool to resolve (relative names, as protoc's scoping rules). ``ProtoSyntaxError`` says
where the text stops making sense.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ProtoSyntaxError", "parse_proto"]

_TOKEN = re.compile(r'''\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[A-Za-z_][\w.]*|\.[A-Za-z_][\w.]*|
                    -?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|[{}\[\]()<>;=,:]''', re.S | re.X)
_SCALARS = {"double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7, "bool": 8,
            "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18}
_LABELS = {"optional": 1, "required": 2, "repeated": 3}


class ProtoSyntaxError(ValueError):
    """The text is not .proto source this parser reads."""


def _tokens(text: str) -> list[str]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ProtoSyntaxError(f"unexpected {text[pos:pos + 20]!r} at character {pos}")
        token = m.group()
        pos = m.end()
        if not token.isspace() and not token.startswith(("//", "/*")):
            out.append(token)
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token != expected):
            raise ProtoSyntaxError(f"expected {expected or 'more'} at token {self.pos}, found {token or 'the end'!r}")
        self.pos += 1
        return token

    def number(self) -> int:
        token = self.take()
        try:
            return int(token, 0)
        except ValueError:
            raise ProtoSyntaxError(f"expected a number at token {self.pos - 1}, found {token!r}") from None

    def skip_statement(self) -> None:
        """Up to and including the next ';' at this level (an option, reserved, extensions)."""
        depth = 0
        while True:
            token = self.take()
            if token in "{[(":
                depth += 1
            elif token in "}])":
                depth -= 1
            elif token == ";" and depth <= 0:
                return

    def skip_block(self) -> None:
        """A name and a { ... } block (service, extend), or a statement."""
        while self.peek() not in ("{", ";"):
            self.take()
        if self.take() == ";":
            return
        depth = 1
        while depth:
            token = self.take()
            depth += token == "{"
            depth -= token == "}"


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def parse_proto(text: str) -> Any:
    """The ``FileDescriptorProto`` of ``text`` (its name left empty: the caller names the file)."""
    from google.protobuf import descriptor_pb2

    p = _Parser(text)
    f = descriptor_pb2.FileDescriptorProto()
    f.syntax = "proto2"
    while p.peek():
        token = p.take()
        if token == "syntax":
            p.take("=")
            f.syntax = p.take().strip("\"'")
            p.take(";")
        elif token == "edition":
            p.skip_statement()
            f.syntax = "editions"
        elif token == "package":
            f.package = p.take()
            p.take(";")
        elif token == "import":
            path = p.take()
            if path in ("public", "weak"):
                path = p.take()
            f.dependency.append(path.strip("\"'"))
            p.take(";")
        elif token == "option":
            p.skip_statement()
        elif token == "message":
            _message(p, f.message_type.add(), f.syntax)
        elif token == "enum":
            _enum(p, f.enum_type.add())
        elif token in ("service", "extend"):
            p.skip_block()
        elif token == ";":
            continue
        else:
            raise ProtoSyntaxError(f"unexpected {token!r} at the top of the file")
    if f.syntax == "proto2" and "syntax" not in text:
        f.ClearField("syntax")
    if not f.message_type and not f.enum_type:
        raise ProtoSyntaxError("no message or enum")
    return f


def _enum(p: _Parser, e: Any) -> None:
    e.name = p.take()
    p.take("{")
    while p.peek() != "}":
        token = p.take()
        if token in ("option", "reserved"):
            p.skip_statement()
        elif token == ";":
            continue
        else:
            p.take("=")
            e.value.add(name=token, number=p.number())  # options in [] are skipped below
            if p.peek() == "[":
                p.skip_statement()
            else:
                p.take(";")
    p.take("}")
    if not e.value:
        raise ProtoSyntaxError(f"enum {e.name} has no values")


def _message(p: _Parser, m: Any, syntax: str) -> None:
    m.name = p.take()
    p.take("{")
    _body(p, m, syntax, None)
    p.take("}")
    # proto3 optional fields' synthetic oneofs come after the declared ones, as protoc orders them.
    synthetic = {f.oneof_index for f in m.field if f.proto3_optional}
    order = [i for i in range(len(m.oneof_decl)) if i not in synthetic] + sorted(synthetic)
    if order != list(range(len(m.oneof_decl))):
        names = [m.oneof_decl[i].name for i in order]
        moved = {old: new for new, old in enumerate(order)}
        del m.oneof_decl[:]
        for name in names:
            m.oneof_decl.add(name=name)
        for f in m.field:
            if f.HasField("oneof_index"):
                f.oneof_index = moved[f.oneof_index]


def _body(p: _Parser, m: Any, syntax: str, oneof: int | None) -> None:
    while p.peek() != "}":
        token = p.peek()
        if token in ("option", "reserved", "extensions"):
            p.take()
            p.skip_statement()
        elif token == ";":
            p.take()
        elif token == "message" and oneof is None:
            p.take()
            _message(p, m.nested_type.add(), syntax)
        elif token == "enum" and oneof is None:
            p.take()
            _enum(p, m.enum_type.add())
        elif token == "extend":
            p.take()
            p.skip_block()
        elif token == "oneof" and oneof is None:
            p.take()
            index = len(m.oneof_decl)
            m.oneof_decl.add(name=p.take())
            p.take("{")
            _body(p, m, syntax, index)
            p.take("}")
        else:
            _field(p, m, syntax, oneof)


def _field(p: _Parser, m: Any, syntax: str, oneof: int | None) -> None:
    from google.protobuf import descriptor_pb2

    field = m.field.add()
    label = _LABELS.get(p.peek())
    if label is not None:
        p.take()
    if p.peek() == "map":
        p.take()
        p.take("<")
        key = p.take()
        p.take(",")
        value = p.take()
        p.take(">")
        name = p.take()
        entry = m.nested_type.add(name=_camel(name) + "Entry")
        entry.options.map_entry = True
        for number, (field_name, type_name) in enumerate((("key", key), ("value", value)), 1):
            _typed(entry.field.add(name=field_name, number=number, label=1), type_name)
        field.name, field.label, field.type_name = name, 3, entry.name
        field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
    else:
        type_name = p.take()
        if type_name == "group":
            raise ProtoSyntaxError("proto2 groups are not read; use a message field")
        field.name = p.take()
        field.label = label or 1
        _typed(field, type_name)
    p.take("=")
    field.number = p.number()
    if p.peek() == "[":
        p.skip_statement()
    else:
        p.take(";")
    if oneof is not None:
        field.oneof_index = oneof
    elif label == 1 and syntax == "proto3":
        field.proto3_optional = True
        field.oneof_index = len(m.oneof_decl)
        m.oneof_decl.add(name=f"_{field.name}")


def _typed(field: Any, type_name: str) -> None:
    if type_name in _SCALARS:
        field.type = _SCALARS[type_name]
    else:
        field.type_name = type_name  # a message or an enum: the pool resolves it
