""".proto source as Confluent's Java serializers register it: parsed into a descriptor the broker checks and
decodes with (no protoc), references to other files and well-known types included."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pool, message_factory, timestamp_pb2

from pykbroker.schema_registry.proto_text import ProtoSyntaxError, parse_proto
from pykbroker.schema_registry.schemas import InvalidSchemaError, compatibility_errors, parse_schema
from pykbroker.schema_registry.wire_format import RegisteredSchema, decode

COMMON = 'syntax = "proto3"; package shop.v1; message Money { string currency = 1; int64 units = 2; }'
ORDER = """
syntax = "proto3";
package shop.v1;
import "common.proto";
import "google/protobuf/timestamp.proto";
option java_multiple_files = true;
message Ping { bool ok = 1; }
/* the second message: index 1 */
message Order {
  optional string note = 9;
  int64 id = 1;
  repeated Line lines = 2 [packed = true];
  map<string, int32> counts = 3;
  Status status = 4;
  oneof payment { string card = 5; Money cash = 6; }
  google.protobuf.Timestamp at = 7;
  message Line { string sku = 1; double price = 2; }
  enum Status { UNKNOWN = 0; PAID = 1; }
  reserved 8;
}
"""


def order_class():
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for name, text in (("common.proto", COMMON), ("order.proto", ORDER)):
        proto = parse_proto(text)
        proto.name = name
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.v1.Order"))


def test_a_java_registered_schema_decodes_with_its_reference():
    Order = order_class()
    order = Order(id=7, note="hi", status=1)
    order.lines.add(sku="a", price=1.5)
    order.counts["x"] = 3
    order.cash.currency = "EUR"
    order.at.seconds = 10
    # Confluent's framing: magic 0, schema id 2, message indexes [1] (zigzag: count 1, index 1)
    value = b"\x00\x00\x00\x00\x02" + bytes([2, 2]) + order.SerializeToString()
    schema = RegisteredSchema(2, "PROTOBUF", ORDER, {"common.proto": RegisteredSchema(1, "PROTOBUF", COMMON)})
    decoded = decode(value, {2: schema}.get)
    assert decoded.message_indexes == [1]
    assert decoded.value == {"note": "hi", "id": 7, "lines": [{"sku": "a", "price": 1.5}], "counts": {"x": 3},
                             "status": "PAID", "card": "", "cash": {"currency": "EUR", "units": 0},
                             "at": {"seconds": 10, "nanos": 0}}


def test_text_schemas_are_checked_like_descriptors():
    common = parse_schema("PROTOBUF", COMMON, [], {})
    changed = parse_schema("PROTOBUF", COMMON.replace("int64 units", "string units"), [], {})
    assert compatibility_errors("BACKWARD", changed, [common]) == ["BACKWARD: Money.units (field 2) changed type"]
    with pytest.raises(InvalidSchemaError):
        parse_schema("PROTOBUF", "message Broken { int32 x = ; }", [], {})
    with pytest.raises(ProtoSyntaxError):
        parse_proto('syntax = "proto2"; message G { optional group X = 1 { } }')


def test_a_text_schema_is_served_as_a_serialized_descriptor_on_request():
    import base64

    from google.protobuf import descriptor_pb2

    from pykbroker.console.http import Request
    from pykbroker.schema_registry.api import RegistryApi

    answer = RegistryApi._formatted(Request("GET", "/schemas/ids/1", {"format": "serialized"}, {}),
                                    {"schemaType": "PROTOBUF", "schema": COMMON})
    proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(answer["schema"]))
    assert [m.name for m in proto.message_type] == ["Money"]
