#!/usr/bin/env python3
"""Writes task events to a Kafka topic with Confluent's own Protobuf serializer.

The records are what a Python service using confluent-kafka writes: values in the Confluent
wire format (magic byte, schema id, message indexes), the schema registered by
ProtobufSerializer itself, as a base64 serialized FileDescriptorProto, under the topic's
subject. The .proto has two messages and the event is the second (message index [1]); with
--reference the event's data is a message of another file, which the serializer registers as
a schema reference (under the subject named like the file).

The message classes are built from a FileDescriptorProto with google.protobuf's descriptor
pool and message factory: no protoc, no generated code.

  produce_protobuf.py --brokers B --registry URL --topic T --name N --count 83 [--reference]

The registry's basic-auth user and password come from SCHEMA_REGISTRY_USER and
SCHEMA_REGISTRY_PASSWORD (never the command line). Prints the schema id and how many records
were delivered.
"""

import argparse
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401 (puts google/protobuf/timestamp.proto in the pool)

from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

import interop

F = descriptor_pb2.FieldDescriptorProto


def field(msg, name, number, ftype, type_name=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=F.LABEL_OPTIONAL)
    if type_name:
        f.type_name = type_name


def build(name, reference):
    """Adds the files to the default pool and returns the event's message class."""
    package = "fieldwork.interop." + name.replace("-", "_").replace(".", "_")
    pool = descriptor_pool.Default()
    data_type = "." + package + ".TaskData"
    events = descriptor_pb2.FileDescriptorProto(name=f"fieldwork/interop/{name}/tasks.proto", package=package, syntax="proto3")
    events.dependency.append("google/protobuf/timestamp.proto")
    if reference:
        common = descriptor_pb2.FileDescriptorProto(name=f"fieldwork/interop/{name}/common.proto",
                                                    package=package + ".common", syntax="proto3")
        data = common.message_type.add(name="TaskData")
        field(data, "title", 1, F.TYPE_STRING)
        field(data, "priority", 2, F.TYPE_UINT64)
        pool.AddSerializedFile(common.SerializeToString())
        events.dependency.append(common.name)
        data_type = "." + package + ".common.TaskData"
        # Message [0]: another message before the event.
        source = events.message_type.add(name="Source")
        field(source, "service", 1, F.TYPE_STRING)
    else:
        data = events.message_type.add(name="TaskData")  # message [0]
        field(data, "title", 1, F.TYPE_STRING)
        field(data, "priority", 2, F.TYPE_UINT64)
    event = events.message_type.add(name="TaskEvent")  # message [1]
    field(event, "event_id", 1, F.TYPE_STRING)
    field(event, "aggregate_type", 2, F.TYPE_STRING)
    field(event, "aggregate_id", 3, F.TYPE_STRING)
    field(event, "aggregate_version", 4, F.TYPE_INT64)
    field(event, "type", 5, F.TYPE_STRING)
    field(event, "occurred_at", 6, F.TYPE_MESSAGE, ".google.protobuf.Timestamp")
    field(event, "data", 7, F.TYPE_MESSAGE, data_type)
    pool.AddSerializedFile(events.SerializeToString())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(package + ".TaskEvent"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--name", required=True, help="unique name of the files and package")
    ap.add_argument("--count", type=int, default=83)
    ap.add_argument("--aggregates", type=int, default=5)
    ap.add_argument("--reference", action="store_true", help="the event's data is a message of another file")
    args = ap.parse_args()

    TaskEvent = build(args.name, args.reference)
    serialize = ProtobufSerializer(TaskEvent, interop.registry(args.registry))

    def events():
        versions = {}
        for i in range(args.count):
            agg = f"task-{i % args.aggregates}"
            versions[agg] = versions.get(agg, 0) + 1
            ev = TaskEvent(event_id=f"evt-{args.name}-{i}", aggregate_type="task", aggregate_id=agg,
                           aggregate_version=versions[agg], type="task.created" if versions[agg] == 1 else "task.renamed")
            ev.occurred_at.FromSeconds(1_780_000_000 + i)
            ev.data.title = f"task {i}"
            ev.data.priority = 2**63 + i  # a uint64 beyond int64: rendered as a JSON string
            yield agg, ev

    return interop.produce(args.brokers, args.topic, serialize, events())


if __name__ == "__main__":
    sys.exit(main())
