// The shapes @grpc/proto-loader gives and takes for protos/grpc_service.proto with the gRPC kit's
// options (src/server/kit/grpc/protos.ts): snake_case names, 64-bit integers as decimal strings
// on the way in (numbers or strings accepted on the way out), enums as names, defaults filled in,
// and a virtual field naming the member set in each oneof. Hand-written because only these few messages are handled.

import type { WireLong } from '../kit/grpc/wire-types.js';

export type { WireLong };

export interface WireInferParameter {
  bool_param?: boolean;
  int64_param?: WireLong;
  string_param?: string;
  double_param?: number;
  uint64_param?: WireLong;
  /** Which member is set (decoded messages only). */
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
}

export type WireParameters = Record<string, WireInferParameter>;

export interface WireTensorContents {
  bool_contents: boolean[];
  int_contents: number[];
  int64_contents: WireLong[];
  uint_contents: number[];
  uint64_contents: WireLong[];
  fp32_contents: number[];
  fp64_contents: number[];
  bytes_contents: Uint8Array[];
}

export interface WireInputTensor {
  name: string;
  datatype: string;
  shape: WireLong[];
  parameters: WireParameters;
  /** null when the field is absent on the wire. */
  contents: Partial<WireTensorContents> | null;
}

export interface WireRequestedOutput {
  name: string;
  parameters: WireParameters;
}

export interface WireInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters: WireParameters;
  inputs: WireInputTensor[];
  outputs: WireRequestedOutput[];
  raw_input_contents: Uint8Array[];
}

export interface WireOutputTensor {
  name: string;
  datatype: string;
  shape: WireLong[];
  parameters: WireParameters;
}

export interface WireInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  parameters: WireParameters;
  outputs: WireOutputTensor[];
  raw_output_contents: Uint8Array[];
}

export interface WireStreamInferResponse {
  error_message: string;
  infer_response: WireInferResponse | null;
}

/** Requests that only name a model (ModelReady, ModelMetadata, ModelConfig, ModelStatistics). */
export interface WireModelRef {
  name: string;
  version: string;
}

export interface WireRepositoryParameter {
  bool_param?: boolean;
  int64_param?: WireLong;
  string_param?: string;
  bytes_param?: Uint8Array;
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'bytes_param';
}

export interface WireRepositoryIndexRequest {
  repository_name: string;
  ready: boolean;
}

export interface WireRepositoryModelRequest {
  repository_name: string;
  model_name: string;
  parameters: Record<string, WireRepositoryParameter>;
}
