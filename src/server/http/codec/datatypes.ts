// Datatype helpers the HTTP codec adds to the one datatype table (src/contracts/datatypes.ts):
// shapes in error messages, and config datatypes as the wire names a raw request may carry.

import { invalidArg } from '../../../errors.js';
import { dataTypeOfConfig, type DataType } from '../../../contracts/datatypes.js';
import type { ConfigDataType } from '../../../contracts/model-config.js';

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/** config.pbtxt's TYPE_* name as the wire datatype (TYPE_STRING travels as BYTES). */
export function fromConfigDataType(type: ConfigDataType): DataType {
  const datatype = dataTypeOfConfig(type);
  if (datatype === undefined) throw invalidArg(`model input datatype ${type} cannot be sent over HTTP`);
  return datatype;
}
