#!/usr/bin/python3
"""proto/perfetto/trace.proto, edgemon's subset of Perfetto's trace format,
against the published one: every message and enum of the subset, its
package, and each field's number, type and label as upstream has them.

  perfetto_subset_test.py --protoc protoc --proto-dir proto

The published numbers were read from google/perfetto (protos/perfetto/...),
file by file as noted in PUBLISHED. A subset field missing from the table,
or a number that differs, fails."""
import argparse
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2

F = descriptor_pb2.FieldDescriptorProto
# message -> {field: (number, type, label)}, from google/perfetto.
PUBLISHED = {
    # protos/perfetto/trace/trace.proto
    "Trace": {"packet": (1, F.TYPE_MESSAGE, F.LABEL_REPEATED)},
    # protos/perfetto/trace/trace_packet.proto
    "TracePacket": {
        "timestamp": (8, F.TYPE_UINT64, F.LABEL_OPTIONAL),
        "timestamp_clock_id": (58, F.TYPE_UINT32, F.LABEL_OPTIONAL),
        "track_event": (11, F.TYPE_MESSAGE, F.LABEL_OPTIONAL),
        "track_descriptor": (60, F.TYPE_MESSAGE, F.LABEL_OPTIONAL),
        "clock_snapshot": (6, F.TYPE_MESSAGE, F.LABEL_OPTIONAL),
        "trusted_packet_sequence_id": (10, F.TYPE_UINT32, F.LABEL_OPTIONAL),
        "sequence_flags": (13, F.TYPE_UINT32, F.LABEL_OPTIONAL),
    },
    # protos/perfetto/trace/clock_snapshot.proto
    "ClockSnapshot": {
        "clocks": (1, F.TYPE_MESSAGE, F.LABEL_REPEATED),
        "primary_trace_clock": (2, F.TYPE_ENUM, F.LABEL_OPTIONAL),
    },
    "ClockSnapshot.Clock": {
        "clock_id": (1, F.TYPE_UINT32, F.LABEL_OPTIONAL),
        "timestamp": (2, F.TYPE_UINT64, F.LABEL_OPTIONAL),
    },
    # protos/perfetto/trace/track_event/track_descriptor.proto
    "TrackDescriptor": {
        "uuid": (1, F.TYPE_UINT64, F.LABEL_OPTIONAL),
        "parent_uuid": (5, F.TYPE_UINT64, F.LABEL_OPTIONAL),
        "name": (2, F.TYPE_STRING, F.LABEL_OPTIONAL),
        "counter": (8, F.TYPE_MESSAGE, F.LABEL_OPTIONAL),
    },
    # protos/perfetto/trace/track_event/counter_descriptor.proto
    "CounterDescriptor": {"categories": (2, F.TYPE_STRING, F.LABEL_REPEATED)},
    # protos/perfetto/trace/track_event/debug_annotation.proto
    "DebugAnnotation": {
        "name": (10, F.TYPE_STRING, F.LABEL_OPTIONAL),
        "bool_value": (2, F.TYPE_BOOL, F.LABEL_OPTIONAL),
        "int_value": (4, F.TYPE_INT64, F.LABEL_OPTIONAL),
        "double_value": (5, F.TYPE_DOUBLE, F.LABEL_OPTIONAL),
        "string_value": (6, F.TYPE_STRING, F.LABEL_OPTIONAL),
    },
    # protos/perfetto/trace/track_event/track_event.proto
    "TrackEvent": {
        "categories": (22, F.TYPE_STRING, F.LABEL_REPEATED),
        "name": (23, F.TYPE_STRING, F.LABEL_OPTIONAL),
        "type": (9, F.TYPE_ENUM, F.LABEL_OPTIONAL),
        "track_uuid": (11, F.TYPE_UINT64, F.LABEL_OPTIONAL),
        "counter_value": (30, F.TYPE_INT64, F.LABEL_OPTIONAL),
        "double_counter_value": (44, F.TYPE_DOUBLE, F.LABEL_OPTIONAL),
        "debug_annotations": (4, F.TYPE_MESSAGE, F.LABEL_REPEATED),
    },
}
# enum -> {value name: number}, from the same files.
PUBLISHED_ENUMS = {
    # protos/perfetto/common/builtin_clock.proto
    "BuiltinClock": {"BUILTIN_CLOCK_UNKNOWN": 0, "BUILTIN_CLOCK_REALTIME": 1,
                     "BUILTIN_CLOCK_MONOTONIC": 3, "BUILTIN_CLOCK_BOOTTIME": 6},
    # protos/perfetto/trace/track_event/track_event.proto
    "TrackEvent.Type": {"TYPE_UNSPECIFIED": 0, "TYPE_SLICE_BEGIN": 1, "TYPE_SLICE_END": 2,
                        "TYPE_INSTANT": 3, "TYPE_COUNTER": 4},
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--protoc", required=True)
    p.add_argument("--proto-dir", required=True)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        subprocess.run([a.protoc, "--proto_path=" + a.proto_dir, "--descriptor_set_out=" + out,
                        os.path.join(a.proto_dir, "perfetto", "trace.proto")], check=True)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    [fd] = fds.file
    failed = []
    if fd.package != "perfetto.protos":
        failed.append("package %s, upstream's is perfetto.protos" % fd.package)
    seen_messages, seen_enums = {}, {}

    def walk(messages, prefix):
        for m in messages:
            name = prefix + m.name
            seen_messages[name] = {f.name: (f.number, f.type, f.label) for f in m.field}
            for e in m.enum_type:
                seen_enums[name + "." + e.name] = {v.name: v.number for v in e.value}
            walk(m.nested_type, name + ".")
    walk(fd.message_type, "")
    for e in fd.enum_type:
        seen_enums[e.name] = {v.name: v.number for v in e.value}
    checked = 0
    for table, seen in ((PUBLISHED, seen_messages), (PUBLISHED_ENUMS, seen_enums)):
        for name, fields in seen.items():
            if name not in table:
                failed.append("%s: not in the table of published messages" % name)
                continue
            for field, got in fields.items():
                want = table[name].get(field)
                checked += 1
                if want != got:
                    failed.append("%s.%s: %s, published %s" % (name, field, got, want))
    for f in failed:
        print("failed: " + f)
    print("%d fields and enum values checked, %d failed" % (checked, len(failed)))
    return 1 if failed or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
