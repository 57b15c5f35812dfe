"""What the interop producers share: the registry client from the command line and the
environment, and a producer that writes every event and says how many the broker acknowledged.

The registry's basic-auth user and password come from SCHEMA_REGISTRY_USER and
SCHEMA_REGISTRY_PASSWORD (never the command line).
"""

import os
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext, StringSerializer


def registry(url):
    conf = {"url": url}
    user = os.environ.get("SCHEMA_REGISTRY_USER")
    if user:
        conf["basic.auth.user.info"] = user + ":" + os.environ.get("SCHEMA_REGISTRY_PASSWORD", "")
    return SchemaRegistryClient(conf)


def produce(brokers, topic, serialize, events):
    """Writes each (key, event) of events with serialize, idempotently, and returns the exit
    code: 0 and "delivered N" on stdout when every one was acknowledged. Returns the last
    value's schema id beside it (the 4 bytes after the magic byte)."""
    keys = StringSerializer("utf_8")
    producer = Producer({"bootstrap.servers": brokers, "enable.idempotence": True, "linger.ms": 5})
    failed = []
    delivered = [0]

    def report(err, _msg):
        if err is not None:
            failed.append(err)
        else:
            delivered[0] += 1

    schema_id = None
    for key, event in events:
        value = serialize(event, SerializationContext(topic, MessageField.VALUE))
        schema_id = int.from_bytes(value[1:5], "big")
        producer.produce(topic, key=keys(key), value=value, on_delivery=report)
        producer.poll(0)
    left = producer.flush(60)
    if failed or left:
        print(f"not delivered: {left} left, errors {failed[:3]}", file=sys.stderr)
        return 1
    print(f"schema id {schema_id} delivered {delivered[0]}")
    return 0
