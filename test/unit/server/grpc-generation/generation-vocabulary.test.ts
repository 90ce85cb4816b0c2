// The gRPC generation service's SamplingParameters (protos/generate.proto) against the one
// declaration of the generation parameters (src/vocabulary): every declared field the gRPC
// vocabulary carries is a proto field of the same name, and the proto has no field the
// declaration lacks. A field added to the declaration fails here until it is added to the
// proto or listed in GRPC_VOCABULARY.omit, so the wire and the vocabulary cannot drift.
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { GRPC_VOCABULARY } from '../../../../src/server/grpc-generation/generation-codec.js';
import { carriedFields } from '../../../../src/vocabulary/index.js';

const PROTO = join(import.meta.dirname, '..', '..', '..', '..', 'protos', 'generate.proto');

describe('gRPC SamplingParameters and the generation vocabulary', () => {
  it('carry the same fields under the same names', () => {
    const root = new protobuf.Root().loadSync(PROTO, { keepCase: true }).resolveAll();
    const message = root.lookupType('conveyor.v1.SamplingParameters');
    const onWire = Object.keys(message.fields).sort();
    expect(onWire).toEqual([...carriedFields(GRPC_VOCABULARY)].sort());
  });
});
