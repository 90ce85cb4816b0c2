// Rules for input and output tensors: names, data types, dims, reshape and formats.
import type { ModelConfig, ModelTensorConfig } from '../../contracts/model-config.js';
import { lexicalProblem } from '../confine.js';
import { formatPos, type Locator, type Pos } from './locate.js';

type Section = 'input' | 'output';

export function validateTensors(config: ModelConfig, loc: Locator): void {
  for (const section of ['input', 'output'] as const) {
    const firstByName = new Map<string, Pos | undefined>();
    config[section].forEach((tensor, index) => {
      validateTensor(tensor, section, index, config, loc);
      const where = loc.posOr(tensor, 'name', [config, `${section}.${index}`]);
      if (firstByName.has(tensor.name)) {
        const first = firstByName.get(tensor.name);
        loc.failAt(where, `${section} name '${tensor.name}' is used more than once${first ? ` (first at ${formatPos(first)})` : ''}`);
      }
      firstByName.set(tensor.name, where);
    });
  }
}

const shapeText = (dims: readonly number[]) => `[${dims.join(', ')}]`;

function validateTensor(tensor: ModelTensorConfig, section: Section, index: number, config: ModelConfig, loc: Locator): void {
  const element = (): Pos | undefined => loc.pos(config, `${section}.${index}`);
  if (tensor.name === '') loc.failAt(element(), `${section} ${index} must set 'name'`);
  const what = `${section} '${tensor.name}'`;
  if (tensor.data_type === 'TYPE_INVALID') loc.failAt(loc.posOr(tensor, 'data_type') ?? element(), `${what} must set 'data_type'`);
  if (tensor.dims.length === 0) {
    loc.failAt(loc.posOr(tensor, 'dims') ?? element(), `${what} must set 'dims' (rank >= 1; for a scalar use dims: [ 1 ] with reshape: { shape: [ ] })`);
  }
  checkDims(tensor, 'dims', tensor.dims, what, loc);
  if (tensor.reshape) {
    const reshape = tensor.reshape;
    checkDims(reshape, 'shape', reshape.shape, `${what} reshape`, loc);
    if (!sameElementCount(tensor.dims, reshape.shape)) {
      loc.failAt(loc.posOr(tensor, 'reshape'), `${what} reshape ${shapeText(reshape.shape)} does not hold the same elements as dims ${shapeText(tensor.dims)}`);
    }
  }
  if ('format' in tensor && tensor.format !== 'FORMAT_NONE' && tensor.dims.length !== 3) {
    loc.fail(tensor, 'format', `${what} has format ${tensor.format}, which needs 3 dims (without the batch dimension), got ${shapeText(tensor.dims)}`);
  }
  if ('label_filename' in tensor && tensor.label_filename) checkRelativeFile(tensor, 'label_filename', tensor.label_filename, `${what} label_filename`, loc);
}

function checkDims(owner: object, key: string, dims: readonly number[], what: string, loc: Locator): void {
  dims.forEach((dim, i) => {
    if (dim < 1 && dim !== -1) {
      loc.failAt(loc.posOr(owner, `${key}.${i}`, [owner, key]), `${what} dimension ${dim} is invalid: dimensions are integers >= 1, or -1 for a variable size`);
    }
  });
}

/**
 * Reshape must describe the same elements: the same number of variable (-1) dimensions, and
 * equal products of the fixed dimensions between them.
 */
export function sameElementCount(dims: readonly number[], shape: readonly number[]): boolean {
  const segments = (d: readonly number[]) => {
    const products = [1];
    for (const value of d) {
      if (value === -1) products.push(1);
      else products[products.length - 1]! *= value;
    }
    return products;
  };
  const a = segments(dims);
  const b = segments(shape);
  return a.length === b.length && a.every((p, i) => p === b[i]);
}

/** Files a config names live inside the model directory (the rule is confine.ts's). */
export function checkRelativeFile(owner: object, key: string, file: string, what: string, loc: Locator): void {
  const problem = lexicalProblem(file, what);
  if (problem !== undefined) loc.fail(owner, key, problem);
}
