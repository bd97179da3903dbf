// The official OpenAI Node SDK against a Turnpike AI API (driven by
// crates/turnpike/tests/ai_node_e2e.rs): a chat call, a streamed chat call (each
// chunk's arrival recorded as the SDK yields it), a tool call and its result, and a
// refusal in OpenAI's error shape. Prints one JSON object.
//
// usage: node chat.mjs BASE_URL API_KEY MODEL
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const out = {};

const chat = await client.chat.completions.create({
  model, max_tokens: 32, messages: [{ role: "user", content: "Say hello to Turnpike" }],
});
out.chat = {
  content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason,
  prompt: chat.usage?.prompt_tokens, completion: chat.usage?.completion_tokens,
};

const stream = await client.chat.completions.create({
  model, max_tokens: 32, stream: true, stream_options: { include_usage: true },
  messages: [{ role: "user", content: "lorem 12" }],
});
const arrivals = [];
const text = [];
let total = null;
for await (const chunk of stream) {
  arrivals.push(performance.now());
  const delta = chunk.choices[0]?.delta?.content;
  if (delta) text.push(delta);
  if (chunk.usage) total = chunk.usage.total_tokens;
}
out.stream = { chunks: arrivals.length, pieces: text.length, text: text.join(""), total,
  spreadMs: arrivals.length ? arrivals[arrivals.length - 1] - arrivals[0] : 0 };

const tools = [{ type: "function", function: { name: "get_weather", description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const ask = { role: "user", content: "Weather in Oslo?" };
const called = await client.chat.completions.create({ model, max_tokens: 64, tools, messages: [ask] });
const call = called.choices[0].message.tool_calls?.[0];
out.tool_call = { finish: called.choices[0].finish_reason, name: call?.function.name,
  arguments: call ? JSON.parse(call.function.arguments) : null };
if (call) {
  const answered = await client.chat.completions.create({ model, max_tokens: 64, tools, messages: [
    ask, { role: "assistant", content: null, tool_calls: [call] },
    { role: "tool", tool_call_id: call.id, content: "snow, -3 C" }] });
  out.tool_result = { content: answered.choices[0].message.content };
}

try {
  await client.chat.completions.create({ model: "no-such-model", messages: [ask] });
} catch (e) {
  out.error = { status: e.status, type: e.error?.type, message: e.error?.message };
}
console.log(JSON.stringify(out));
