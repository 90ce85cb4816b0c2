// The input processor (main thread): turns a chat, text or token-id prompt plus unchecked
// generation parameters into a GenerateRequest of token ids, rejecting anything the engine could
// not serve — invalid parameters, unknown token ids, prompts that fill the context, max_tokens
// beyond it — before anything is scheduled. The context-length check lives here alone, where the
// prompt's length is known. Text lives here and in the output processor only.

import type { GenerateRequest, GrammarSpec, ThinkingSpec } from '../contracts/generate.js';
import { mainThreadTurns } from '../threads/event-loop-turns.js';
import type { ChatMessage, ChatTemplateOptions, OutputOptions, ProcessedRequest, PromptInput } from '../contracts/text-generation.js';
import type { TextTokenizer } from '../contracts/tokenizer.js';
import { ConveyorError, invalidArg } from '../errors.js';
import { CONTEXT_TOKENS, IncrementalDetokenizer } from './detokenizer.js';
import { promptCharLimit } from '../config/limits.js';
import { ChatTemplate, messageChars, selectChatTemplate } from './input-processor-chat.js';
import { createTokenizer, modelInfo, readModelFiles, type ModelFiles, type ModelInfo } from '../tokenizer/model-files.js';
import { OffThreadTokenizer } from './offthread-tokenizer.js';
import { encodePlain, SpecialTokenEscaper, specialTokenContents, type PromptPiece } from './special-token-escape.js';
import type { ReasoningEffort, UncheckedParams, WireNames } from '../vocabulary/index.js';
import { promptOpensBlock, type ReasoningFormat } from '../reasoning/index.js';
import { validateSamplingParams, validateTokenIds, type SamplingDefaults, type ValidatedSampling } from '../vocabulary/sampling-params.js';

export interface ProcessInput {
  readonly id: string;
  readonly prompt: PromptInput;
  /** The generation parameters (sampling, stop, logprobs, scheduling) by their declared names (src/vocabulary). */
  readonly sampling?: UncheckedParams;
  /** The caller's names for fields its protocol renames, so errors name them as the caller does. */
  readonly wireNames?: WireNames;
  /**
   * A constraint the front end derived from other fields (tool_choice required or named), with
   * that field's name; a request that also sets a structured-output field is refused.
   */
  readonly grammar?: { readonly spec: GrammarSpec; readonly param: string };
}

export interface InputProcessorOptions {
  /** Caps the context below the model's own limit (vLLM's --max-model-len). */
  readonly maxModelLen?: number;
  /** Most logprob alternatives a request may ask for (default 20). */
  readonly maxLogprobs?: number;
  /** Longest prompt text in characters, checked before tokenizing; 0 or absent: 16 × the context length. */
  readonly maxPromptChars?: number;
  /**
   * How special-token text inside chat message contents is tokenized: 'text' (default) as plain
   * text, so users cannot forge turns; 'special' as the special tokens it spells (vLLM's behaviour).
   */
  readonly chatSpecialTokens?: 'text' | 'special';
  /** The model's thinking block (its reasoning_parser): every request then carries a ThinkingSpec for the engine. */
  readonly reasoningFormat?: ReasoningFormat;
}

/** A prompt ready to encode: pieces of text and, for the output side, the prompt as it reads. */
interface TextPlan {
  readonly pieces: readonly PromptPiece[];
  readonly text: string;
  readonly addSpecialTokens: boolean;
}

export class InputProcessor {
  readonly info: ModelInfo;
  readonly maxPromptChars: number;
  private readonly templates = new Map<string, ChatTemplate>();
  private readonly escaper: SpecialTokenEscaper | null;
  private readonly offThread: OffThreadTokenizer;
  /** The block's tags as token ids, once a request needed them. */
  private thinkingIds?: { readonly start: readonly number[]; readonly end: readonly number[] };

  private constructor(
    readonly tokenizer: TextTokenizer,
    private readonly files: ModelFiles,
    private readonly options: InputProcessorOptions,
  ) {
    this.info = modelInfo(files, tokenizer, options.maxModelLen === undefined ? {} : { maxModelLen: options.maxModelLen });
    this.maxPromptChars = promptCharLimit({ maxPromptChars: options.maxPromptChars ?? 0 }, this.info.contextLength);
    this.escaper = options.chatSpecialTokens === 'special' ? null : new SpecialTokenEscaper(specialTokenContents(files));
    this.offThread = new OffThreadTokenizer(tokenizer, files);
  }

  /** Stops the tokenizer worker, if one was started. */
  close(): Promise<void> {
    return this.offThread.close();
  }

  /** Loads a Hugging Face model directory (tokenizer.json, tokenizer_config.json, generation_config.json, config.json). */
  static async load(dir: string, options: InputProcessorOptions = {}): Promise<InputProcessor> {
    return InputProcessor.fromFiles(await readModelFiles(dir), options);
  }

  /** `tokenizer` reuses one already built from the same tokenizer files (building one takes seconds). */
  static fromFiles(files: ModelFiles, options: InputProcessorOptions = {}, tokenizer: TextTokenizer = createTokenizer(files)): InputProcessor {
    return new InputProcessor(tokenizer, files, options);
  }

  /** tokenizer_config.json as read from the model directory (vLLM's /tokenizer_info reports it). */
  get tokenizerConfig(): ModelFiles['tokenizerConfig'] {
    return this.files.tokenizerConfig;
  }

  /** The chat template a request without tools is rendered with, or null. */
  defaultChatTemplateSource(): string | null {
    return selectChatTemplate(this.files, false);
  }

  /** The chat template's source (the tool-use one where the model names one), or null; tool_call_parser auto reads it. */
  chatTemplateSource(): string | null {
    return selectChatTemplate(this.files, true);
  }

  /** The chat prompt as text, exactly as the model's template renders it. */
  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    return this.renderChat(messages, options, undefined);
  }

  private renderChat(messages: readonly ChatMessage[], options: ChatTemplateOptions, escape: ((text: string) => string) | undefined): string {
    const withTools = Array.isArray(options.tools) && options.tools.length > 0;
    const source = selectChatTemplate(this.files, withTools);
    if (source === null) throw invalidArg('this model has no chat template; send a text prompt to the completions API instead', 'messages');
    let template = this.templates.get(source);
    if (!template) {
      template = new ChatTemplate(source, this.info.specialTokens);
      this.templates.set(source, template);
    }
    return template.render(messages, options, escape);
  }

  /** The prompt's token ids (and text, unless it came as ids), validated against the vocabulary; encoded on this thread. */
  tokenize(prompt: PromptInput): { tokenIds: number[]; text: string | null } {
    if (prompt.kind === 'tokens') return { tokenIds: validateTokenIds(prompt.tokenIds, prompt.param ?? 'prompt', this.info.vocabSize), text: null };
    const plan = this.plan(prompt);
    const tokenIds = plan.pieces.flatMap((piece) =>
      piece.kind === 'plain' ? encodePlain(this.tokenizer, piece.text) : this.tokenizer.encode(piece.text, { add_special_tokens: plan.addSpecialTokens }).ids,
    );
    return { tokenIds, text: plan.text };
  }

  /** As tokenize, but long texts are encoded in the tokenizer worker so the event loop keeps running. */
  async tokenizeAsync(prompt: PromptInput): Promise<{ tokenIds: number[]; text: string | null }> {
    if (prompt.kind === 'tokens') return this.tokenize(prompt);
    const plan = this.plan(prompt);
    const parts = await Promise.all(plan.pieces.map((piece) => (piece.kind === 'plain' ? encodePlain(this.tokenizer, piece.text) : this.offThread.encode(piece.text, plan.addSpecialTokens))));
    return { tokenIds: parts.flat(), text: plan.text };
  }

  /** Checks the prompt's size, renders a chat, and cuts escaped special-token text out as plain pieces. */
  private plan(prompt: Exclude<PromptInput, { kind: 'tokens' }>): TextPlan {
    if (prompt.kind === 'text') {
      if (typeof prompt.text !== 'string') throw invalidArg('prompt must be a string or an array of token ids', 'prompt');
      this.checkPromptChars(prompt.text.length, 'prompt');
      return { pieces: [{ kind: 'text', text: prompt.text }], text: prompt.text, addSpecialTokens: prompt.addSpecialTokens ?? true };
    }
    // Counted before rendering so an oversized prompt costs no template work either.
    this.checkPromptChars(messageChars(prompt.messages), 'messages');
    const session = this.escaper?.session();
    const rendered = this.renderChat(prompt.messages, prompt, session ? (text) => session.escape(text) : undefined);
    this.checkPromptChars(rendered.length, 'messages');
    // The template already wrote every special token the model expects; adding more would double the BOS.
    const { pieces, text } = session ? session.split(rendered) : { pieces: [{ kind: 'text' as const, text: rendered }], text: rendered };
    return { pieces, text, addSpecialTokens: false };
  }

  private checkPromptChars(chars: number, param: string): void {
    if (chars <= this.maxPromptChars) return;
    throw new ConveyorError(
      'CONTEXT_LENGTH_EXCEEDED',
      `The prompt has ${chars} characters, more than the ${this.maxPromptChars} this server accepts for a model with a ${this.info.contextLength}-token context (--max-prompt-chars). Please shorten the prompt.`,
      param,
    );
  }

  /** Validates and tokenizes a request into what the engine runs and what the output processor needs (encoded on this thread). */
  process(input: ProcessInput): ProcessedRequest {
    const validated = this.validate(input);
    return this.build(input, validated, this.tokenize(withReasoningEffort(input.prompt, validated.reasoningEffort)));
  }

  /**
   * As process, with long prompts tokenized off the main thread, in the request's turn of the
   * main thread (see EventLoopTurns): a burst of arrivals is tokenized one per event-loop
   * iteration, with sockets polled in between.
   */
  async processAsync(input: ProcessInput): Promise<ProcessedRequest> {
    await mainThreadTurns.next();
    const validated = this.validate(input);
    return this.build(input, validated, await this.tokenizeAsync(withReasoningEffort(input.prompt, validated.reasoningEffort)));
  }

  private validate(input: ProcessInput): ValidatedSampling {
    if (typeof input.id !== 'string' || input.id.length === 0) throw invalidArg('request id must be a non-empty string', 'id');
    return validateSamplingParams(input.sampling ?? {}, { vocabSize: this.info.vocabSize, maxLogprobs: this.options.maxLogprobs ?? 20 }, this.info.samplingDefaults, input.wireNames);
  }

  private build(input: ProcessInput, validated: ValidatedSampling, { tokenIds, text }: { tokenIds: number[]; text: string | null }): ProcessedRequest {
    const promptParam = input.prompt.kind === 'chat' ? 'messages' : input.prompt.kind === 'tokens' ? (input.prompt.param ?? 'prompt') : 'prompt';
    if (tokenIds.length === 0) throw invalidArg('the prompt must not be empty', promptParam);
    const maxTokens = resolveMaxTokens(tokenIds.length, this.info.contextLength, validated, this.info.samplingDefaults, promptParam);
    const grammar = requestGrammar(input, validated);
    const request: GenerateRequest = {
      id: input.id,
      promptTokenIds: tokenIds,
      sampling: validated.sampling,
      stop: {
        maxTokens,
        minTokens: validated.minTokens,
        eosTokenIds: this.info.eosTokenIds,
        ignoreEos: validated.ignoreEos,
        stopTokenIds: validated.stopTokenIds,
      },
      priority: validated.priority,
      cacheSalt: validated.cacheSalt,
      // Absent rather than null for free text, so unconstrained requests are what they always were.
      ...(grammar ? { grammar: grammar.spec } : {}),
      // Chat output is read for reasoning; a raw text or token prompt's output is the client's to read.
      ...(this.options.reasoningFormat && input.prompt.kind === 'chat' ? { thinking: this.thinkingSpec(this.options.reasoningFormat, text, validated.thinkingBudget) } : {}),
      ...(validated.promptLogprobs !== null ? { promptLogprobs: validated.promptLogprobs } : {}),
    };
    return { request, output: validated.output, promptText: text, ...(grammar ? { grammarParam: grammar.param } : {}) };
  }

  /** Where this request's thinking block starts and ends in token ids, and its budget. */
  private thinkingSpec(format: ReasoningFormat, promptText: string | null, budget: number | null): ThinkingSpec {
    const ids = (tag: string): number[] => this.tokenizer.encode(tag, { add_special_tokens: false }).ids;
    this.thinkingIds ??= { start: ids(format.startTag), end: ids(format.endTag) };
    return { endTokenIds: this.thinkingIds.end, startsInside: promptOpensBlock(format, promptText), startTokenIds: this.thinkingIds.start, budget };
  }

  /** A detokenizer for one request's output, with the prompt's tail as decoding context. */
  createDetokenizer(output: Pick<OutputOptions, 'skipSpecialTokens'>, promptTokenIds: readonly number[]): IncrementalDetokenizer {
    return new IncrementalDetokenizer(this.tokenizer, { skipSpecialTokens: output.skipSpecialTokens, contextTokenIds: promptTokenIds.slice(-CONTEXT_TOKENS) });
  }
}

/**
 * reasoning_effort reaches the chat template: none as enable_thinking false (Qwen3's switch, as
 * vLLM maps it), every level as `reasoning_effort` for templates that read it. The client's own
 * chat_template_kwargs win.
 */
function withReasoningEffort(prompt: PromptInput, effort: ReasoningEffort | null): PromptInput {
  if (prompt.kind !== 'chat' || effort === null) return prompt;
  const switches = { reasoning_effort: effort, ...(effort === 'none' ? { enable_thinking: false } : {}) };
  return { ...prompt, chatTemplateKwargs: { ...switches, ...(prompt.chatTemplateKwargs ?? {}) } };
}

/** The request's one constraint and the field it came from: a structured-output field's, or the front end's. */
function requestGrammar(input: ProcessInput, validated: ValidatedSampling): { spec: GrammarSpec; param: string } | null {
  const fromFields = validated.grammar && validated.grammarParam ? { spec: validated.grammar, param: validated.grammarParam } : null;
  // Named as the vocabulary names two constraints: the later field (tool_choice follows response_format in a body).
  if (input.grammar && fromFields) {
    throw invalidArg(
      `${input.grammar.param} cannot be combined with ${fromFields.param}: a request takes one output constraint, and ${input.grammar.param} constrains the output itself`,
      input.grammar.param,
    );
  }
  return input.grammar ?? fromFields;
}

/**
 * The output budget. A prompt that leaves no room is CONTEXT_LENGTH_EXCEEDED; so is an explicit
 * max_tokens beyond the remaining context (OpenAI and vLLM reject rather than clamp). Without
 * one, the remaining context, capped by generation_config's max_new_tokens.
 */
export function resolveMaxTokens(
  numPromptTokens: number,
  contextLength: number,
  validated: Pick<ValidatedSampling, 'maxTokens' | 'maxTokensParam' | 'minTokens'>,
  defaults: SamplingDefaults,
  promptParam: string,
): number {
  if (numPromptTokens >= contextLength) {
    throw new ConveyorError(
      'CONTEXT_LENGTH_EXCEEDED',
      `This model's maximum context length is ${contextLength} tokens. However, your prompt has ${numPromptTokens} tokens, which leaves no room for output. Please shorten the prompt.`,
      promptParam,
    );
  }
  const room = contextLength - numPromptTokens;
  const { maxTokens, maxTokensParam, minTokens } = validated;
  if (maxTokens !== null && maxTokens > room) {
    throw new ConveyorError(
      'CONTEXT_LENGTH_EXCEEDED',
      `${maxTokensParam} is too large: ${maxTokens}. This model's maximum context length is ${contextLength} tokens and your prompt has ${numPromptTokens} tokens (${maxTokens} > ${contextLength} - ${numPromptTokens}).`,
      maxTokensParam,
    );
  }
  if (minTokens > room) throw new ConveyorError('CONTEXT_LENGTH_EXCEEDED', `min_tokens (${minTokens}) exceeds the ${room} tokens left in the context after the prompt`, 'min_tokens');
  return maxTokens ?? Math.max(minTokens, Math.min(room, defaults.maxTokens ?? room));
}
