// How a response's generated text is read into output parts as it streams: the shared
// assistant-output reader (src/assistant-output) splits the model's thinking block off first
// (its reasoning_parser), then reads the answer's function calls through the tool plan's format
// (the model's tool_call_parser, or the constraint's under tool_choice required / named).

import { AssistantOutputStream } from '../../src/assistant-output/index.js';
import type { GenerationEvent, ProcessedRequest } from '../../src/contracts/text-generation.js';
import type { LlmModel } from '../../src/serving/llm-backend.js';
import type { ChatToolPlan } from '../../src/server/kit/tool-plan.js';
import type { OutputPart } from './output-events.js';

export class OutputReader {
  private readonly stream: AssistantOutputStream;

  constructor(model: LlmModel, prepared: ProcessedRequest, plan: ChatToolPlan) {
    this.stream = new AssistantOutputStream({ reasoning: model.reasoningOf(prepared), toolCalls: plan.format, maxCalls: plan.maxCalls });
  }

  /** The parts an engine event adds; its last event releases whatever was held back. */
  push(event: GenerationEvent): OutputPart[] {
    const parts: OutputPart[] = this.stream.push(event.text);
    if (event.finishReason !== null) parts.push(...this.stream.finish());
    return parts;
  }
}
