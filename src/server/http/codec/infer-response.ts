// InferResponse → the HTTP body: the JSON response, followed by the binary data of every output
// sent binary (binary_data per requested output, else the request's binary_data_output).

import type { InferRequest, InferResponse } from '../../../contracts/infer.js';
import type { Tensor } from '../../../contracts/tensors.js';
import { encodeBinaryData } from './binary-tensor.js';
import { encodeJsonData } from './json-tensor.js';
import { parametersText } from './json-body.js';

export interface EncodedInferResponse {
  readonly body: Buffer;
  /** Byte length of the JSON part; undefined when no output is binary. */
  readonly headerLength?: number;
  readonly contentType: 'application/json' | 'application/octet-stream';
}

/** Whether each output travels as binary data, following the request's choices. */
export function binaryOutputChooser(request: InferRequest): (output: string) => boolean {
  const byDefault = request.parameters.binary_data_output === true;
  const requested = new Map((request.outputs ?? []).map((o) => [o.name, o.parameters.binary_data]));
  return (output) => {
    const choice = requested.get(output);
    return typeof choice === 'boolean' ? choice : byDefault;
  };
}

export function encodeInferResponse(response: InferResponse, isBinary: (output: string) => boolean): EncodedInferResponse {
  const binaries: Buffer[] = [];
  const outputs = response.outputs.map((tensor) => {
    if (!isBinary(tensor.name)) return outputText(tensor, undefined);
    const bytes = encodeBinaryData(tensor.data);
    binaries.push(bytes);
    return outputText(tensor, bytes.byteLength);
  });
  const fields = [
    ...(response.id !== undefined ? [`"id":${JSON.stringify(response.id)}`] : []),
    `"model_name":${JSON.stringify(response.model)}`,
    `"model_version":${JSON.stringify(response.version)}`,
    ...(response.parameters !== undefined ? [`"parameters":${parametersText(response.parameters)}`] : []),
    `"outputs":[${outputs.join(',')}]`,
  ];
  const header = Buffer.from(`{${fields.join(',')}}`, 'utf8');
  if (binaries.length === 0) return { body: header, contentType: 'application/json' };
  return {
    body: Buffer.concat([header, ...binaries]),
    headerLength: header.byteLength,
    contentType: 'application/octet-stream',
  };
}

function outputText(tensor: Tensor, binaryDataSize: number | undefined): string {
  const head = `"name":${JSON.stringify(tensor.name)},"datatype":"${tensor.datatype}","shape":[${tensor.shape.join(',')}]`;
  if (binaryDataSize !== undefined) return `{${head},"parameters":{"binary_data_size":${binaryDataSize}}}`;
  return `{${head},"data":${encodeJsonData(tensor.name, tensor.datatype, tensor.data)}}`;
}
