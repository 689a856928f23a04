// One call through modelproxy with an official SDK, as a user's code makes
// it, for tests/integration/sdk_test.cpp:
//   node check.cjs SCENARIO PROXY_URL
// (NODE_PATH names the node_modules tests/sdk/install filled). Prints one
// JSON line: {"text": answer text received, "error": null or what the SDK
// threw: {"name", "status", "message", "apiMessage", "type", "code"}}, and
// for the resume scenarios the final message's "id" and "tools" ({id, name,
// arguments} per tool call or tool_use block).
// The SDKs keep their default retries: the proxy's `x-should-retry: false`
// is what must stop them. Exit 0 whenever the line was printed.
'use strict';

const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');

const [scenario, proxyUrl] = process.argv.slice(2);
if (!scenario || !proxyUrl) {
  console.error('usage: node check.cjs SCENARIO PROXY_URL');
  process.exit(2);
}

// The OpenAI SDK takes the base URL with /v1, the Anthropic SDK without.
const openai = () => new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: 'sk-client-side', timeout: 20000 });
const anthropic = () => new Anthropic({ baseURL: proxyUrl, apiKey: 'sk-ant-client-side', timeout: 20000 });
const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello.' }] };
const message = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello.' }] };

const scenarios = {
  async 'openai-chat'(out) {
    const answer = await openai().chat.completions.create(chat);
    out.text = answer.choices[0].message.content;
  },
  async 'openai-stream'(out) {
    const stream = await openai().chat.completions.create({ ...chat, stream: true });
    for await (const chunk of stream) out.text += chunk.choices[0]?.delta?.content ?? '';
  },
  async 'anthropic-message'(out) {
    const answer = await anthropic().messages.create(message);
    out.text = answer.content.map((block) => block.text ?? '').join('');
  },
  async 'anthropic-stream'(out) {
    const stream = await anthropic().messages.create({ ...message, stream: true });
    for await (const event of stream) {
      if (event.type === 'content_block_delta') out.text += event.delta.text ?? '';
    }
  },
  // The SDKs' own stream helpers, which build the final message from the
  // deltas (concatenating strings per choice and tool call, per content
  // block): a stream the proxy continued from a replay (docs/behaviour.md
  // section 16) must build the uncut message exactly once.
  async 'openai-resume'(out) {
    const final = await openai().chat.completions.stream({ ...chat, temperature: 0 }).finalChatCompletion();
    const message = final.choices[0].message;
    out.text = message.content ?? '';
    out.id = final.id;
    out.tools = (message.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments }));
  },
  async 'anthropic-resume'(out) {
    const final = await anthropic().messages.stream({ ...message, temperature: 0 }).finalMessage();
    out.text = final.content.map((block) => block.text ?? '').join('');
    out.id = final.id;
    out.tools = final.content
      .filter((block) => block.type === 'tool_use')
      .map((block) => ({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) }));
  },
};
// A cut stream and a failed call run as the plain ones do: what differs is
// what the fake provider answers.
scenarios['openai-cut'] = scenarios['openai-stream'];
scenarios['openai-error'] = scenarios['openai-chat'];
scenarios['anthropic-cut'] = scenarios['anthropic-stream'];
scenarios['anthropic-error'] = scenarios['anthropic-message'];

(async () => {
  const run = scenarios[scenario];
  if (!run) {
    console.error(`check.cjs: no scenario ${scenario}`);
    process.exit(2);
  }
  const out = { text: '', error: null };
  try {
    await run(out);
  } catch (e) {
    out.error = {
      name: e?.constructor?.name ?? typeof e,
      status: e?.status ?? null,
      message: String(e?.message ?? e),
      apiMessage: e?.apiMessage ?? e?.error?.message ?? null,
      type: e?.type ?? e?.error?.type ?? null,
      code: e?.code ?? e?.error?.code ?? null,
    };
  }
  console.log(JSON.stringify(out));
})();
