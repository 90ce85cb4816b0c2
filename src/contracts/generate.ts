// The LLM engine's plain-data contract: what the input processor hands the engine
// (GenerateRequest), what the scheduler hands the runner each step (StepPlan), what the runner
// hands back (StepResult), and the one message per step the engine sends to the main thread
// (StepOutput). Everything here survives structured clone between threads, so no classes, Maps
// or functions. The engine sees token ids only; text lives in the input/output processors.

/**
 * Per-request sampling knobs, already validated and defaulted by the input processor.
 * `n` / `best_of` are handled above the engine: n choices are n GenerateRequests sharing a
 * prompt (and, through prefix caching, its KV blocks).
 */
export interface SamplingParams {
  /** 0 means greedy; otherwise logits are divided by it. */
  readonly temperature: number;
  /** Keep the k most likely tokens; 0 disables. */
  readonly topK: number;
  /** Nucleus mass in (0, 1]; 1 disables. */
  readonly topP: number;
  /** Drop tokens whose probability is below minP × the top probability; 0 disables. */
  readonly minP: number;
  /** Multiplicative penalty on logits of tokens seen in prompt or output (HF convention); 1 disables. */
  readonly repetitionPenalty: number;
  /** Subtracted once per occurrence of a token in the output (OpenAI convention); 0 disables. */
  readonly frequencyPenalty: number;
  /** Subtracted once if a token occurs in the output at all (OpenAI convention); 0 disables. */
  readonly presencePenalty: number;
  /** Added to the logit of each token id (OpenAI range −100..100); null when none. */
  readonly logitBias: Readonly<Record<number, number>> | null;
  /** Return the sampled token's log-probability (after penalties, before temperature). */
  readonly logprobs: boolean;
  /** Alternatives returned with each sampled token, 0..20; needs `logprobs`. */
  readonly topLogprobs: number;
  /** Per-request RNG seed: the same seed gives the same tokens whatever shares the batch; null: unseeded. */
  readonly seed: number | null;
}

/** Greedy with every processor off: the neutral base that tests and benchmarks spread and override. */
export const GREEDY_SAMPLING: SamplingParams = {
  temperature: 0,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  logitBias: null,
  logprobs: false,
  topLogprobs: 0,
  seed: null,
};

/** Stops the engine checks itself. Stop strings are matched by the output processor, which ends the request with abort(id, 'stop'). */
export interface StopConditions {
  /** Most output tokens to generate, ≥ 1. The context length caps it further. */
  readonly maxTokens: number;
  /** EOS and stop tokens are ignored until this many output tokens exist; 0 disables. */
  readonly minTokens: number;
  /** End-of-sequence ids from generation_config.json (a model may have several). */
  readonly eosTokenIds: readonly number[];
  /** Benchmarks: keep generating through EOS (stop_token_ids still stop). */
  readonly ignoreEos: boolean;
  /** Extra ids that finish the request with reason "stop". */
  readonly stopTokenIds: readonly number[];
}

export interface GenerateRequest {
  /** Unique among the engine's live requests. */
  readonly id: string;
  /** The tokenized prompt (chat template applied), ≥ 1 id. */
  readonly promptTokenIds: readonly number[];
  readonly sampling: SamplingParams;
  readonly stop: StopConditions;
  /** Lower runs first under the priority policy (vLLM's convention); ignored under FCFS. */
  readonly priority: number;
  /**
   * Separates prefix-cache namespaces: a LoRA adapter or model variant whose KV differs for the
   * same tokens, or a tenant's cache salt. Null shares the default namespace.
   */
  readonly cacheSalt: string | null;
  /**
   * A grammar the output must follow (structured outputs, forced tool calls), applied by the
   * engine as a token mask at sampling time; null or absent for free text.
   */
  readonly grammar?: GrammarSpec | null;
  /**
   * A reasoning model's thinking block (the model's reasoning_parser): the engine counts its
   * tokens, closes it itself when the budget is spent, and applies `grammar` only to the answer
   * after it. Null or absent: the output has no block the engine knows of.
   */
  readonly thinking?: ThinkingSpec | null;
  /**
   * Prompt logprobs (vLLM's prompt_logprobs, OpenAI completions' echo + logprobs): the number of
   * top alternatives reported with each prompt token's own logprob (0: the token's alone). The
   * engine computes them from the prefill's logits, so such a request does not reuse cached
   * prompt blocks. Null or absent: none.
   */
  readonly promptLogprobs?: number | null;
}

/**
 * Where a thinking block starts and ends, in token ids (issue 12). The text-level split into
 * reasoning and content is the output side's (reasoning parsers); the engine needs only this.
 */
export interface ThinkingSpec {
  /** The ids that close the block (the tokenization of `</think>`), ≥ 1. */
  readonly endTokenIds: readonly number[];
  /**
   * True when the prompt already opened the block (DeepSeek-R1's template, Qwen3 templates that
   * end with `<think>`), so the output starts inside it. False: the block is open only when the
   * output begins with `startTokenIds`; output that begins otherwise has no block.
   */
  readonly startsInside: boolean;
  /** The ids that open the block (`<think>`); read only when startsInside is false. */
  readonly startTokenIds: readonly number[];
  /**
   * Most tokens inside the block (the opening ids not counted); once reached, the engine forces
   * `endTokenIds` as the next tokens. Null: no limit beyond max_tokens.
   */
  readonly budget: number | null;
}

/**
 * An output constraint as plain data (issue 11). Every front end's structured-output fields
 * (OpenAI response_format, vLLM structured_outputs / guided_*, tool_choice required or named)
 * translate to one of these; the engine compiles it once per distinct spec (cached by its
 * canonical text) and masks every sampled row with it.
 */
/**
 * The top-level keyword by which a json_schema spec's schema chooses its objects' key order:
 * "schema" (the default: the order OpenAI's structured outputs promise) or "any" (the order the
 * output chooses, where the grammar engine can follow the keys).
 */
export const PROPERTY_ORDER_KEYWORD = 'x-property-order';
export const PROPERTY_ORDERS = ['schema', 'any'] as const;
export type PropertyOrder = (typeof PROPERTY_ORDERS)[number];

export type GrammarSpec =
  /** Any JSON object (response_format json_object). */
  | { readonly kind: 'json_object' }
  /** JSON valid under a JSON Schema, as canonical JSON text (keys sorted) so equal schemas share a compile. */
  | { readonly kind: 'json_schema'; readonly schema: string }
  /** Text fully matching a regular expression (vLLM's regex). */
  | { readonly kind: 'regex'; readonly pattern: string }
  /** Exactly one of the strings (vLLM's choice). */
  | { readonly kind: 'choice'; readonly choices: readonly string[] }
  /** An EBNF grammar in xgrammar's (GBNF-like) dialect, rooted at `root`. */
  | { readonly kind: 'ebnf'; readonly grammar: string }
  /** Tool calls, each valid for its tool, framed as the request's tool_choice reads them (never sent by a client as such). */
  | { readonly kind: 'tool_calls'; readonly calls: ToolCallsGrammar };

/**
 * Calls to function and custom tools as one constraint: the engine writes each function call's
 * JSON through its parameters' schema and each custom call's input, as a JSON string, through the
 * tool's own format, so a grammar-format custom tool is held to its grammar wherever it is called.
 */
export interface ToolCallsGrammar {
  readonly framing: ToolCallsFraming;
  /** The key each call's arguments sit under: `{"name": …, "<argumentsKey>": {…}}`. */
  readonly argumentsKey: string;
  readonly tools: readonly ToolCallGrammar[];
}

/**
 * Where the calls sit. `array` (tool_choice required): the whole output is `[call, …]`, at least
 * one. `blocks` (tool_choice auto): optional text that never contains `open`, then none or more
 * `open padding call padding close` blocks joined by `separator`, and nothing after them.
 */
export type ToolCallsFraming =
  | { readonly kind: 'array'; readonly maxCalls: number | null }
  | { readonly kind: 'blocks'; readonly open: string; readonly close: string; readonly padding: string; readonly separator: string; readonly maxCalls: number | null };

/** One tool: a function's parameters (canonical JSON Schema text), or a custom tool's input format. */
export type ToolCallGrammar =
  | { readonly kind: 'function'; readonly name: string; readonly parameters: string }
  | { readonly kind: 'custom'; readonly name: string; readonly input: CustomInputGrammar };

/** A custom tool's input: any text, a regex it fully matches, or an EBNF grammar (rooted at `root`) it is a sentence of. */
export type CustomInputGrammar = { readonly kind: 'text' } | { readonly kind: 'regex'; readonly pattern: string } | { readonly kind: 'ebnf'; readonly grammar: string };

/**
 * The order of waiting requests (vLLM's --scheduling-policy). fcfs: by arrival, `priority`
 * ignored. priority: lower `priority` first, then arrival; a waiting request that outranks a
 * running one and finds no seat or blocks preempts the lowest-ranked running request.
 */
export type SchedulingPolicy = 'fcfs' | 'priority';

// ---------------------------------------------------------------------------------------------
// Scheduler → runner

/** One request's slice of a step. */
export interface ScheduledRequest {
  readonly requestId: string;
  /** The tokens to feed this step (a prefill chunk, or the last sampled token); length ≥ 1. */
  readonly tokenIds: readonly number[];
  /** Tokens whose KV is already in the cache: the position of tokenIds[0]. */
  readonly numComputedTokens: number;
  /**
   * Block ids covering positions [0, numComputedTokens + tokenIds.length): position p lives in
   * block blockTable[floor(p / blockSize)] at slot p % blockSize. Blocks below numComputedTokens
   * are read (they may be shared with other requests); the rest are written.
   */
  readonly blockTable: readonly number[];
  /**
   * True when this chunk reaches the end of the known tokens, so the last position's logits are
   * sampled. False for a prefill chunk that leaves tokens for later steps: no logits needed.
   */
  readonly sample: boolean;
  /** True the first time the request is scheduled since admission or a preemption: runners drop stale per-request state. */
  readonly isNew: boolean;
  /**
   * True when the engine needs the logits of every position of this chunk (prompt logprobs),
   * not only the sampled last one: the runner then returns tokenIds.length rows (model-runner.ts).
   */
  readonly allLogits?: boolean;
  /**
   * Speculative decoding: the last numDraftTokens of tokenIds are proposed tokens to check, after
   * the request's last sampled token. The runner returns the logits (or greedy tokens) of the last
   * numDraftTokens + 1 positions, row-major, the last one the row sampled when every proposal holds.
   * Absent or 0: none.
   */
  readonly numDraftTokens?: number;
  /**
   * The distribution each proposal was drawn from (Draft.probs in src/engine-worker/spec-decode.ts),
   * for the sampler's acceptance rule; absent: point masses. Runners ignore it.
   */
  readonly draftProbs?: readonly Float32Array[];
}

export interface StepPlan {
  /** Increments by one per plan; the StepResult echoes it. */
  readonly stepId: number;
  /** In the scheduler's order; no request appears twice. */
  readonly scheduled: readonly ScheduledRequest[];
  /** Sum of tokenIds lengths, ≤ max_num_batched_tokens. */
  readonly numScheduledTokens: number;
  /** Requests finished, aborted or preempted since the previous plan: runners release per-request state. */
  readonly releasedRequestIds: readonly string[];
  /**
   * [source, destination] block pairs to copy before the step (copy-on-write of a shared partial
   * block). Always empty while parallel sampling is done by separate requests; kept so the
   * runner contract does not change when it is not.
   */
  readonly blocksToCopy: readonly (readonly [number, number])[];
}

// ---------------------------------------------------------------------------------------------
// Runner → scheduler

export interface TopLogprob {
  readonly tokenId: number;
  /** Natural log. */
  readonly logprob: number;
}

export interface TokenLogprob {
  readonly tokenId: number;
  readonly logprob: number;
  /** The most likely alternatives, best first, SamplingParams.topLogprobs long. */
  readonly top: readonly TopLogprob[];
}

/** A prompt token's logprob under the model's raw distribution at the position before it. */
export interface PromptTokenLogprob extends TokenLogprob {
  /** 1 + the number of tokens the model found more likely (vLLM's rank). */
  readonly rank: number;
}

/** The tokens sampled for one request whose ScheduledRequest had `sample: true`. */
export interface SampledTokens {
  readonly requestId: string;
  /** Usually one id; more with speculative decoding. */
  readonly tokenIds: readonly number[];
  /** Aligned with tokenIds; null when the request did not ask for logprobs. */
  readonly logprobs: readonly TokenLogprob[] | null;
  /** True when the last token completed the request's grammar: it finishes with "stop". */
  readonly grammarEnded?: boolean;
}

export interface StepResult {
  readonly stepId: number;
  /** One entry per sampled request of the plan, any order. */
  readonly sampled: readonly SampledTokens[];
}

// ---------------------------------------------------------------------------------------------
// Engine → main thread (one message per step)

/** OpenAI's finish reasons that the engine produces ("stop" covers EOS, stop tokens and stop strings). */
export type FinishReason = 'stop' | 'length' | 'abort';

/** One request's news in a step. Requests with nothing new (mid-prefill) get no update. */
export interface SequenceUpdate {
  readonly requestId: string;
  /** Tokens appended this step, including an EOS/stop token that finished the request. */
  readonly newTokenIds: readonly number[];
  /** Aligned with newTokenIds; null when not requested. */
  readonly logprobs: readonly TokenLogprob[] | null;
  /**
   * With GenerateRequest.promptLogprobs, on the request's first update: one entry per prompt
   * token, the first null (nothing precedes it). Absent otherwise.
   */
  readonly promptLogprobs?: readonly (PromptTokenLogprob | null)[];
  /** Null while the request continues. */
  readonly finishReason: FinishReason | null;
  /** The EOS or stop_token_ids id that finished the request (output processors hide it); null otherwise. */
  readonly stopTokenId: number | null;
  readonly numPromptTokens: number;
  /** Output tokens so far, including newTokenIds. */
  readonly numOutputTokens: number;
  /** Prompt tokens served from the prefix cache at first admission (usage.prompt_tokens_details.cached_tokens). */
  readonly numCachedTokens: number;
  /** Times the request was preempted (and recomputed) so far. */
  readonly numPreemptions: number;
  /** Speculative decoding so far: verify steps with proposals, tokens proposed, and of those accepted; absent while it has proposed none. */
  readonly specDecode?: RequestSpecDecode;
  /**
   * When the engine worker received the request, ms on the engine clock. The worker stamps it, not
   * the front end, so queue time and TTFT are differences of one clock.
   */
  readonly arrivalTimeMs: number;
  /** First time the request was scheduled, ms on the engine clock; null if it never was (aborted while waiting). */
  readonly scheduledTimeMs: number | null;
  /** When its first output token was applied, ms; null before that. */
  readonly firstTokenTimeMs: number | null;
}

/** One request's speculative decoding counts, cumulative. */
export interface RequestSpecDecode {
  readonly numDrafts: number;
  readonly numDraftTokens: number;
  readonly numAcceptedTokens: number;
}

/** A step's speculative decoding (vLLM's spec_decode metrics): drafts checked, tokens proposed and accepted, and accepted by position in the draft. */
export interface StepSpecDecode extends RequestSpecDecode {
  /** acceptedPerPosition[i]: drafts whose proposal i (0-based) was accepted. */
  readonly acceptedPerPosition: readonly number[];
}

/** A request the engine refused after accepting it from the queue (e.g. it can never fit in the KV cache). */
export interface RequestRejection {
  readonly requestId: string;
  /** A code of src/errors.ts's catalog (kept as a string: contracts import nothing outside contracts/). */
  readonly code: string;
  readonly message: string;
}

/** Point-in-time engine counters for metrics; counters are cumulative since start. */
export interface EngineStats {
  readonly numRunning: number;
  readonly numWaiting: number;
  /** Blocks in use / total, 0..1 (vllm:kv_cache_usage_perc); evictable cached blocks count as free. */
  readonly kvCacheUsage: number;
  readonly numTotalBlocks: number;
  readonly numFreeBlocks: number;
  /** Prompt tokens looked up in the prefix cache at admission (vllm:prefix_cache_queries). */
  readonly prefixCacheQueries: number;
  /** Of those, tokens found cached (vllm:prefix_cache_hits). */
  readonly prefixCacheHits: number;
  readonly numPreemptions: number;
}

export interface StepOutput {
  readonly stepId: number;
  /** When the step's tokens were applied, ms on the engine clock: every token's timestamp. */
  readonly timeMs: number;
  readonly updates: readonly SequenceUpdate[];
  readonly rejections: readonly RequestRejection[];
  readonly stats: EngineStats;
  /**
   * Grammar masks computed for this step: how many, the grammar worker's time on them, and how
   * long the engine waited for the worker after its forward pass (ms); absent when no row had a grammar.
   */
  /** Speculative decoding in this step; absent when no row had proposals. */
  readonly specDecode?: StepSpecDecode;
  readonly grammarMasks?: {
    readonly count: number;
    readonly ms: number;
    readonly waitMs: number;
    /** Greedy rows whose unmasked candidates were tried on their matcher first, and the ones whose grammar took none (then masked and chosen again). */
    readonly tried: number;
    readonly refused: number;
  };
}
