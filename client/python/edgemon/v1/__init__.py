"""The edgemon.v1 gRPC stubs (edgemon_pb2, edgemon_pb2_grpc), generated at build time."""
