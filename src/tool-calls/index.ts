// Tool calling on the text side (main thread): each model family's call format, the parsers
// (whole text and streaming), the choice of parser from a chat template (auto), and the grammar
// that tool_choice required / named constrains generation with.

export { hermes, llama3Json, mistral, type CallBlocks, type ParsedOutput, type ToolCallFormat } from './formats.js';
export { pythonic, toolCode } from './pythonic.js';
export { deepseekV3 } from './deepseek.js';
export { detectToolCallParser, isToolCallParserName, TOOL_CALL_FORMATS, type ToolCallParserName } from './parsers.js';
export { newToolCallId, parseToolCalls, ToolCallStream, type ParsedMessage, type ParseOptions, type ToolCall, type ToolCallDelta } from './stream.js';
export { constrainedToolCalls, requiredFraming, toolCallsSpec, type ConstrainedToolCalls } from './constrained.js';
