// The model repository's config layer: config.pbtxt (protobuf text format) or a JSON override →
// a validated, normalized ModelConfig. Errors are ConveyorError INVALID_ARG (UNSUPPORTED for
// features Conveyor does not serve) with `file:line:column:` in the message.
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ModelConfig } from '../../contracts/model-config.js';
import { MODEL_CONFIG, UNSUPPORTED_FIELDS } from '../../contracts/model-config-schema.js';
import { confinedPath, existingConfinedFile, lexicalProblem, type ConfinementRoot } from '../confine.js';
import { MAX_CONFIG_CHARS } from './ast.js';
import { decodeTree, fillDefaults, type DecodeResult } from './decode.js';
import { parseJsonConfig } from './json-parser.js';
import { configError, Locator } from './locate.js';
import { normalizeModelConfig, type NormalizeOptions } from './normalize.js';
import { parseTextFormat } from './text-parser.js';
import { checkSupported, validateModelConfig } from './validate.js';

export { completeFromModelMetadata, checkModelMetadata, DEFAULT_MAX_BATCH_SIZE, ORT_TO_CONFIG_TYPE } from './autocomplete.js';
export type { CompleteOptions, ModelIoMetadata, TensorMetadata } from './autocomplete.js';
export { completeLlmTensors } from './llm-tensors.js';
export { modelConfigToJson, modelConfigToJsonValue } from './json.js';
export { DEFAULT_CPU_INSTANCE_COUNT, DEFAULT_MODEL_FILENAME, normalizeModelConfig } from './normalize.js';
export type { NormalizeOptions } from './normalize.js';

export type ConfigOptions = NormalizeOptions;

/** Parses config.pbtxt text; `fileLabel` prefixes error positions, `dirName` is the model's directory. */
export function parseModelConfig(text: string, fileLabel: string, dirName: string, options: ConfigOptions = {}): ModelConfig {
  checkConfigSize(text, fileLabel);
  return finishConfig(decodeTree(parseTextFormat(text, fileLabel), MODEL_CONFIG, fileLabel), fileLabel, dirName, options);
}

/**
 * The repository load API's `config` parameter: a ModelConfig as JSON (proto field names or
 * their camelCase JSON names), validated and normalized like a config.pbtxt. Errors are
 * labelled `config:line:column:`.
 */
export function modelConfigFromJson(text: string, dirName: string, options: ConfigOptions = {}): ModelConfig {
  const label = 'config';
  checkConfigSize(text, label);
  return finishConfig(decodeTree(parseJsonConfig(text, label), MODEL_CONFIG, label), label, dirName, options);
}

export interface LoadConfigOptions extends ConfigOptions {
  /** How messages name the file (default `path`); the repository passes `<model>/config.pbtxt`, never an absolute path. */
  readonly label?: string;
}

/**
 * Reads and parses `path` (a model's config.pbtxt; errors are labelled with `options.label`). As
 * in Triton, a config may be missing or leave backend and platform unset when a version
 * directory holds the ONNX model file; such a model gets backend "onnxruntime". Output label
 * files must exist inside the model directory (confine.ts's rule).
 */
export async function loadModelConfig(path: string, dirName: string, options: LoadConfigOptions = {}): Promise<ModelConfig> {
  const label = options.label ?? path;
  const text = await readConfigText(path, label);
  if (text !== undefined) checkConfigSize(text, label);
  const decoded = decodeTree(parseTextFormat(text ?? '', label), MODEL_CONFIG, label);
  const raw = decoded.value;
  const file = typeof raw.default_model_filename === 'string' && raw.default_model_filename !== '' ? raw.default_model_filename : 'model.onnx';
  if (!raw.backend && !raw.platform && (await holdsOnnxModel(dirname(path), file))) {
    raw.backend = 'onnxruntime';
  } else if (text === undefined) {
    throw configError(label, undefined, 'no such file, and no version directory holds an ONNX model to derive a config from');
  }
  const config = finishConfig(decoded, label, dirName, options);
  await checkLabelFiles(config, { dir: dirname(path), display: dirname(label) }, new Locator(label, decoded.positions));
  return config;
}

function checkConfigSize(text: string, label: string): void {
  if (text.length > MAX_CONFIG_CHARS) throw configError(label, undefined, `the configuration is ${text.length} characters long; the most accepted is ${MAX_CONFIG_CHARS}`);
}

function finishConfig(decoded: DecodeResult, label: string, dirName: string, options: ConfigOptions): ModelConfig {
  const loc = new Locator(label, decoded.positions);
  const raw = fillDefaults(decoded.value, MODEL_CONFIG, UNSUPPORTED_FIELDS);
  checkSupported(raw, loc, dirName);
  for (const field of UNSUPPORTED_FIELDS) delete raw[field];
  const config = normalizeModelConfig(raw, dirName, options);
  validateModelConfig(config, loc);
  return config;
}

async function readConfigText(path: string, label: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    // The errno text names the absolute path; the code alone says enough.
    throw configError(label, undefined, `cannot read the config (${code ?? 'unreadable'})`);
  }
}

/** True when a numeric version directory of `modelDir` holds `file` (Triton skips names starting with 0). */
async function holdsOnnxModel(modelDir: string, file: string): Promise<boolean> {
  if (!file.endsWith('.onnx') || lexicalProblem(file, 'default_model_filename') !== undefined) return false;
  const entries = await readdir(modelDir).catch(() => [] as string[]);
  for (const entry of entries.filter((e) => /^[1-9]\d*$/.test(e))) {
    const found = await confinedPath({ dir: join(modelDir, entry), display: entry }, file, 'default_model_filename').catch(() => undefined);
    if (found?.exists) return true;
  }
  return false;
}

async function checkLabelFiles(config: ModelConfig, modelDir: ConfinementRoot, loc: Locator): Promise<void> {
  for (const output of config.output) {
    if (!output.label_filename) continue;
    const what = `output '${output.name}' label_filename`;
    let found;
    try {
      found = await existingConfinedFile(modelDir, output.label_filename, what);
    } catch (error) {
      loc.fail(output, 'label_filename', (error as Error).message);
    }
    const isFile = await stat(found.path).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!isFile) loc.fail(output, 'label_filename', `${what} '${found.display}' is not a file`);
  }
}
