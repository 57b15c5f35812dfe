#!/usr/bin/env python3
"""Writes task events to a Kafka topic with Confluent's own Avro or JSON Schema serializer.

The records are what a Python service using confluent-kafka writes: values in the Confluent
wire format (magic byte, schema id), the schema registered by AvroSerializer or JSONSerializer
itself under the topic's subject. The events are flat records as many teams' schemas have them:
event_id and event_type side by side (no "type"), aggregate_id, aggregate_version; with Avro
occurred_at is a long with the timestamp-millis logical type, with JSON Schema an RFC 3339
string.

  produce_schema.py --brokers B --registry URL --topic T --name N --format avro|json --count 83

The registry's basic-auth user and password come from SCHEMA_REGISTRY_USER and
SCHEMA_REGISTRY_PASSWORD (never the command line). Prints the schema id and how many records
were delivered.
"""

import argparse
import datetime
import json
import sys

from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer

import interop


def avro_schema(name):
    return json.dumps({
        "type": "record", "name": "TaskEvent", "namespace": "fieldwork.interop." + name.replace("-", "_").replace(".", "_"),
        "fields": [
            {"name": "event_id", "type": "string"},
            {"name": "event_type", "type": "string"},
            {"name": "aggregate_id", "type": "string"},
            {"name": "aggregate_version", "type": "long"},
            {"name": "title", "type": ["null", "string"], "default": None},
            {"name": "occurred_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        ]})


JSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "TaskEvent", "type": "object",
    "properties": {
        "event_id": {"type": "string"}, "event_type": {"type": "string"}, "aggregate_id": {"type": "string"},
        "aggregate_version": {"type": "integer"}, "title": {"type": ["string", "null"]},
        "occurred_at": {"type": "string", "format": "date-time"},
    },
    "required": ["event_id", "event_type", "aggregate_id", "aggregate_version"],
})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--name", required=True, help="unique name of the Avro namespace")
    ap.add_argument("--format", required=True, choices=["avro", "json"])
    ap.add_argument("--count", type=int, default=83)
    ap.add_argument("--aggregates", type=int, default=5)
    args = ap.parse_args()

    registry = interop.registry(args.registry)
    if args.format == "avro":
        serialize = AvroSerializer(registry, avro_schema(args.name))
    else:
        serialize = JSONSerializer(JSON_SCHEMA, registry)

    def events():
        versions = {}
        for i in range(args.count):
            agg = f"task-{i % args.aggregates}"
            versions[agg] = versions.get(agg, 0) + 1
            at = datetime.datetime.fromtimestamp(1_780_000_000 + i, datetime.timezone.utc)
            yield agg, {"event_id": f"evt-{args.name}-{i}", "event_type": "task.created" if versions[agg] == 1 else "task.renamed",
                        "aggregate_id": agg, "aggregate_version": versions[agg], "title": f"task {i}",
                        "occurred_at": at if args.format == "avro" else at.isoformat().replace("+00:00", "Z")}

    return interop.produce(args.brokers, args.topic, serialize, events())


if __name__ == "__main__":
    sys.exit(main())
