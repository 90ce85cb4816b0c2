// Tool calling on the text side (main thread): each model family's call format, the parsers
// (whole text and streaming), and the grammar that tool_choice required / named constrains
// generation with.

export { hermes, isToolCallParserName, llama3Json, mistral, TOOL_CALL_FORMATS, type ParsedOutput, type ToolCallFormat, type ToolCallParserName } from './formats.js';
export { newToolCallId, parseToolCalls, ToolCallStream, type ParsedMessage, type ParseOptions, type ToolCall, type ToolCallDelta } from './stream.js';
export { constrainedToolCalls, toolChoiceSchema, type ConstrainedToolCalls } from './constrained.js';
