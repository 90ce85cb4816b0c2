// The conversations of the chat-template parity corpus (test/integration/chat-template-parity.test.ts),
// as OpenAI chat clients send them: system and developer messages, multi-turn, tools, assistant
// tool calls (arguments as JSON text, content null beside them, parallel calls), tool results,
// reasoning_content, non-ASCII text. Each is rendered by Conveyor and by transformers.

export interface CorpusConversation {
  readonly name: string;
  readonly messages: readonly Record<string, unknown>[];
  readonly tools: readonly Record<string, unknown>[] | null;
}

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] },
  },
};
const TIME = {
  type: 'function',
  function: { name: 'get_time', description: 'The local time in a timezone.', parameters: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] } },
};
const SEARCH = {
  type: 'function',
  function: {
    name: 'search_docs',
    description: 'Search the documentation; returns the best passages.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        filters: { type: 'object', properties: { lang: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } } },
        limit: { type: 'integer', minimum: 1 },
      },
      required: ['query'],
    },
  },
};
const NO_ARGS = { type: 'function', function: { name: 'list_files', description: 'Lists the files.', parameters: { type: 'object', properties: {} } } };

const call = (id: string, name: string, args: object) => ({ id, type: 'function', function: { name, arguments: JSON.stringify(args) } });
const user = (content: string) => ({ role: 'user', content });
const assistant = (content: string | null, extra: Record<string, unknown> = {}) => ({ role: 'assistant', content, ...extra });
const tool = (id: string, content: string) => ({ role: 'tool', tool_call_id: id, content });
const system = (content: string) => ({ role: 'system', content });
const developer = (content: string) => ({ role: 'developer', content });

const weatherCall = call('call_w1', 'get_weather', { city: 'Paris', unit: 'celsius' });
const timeCall = call('call_t1', 'get_time', { timezone: 'Europe/Paris' });

const conversation = (name: string, messages: readonly Record<string, unknown>[], tools: readonly Record<string, unknown>[] | null = null): CorpusConversation => ({ name, messages, tools });

export const CHAT_CORPUS: readonly CorpusConversation[] = [
  conversation('one user message', [user('Hello!')]),
  conversation('system and user', [system('You are a helpful assistant.'), user('What is the capital of France?')]),
  conversation('developer and user', [developer('Answer in one word.'), user('What is the capital of France?')]),
  conversation('multi-turn', [user('Hi, who are you?'), assistant('I am an assistant.'), user('What can you do?')]),
  conversation('system and multi-turn', [system('Be terse.'), user('2+2?'), assistant('4'), user('And 3+3?'), assistant('6'), user('And 4+4?')]),
  conversation('developer and multi-turn', [developer('Reply in French.'), user('Good morning'), assistant('Bonjour'), user('How are you?')]),
  conversation('system then developer', [system('You are a travel agent.'), developer('Never book flights.'), user('Book me a flight to Rome.')]),
  conversation('two system messages', [system('Rule one: be kind.'), system('Rule two: be brief.'), user('Hi')]),
  conversation('tools listed', [user('What is the weather in Paris?')], [WEATHER]),
  conversation('system and tools', [system('You can look up weather and time.'), user('Weather in Paris and time there?')], [WEATHER, TIME]),
  conversation('developer and tools', [developer('Use tools when they help.'), user('What time is it in Tokyo?')], [TIME]),
  conversation('tool with nested schema', [user('Find the docs about streaming.')], [SEARCH, NO_ARGS]),
  conversation('one tool call, null content', [user('Weather in Paris?'), assistant(null, { tool_calls: [weatherCall] }), tool('call_w1', '{"temp": 18, "sky": "cloudy"}')], [WEATHER]),
  conversation(
    'parallel tool calls, null content',
    [user('Weather and time in Paris?'), assistant(null, { tool_calls: [weatherCall, timeCall] }), tool('call_w1', '{"temp": 18}'), tool('call_t1', '"14:05"')],
    [WEATHER, TIME],
  ),
  conversation('tool call with content', [user('Weather in Paris?'), assistant('Let me check.', { tool_calls: [weatherCall] }), tool('call_w1', '{"temp": 18}')], [WEATHER]),
  conversation(
    'tool call, answer, follow-up',
    [user('Weather in Paris?'), assistant(null, { tool_calls: [weatherCall] }), tool('call_w1', '{"temp": 18}'), assistant('It is 18 °C in Paris.'), user('And in Lyon?')],
    [WEATHER],
  ),
  conversation(
    'two rounds of tool calls',
    [
      user('Weather in Paris, then the time there.'),
      assistant(null, { tool_calls: [weatherCall] }),
      tool('call_w1', '{"temp": 18}'),
      assistant(null, { tool_calls: [timeCall] }),
      tool('call_t1', '"14:05"'),
    ],
    [WEATHER, TIME],
  ),
  conversation(
    'tool call with nested arguments',
    [
      user('Search streaming docs in English tagged sse.'),
      assistant(null, { tool_calls: [call('call_s1', 'search_docs', { query: 'streaming', filters: { lang: 'en', tags: ['sse', 'http'] }, limit: 3 })] }),
      tool('call_s1', '["SSE framing", "chunked transfer"]'),
    ],
    [SEARCH],
  ),
  conversation('tool call with no arguments', [user('List the files.'), assistant(null, { tool_calls: [call('call_l1', 'list_files', {})] }), tool('call_l1', 'README.md\nsrc/')], [NO_ARGS]),
  conversation('null content, no tools list', [user('Weather in Paris?'), assistant(null, { tool_calls: [weatherCall] }), tool('call_w1', '{"temp": 18}'), user('Thanks. Summarize.')]),
  conversation('reasoning content on the last turn', [user('Is 17 prime?'), assistant('Yes, 17 is prime.', { reasoning_content: 'Check divisors up to 4: 2, 3 do not divide 17.' }), user('And 21?')]),
  conversation(
    'reasoning content after the last user message',
    [user('Weather in Paris?'), assistant(null, { reasoning_content: 'I should call the weather tool.', tool_calls: [weatherCall] }), tool('call_w1', '{"temp": 18}')],
    [WEATHER],
  ),
  conversation('reasoning content in history', [
    user('Think: 6*7?'),
    assistant('42', { reasoning_content: '6*7 = 42.' }),
    user('Now 7*8?'),
    assistant('56', { reasoning_content: '7*8 = 56.' }),
    user('Thanks!'),
  ]),
  conversation('non-ASCII text', [
    system('Réponds en français, s’il te plaît.'),
    user('你好，世界！今天天气怎么样？🌤️'),
    assistant('Très bien ! ☀️ Il fait beau.'),
    user('Ελληνικά και русский тоже? 👍🏽'),
  ]),
  conversation(
    'non-ASCII tool arguments',
    [user('Météo à Zürich ?'), assistant(null, { tool_calls: [call('call_z1', 'get_weather', { city: 'Zürich – Kreis 1', unit: 'celsius' })] }), tool('call_z1', '{"ciel": "nuageux ☁️", "temp": 12}')],
    [WEATHER],
  ),
  conversation('padded whitespace content', [system('  Keep spaces?  \n'), user('\n\n  Trim me, maybe.  \n'), assistant('  Sure.  '), user('ok\n')]),
  conversation('code and newlines', [user('Fix this:\n```python\ndef f(x):\n\treturn x +\n```'), assistant('```python\ndef f(x):\n    return x + 1\n```'), user('Why the tab?')]),
  conversation('empty assistant content', [user('Say nothing.'), assistant(''), user('Now say hi.')]),
  conversation('ends with an assistant turn', [user('Start a story.'), assistant('Once upon a time')]),
  conversation('user message only with tools, no system', [user('Any tools?')], [NO_ARGS]),
  conversation('developer mid-conversation', [user('Hi'), assistant('Hello!'), developer('From now on, answer in German.'), user('How are you?')]),
  conversation('tool result only, then generation', [system('Tools are available.'), user('Time in Paris?'), assistant(null, { tool_calls: [timeCall] }), tool('call_t1', '"14:05"')], [TIME]),
];
