// The one datatype table: every derived lookup agrees with it, both ways.
import { describe, expect, it } from 'vitest';
import { CONFIG_DATA_TYPES, DATATYPES, dataTypeOfConfig, dataTypeOfOrt, elementSize, integerRange, isDataType, type DataType } from '../../../src/contracts/datatypes.js';

const NAMES = Object.keys(DATATYPES) as DataType[];

describe('DATATYPES', () => {
  it('names the 14 KServe datatypes, each mapped back from its ONNX Runtime and config names', () => {
    expect(NAMES).toEqual(['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES', 'BF16']);
    for (const name of NAMES) {
      expect(isDataType(name)).toBe(true);
      expect(dataTypeOfOrt(DATATYPES[name].ort)).toBe(name);
      expect(dataTypeOfConfig(DATATYPES[name].config)).toBe(name);
    }
    expect(CONFIG_DATA_TYPES).toContain('TYPE_STRING');
    expect([isDataType('STRING'), isDataType('toString'), isDataType(4), dataTypeOfConfig('TYPE_INVALID'), dataTypeOfOrt('complex64')]).toEqual([false, false, false, undefined, undefined]);
  });

  it('gives bytes per element and the integer ranges', () => {
    expect(NAMES.filter((n) => n !== 'BYTES').map((n) => elementSize(n as Exclude<DataType, 'BYTES'>))).toEqual([1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2]);
    expect(integerRange('UINT8')).toEqual([0n, 255n]);
    expect(integerRange('INT16')).toEqual([-32768n, 32767n]);
    expect(integerRange('UINT32')).toEqual([0n, 0xffffffffn]);
    expect(integerRange('INT64')).toEqual([-(2n ** 63n), 2n ** 63n - 1n]);
    expect(integerRange('UINT64')).toEqual([0n, 2n ** 64n - 1n]);
    expect(['BOOL', 'FP16', 'BF16', 'FP32', 'BYTES'].map((n) => integerRange(n as DataType))).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});
