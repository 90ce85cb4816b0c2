// The proto-loader shapes both gRPC front ends and the kit read (options in protos.ts): 64-bit
// integers and grpc.health.v1's messages. Each front end's own messages live beside its codec.

/** 64-bit integer as decoded (always a string) or as we encode it (number or string). */
export type WireLong = string | number;

export interface WireHealthCheckRequest {
  service: string;
}

export type WireServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export interface WireHealthCheckResponse {
  status: WireServingStatus;
}
