// The public surface of the TypeScript backend for model authors: a model file imports it as
// `conveyor/backend` (the model's worker resolves that name here, from wherever the file lives).
export { asNumbers, asStrings, bytes, fp32, isTensor, tensor, type DataType, type Tensor, type TensorData, type TensorValues } from './tensors.js';
export {
  InferenceError,
  type InferenceErrorCode,
  type InferOptions,
  type InferResult,
  type InitializeArgs,
  type ModelRequest,
  type ModelResponse,
  type Parameters,
  type ResponseSender,
  type TypeScriptModel,
} from './model-api.js';
export { loadTokenizer, type EncoderTokenizer } from './tokenizer.js';
