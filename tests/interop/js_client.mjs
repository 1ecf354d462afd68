// Interop check: the `@a2a-js/sdk` client (npm) drives the Signoff demo agent end to end.
//
// One run checks one A2A version (`--version 0.3` or `--version 1.0`) against a fresh server:
// agent card, a streamed chat with a tool call, tasks/get, and the approval flow (input-required
// with the interrupt DataPart, the approve decision on the same task, completed, the file written).
// Every passing check prints `interop ok: <what>`; the first failure prints what was expected and
// what came, and exits 1. Run by tests/interop/run.sh after `npm ci`.

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';

import { Role, taskStateToJSON } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';

// The SDK's exports map hides its package.json, so read the installed copy for the label.
const SDK = `@a2a-js/sdk ${JSON.parse(readFileSync(new URL('./node_modules/@a2a-js/sdk/package.json', import.meta.url), 'utf8')).version}`;
const AGENT_PATH = '/api/a2a/default/demo';
const CARD_PATH = '/.well-known/agent-card.json';
const STEP_TIMEOUT_MS = 60_000;

class CheckFailed extends Error {
  constructor(what, expected, got) {
    super(what);
    this.what = what;
    this.expected = expected;
    this.got = got;
  }
}

function check(cond, what, expected, got) {
  if (!cond) throw new CheckFailed(what, expected, got);
}

const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    version: { type: 'string' },
    sandbox: { type: 'string' },
  },
});
if (!args.base || !['0.3', '1.0'].includes(args.version)) {
  console.error('usage: node js_client.mjs --base http://127.0.0.1:PORT --version 0.3|1.0 [--sandbox DIR]');
  process.exit(2);
}
const base = args.base.replace(/\/+$/, '');
const version = args.version;
const sandbox = args.sandbox;
const label = `node ${SDK} v${version}`;
const ok = (what) => console.log(`interop ok: ${label}: ${what}`);
// What the client is doing, for the failure line when the SDK itself throws.
let doing = 'starting';

// ---- agent card -----------------------------------------------------------------------------

async function rawCard(url, v1) {
  doing = `GET ${url}`;
  const resp = await fetch(url, { headers: v1 ? { 'A2A-Version': '1.0' } : {} });
  const body = await resp.text();
  check(resp.status === 200, `GET ${url} status`, 200, `${resp.status} ${body.slice(0, 300)}`);
  const card = JSON.parse(body);
  check(card && typeof card === 'object' && !Array.isArray(card), `GET ${url} is a JSON object`, 'object', card);
  return card;
}

async function makeClient() {
  const agentBase = base + AGENT_PATH;
  let client;
  let card;
  if (version === '0.3') {
    // A v0.3 client reads the card's v0.3 fields. The SDK's resolver lets `supportedInterfaces`
    // win when a card has both shapes, so we hand the SDK the card as a v0.3-only peer sees it
    // (the same JSON without the v1.0 field), parsed by the SDK's own v0.3 card reader; with
    // legacyCompat on, its JSON-RPC factory then picks the v0.3 transport.
    const raw = await rawCard(agentBase + CARD_PATH, false);
    check(raw.protocolVersion === '0.3.0', 'v0.3 card field protocolVersion', '0.3.0', raw.protocolVersion);
    check(raw.preferredTransport === 'JSONRPC', 'v0.3 card field preferredTransport', 'JSONRPC', raw.preferredTransport);
    check(String(raw.url ?? '').replace(/\/+$/, '') === agentBase, 'v0.3 card field url', agentBase, raw.url);
    check(raw.capabilities?.streaming === true, 'card capabilities.streaming', true, raw.capabilities);
    const legacy = { ...raw };
    delete legacy.supportedInterfaces;
    card = parseLegacyAgentCard(legacy);
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
    });
    doing = 'creating the client from the v0.3 card';
    client = await factory.createFromAgentCard(card);
    ok(`agent card at ${AGENT_PATH}${CARD_PATH} read as a v0.3 card (${card.name})`);
  } else {
    // The SDK's own discovery: it asks with `A2A-Version: 1.0` and picks the interface.
    const factory = new ClientFactory();
    // The full card URL with an empty path: the resolver resolves its default relative path
    // against the base URL, which would drop the agent's last path segment.
    doing = 'resolving the agent card with the SDK';
    client = await factory.createFromUrl(agentBase + CARD_PATH, '');
    card = await client.getAgentCard();
    const ifaces = card.supportedInterfaces ?? [];
    check(
      ifaces.some(
        (i) =>
          ['1.0', '1.0.0'].includes(i.protocolVersion) &&
          i.protocolBinding === 'JSONRPC' &&
          i.url.replace(/\/+$/, '') === agentBase,
      ),
      'v1.0 card supportedInterfaces has JSONRPC 1.0 at the agent URL',
      { url: agentBase, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ifaces,
    );
    check(card.capabilities?.streaming === true, 'card capabilities.streaming', true, card.capabilities);
    // What the SDK was served must be a strict v1.0 card: the schema allows no v0.3 field.
    const raw = await rawCard(agentBase + CARD_PATH, true);
    const stray = ['url', 'protocolVersion', 'preferredTransport', 'additionalInterfaces'].filter((k) => k in raw);
    check(stray.length === 0, 'v1.0 card (A2A-Version: 1.0) has no v0.3 field', [], stray);
    ok(`agent card at ${AGENT_PATH}${CARD_PATH} resolved by the SDK (${card.name})`);
  }
  // (The class names are mangled by the SDK's bundler, so ask the transport what it speaks.)
  const transport = `${client.transport.protocolName} ${client.transport.protocolVersion}`;
  const wantTransport = `JSONRPC ${version}`;
  check(transport === wantTransport, 'SDK transport chosen from the card', wantTransport, transport);

  // The origin's well-known card (one-agent-per-origin convention) describes the same agent.
  const origin = await rawCard(base + CARD_PATH, version === '1.0');
  check(origin.name === card.name, "origin card names the default agent", card.name, origin.name);
  ok(`origin card ${CARD_PATH} is the default agent's`);
  return client;
}

// ---- streaming ------------------------------------------------------------------------------

function withTimeout(promise, what, partial) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new CheckFailed(what, `done within ${STEP_TIMEOUT_MS / 1000} s`, partial?.())),
      STEP_TIMEOUT_MS,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function stream(client, message, what) {
  doing = `streaming ${what}`;
  const events = [];
  const collect = (async () => {
    for await (const ev of client.sendMessageStream({ tenant: '', message, configuration: undefined, metadata: undefined })) {
      events.push(ev);
    }
  })();
  await withTimeout(collect, 'stream ends', () => summarize(events));
  check(events.length > 0, 'stream has events', 'at least one event', events);
  return events;
}

async function getTask(client, id) {
  doing = `tasks/get ${id}`;
  return withTimeout(client.getTask({ tenant: '', id, historyLength: 50 }), 'tasks/get answers');
}

// ---- helpers over the SDK's model (ts-proto objects) --------------------------------------

function userMessage(parts, taskId = '', contextId = '') {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
const textPart = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const dataPart = (value) => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: '' });

const textsOf = (parts = []) => parts.filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
const dataPartsOf = (parts = [], kagentType) =>
  parts
    .filter((p) => p.content?.$case === 'data' && p.metadata?.kagent_type === kagentType)
    .map((p) => p.content.value);
const interruptOf = (message) => dataPartsOf(message?.parts, 'interrupt_data')[0];
const stateName = (status) => (status ? taskStateToJSON(status.state) : undefined);

function responseText(v) {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(responseText).join('');
  if (v && typeof v === 'object') return Object.values(v).map(responseText).join('');
  return '';
}

// What a stream said: ids, states in order, tool calls and results, the streamed answer.
function summarize(events) {
  const s = {
    taskIds: [],
    contextIds: [],
    states: [],
    calls: [],
    results: [],
    chunks: new Map(),
    artifactUpdates: 0,
    finalMessage: undefined,
    lastStatusEvent: undefined,
  };
  const note = (tid, cid) => {
    if (tid && !s.taskIds.includes(tid)) s.taskIds.push(tid);
    if (cid && !s.contextIds.includes(cid)) s.contextIds.push(cid);
  };
  const noteMessage = (m) => {
    s.calls.push(...dataPartsOf(m?.parts, 'function_call'));
    s.results.push(...dataPartsOf(m?.parts, 'function_response'));
  };
  for (const ev of events) {
    const p = ev.payload;
    if (!p) continue;
    if (p.$case === 'task') {
      note(p.value.id, p.value.contextId);
      s.states.push(stateName(p.value.status));
      s.finalMessage = p.value.status?.message;
    } else if (p.$case === 'statusUpdate') {
      note(p.value.taskId, p.value.contextId);
      s.states.push(stateName(p.value.status));
      noteMessage(p.value.status?.message);
      s.finalMessage = p.value.status?.message;
      s.lastStatusEvent = p.value;
    } else if (p.$case === 'artifactUpdate') {
      note(p.value.taskId, p.value.contextId);
      const art = p.value.artifact ?? {};
      const text = textsOf(art.parts).join('');
      const prev = s.chunks.get(art.artifactId) ?? '';
      s.chunks.set(art.artifactId, p.value.append ? prev + text : text);
      s.artifactUpdates += 1;
    } else if (p.$case === 'message') {
      note(p.value.taskId, p.value.contextId);
      noteMessage(p.value);
    }
  }
  s.finalState = s.states.at(-1);
  s.text = [...s.chunks.values()].join('');
  delete s.chunks;
  return s;
}

// ---- scenarios ------------------------------------------------------------------------------

async function chatWithTool(client) {
  const events = await stream(client, userMessage([textPart('read readme.txt')]), "'read readme.txt'");
  const s = summarize(events);
  check(s.taskIds.length === 1, 'one task id in the stream', 'exactly one', s.taskIds);
  check(s.contextIds.length === 1, 'one context id in the stream', 'exactly one', s.contextIds);
  check(s.finalState === 'TASK_STATE_COMPLETED', 'chat ends completed', 'TASK_STATE_COMPLETED', s);
  check(s.states.includes('TASK_STATE_WORKING'), 'chat goes through working', 'TASK_STATE_WORKING', s.states);
  ok("streamed chat 'read readme.txt' ends completed");

  const calls = s.calls.filter((c) => c.name === 'read_file');
  check(calls.length === 1, 'one read_file function_call DataPart', 1, s.calls);
  check(calls[0].args?.path === 'readme.txt', 'read_file args.path', 'readme.txt', calls[0].args);
  const results = s.results.filter((r) => r.name === 'read_file');
  check(results.length === 1, 'one read_file function_response DataPart', 1, s.results);
  check(results[0].id === calls[0].id, 'function_response id = function_call id', calls[0].id, results[0].id);
  const response = results[0].response;
  check(response && typeof response === 'object' && !response.isError, 'read_file result is not an error', 'response without isError', response);
  check(responseText(response) !== '', "read_file result has the file's text", 'non-empty text', response);
  if (sandbox) {
    const readme = readFileSync(join(sandbox, 'readme.txt'), 'utf8');
    check(responseText(response).includes(readme), "read_file result holds readme.txt's content", readme, response);
  }
  ok('streamed read_file function_call and function_response DataParts');

  check(s.artifactUpdates >= 2, 'answer streams in several artifact chunks', '>= 2 artifact-update events', s.artifactUpdates);
  check(s.text.trim() !== '', 'streamed answer text', 'non-empty', s.text);
  ok(`streamed answer text in ${s.artifactUpdates} chunks`);

  const [taskId] = s.taskIds;
  const task = await getTask(client, taskId);
  check(task.id === taskId, 'tasks/get id', taskId, task.id);
  check(task.contextId === s.contextIds[0], 'tasks/get contextId', s.contextIds[0], task.contextId);
  check(stateName(task.status) === 'TASK_STATE_COMPLETED', 'tasks/get state', 'TASK_STATE_COMPLETED', stateName(task.status));
  const historyTexts = (task.history ?? []).flatMap((m) => textsOf(m.parts));
  check(historyTexts.includes('read readme.txt'), "tasks/get history holds the user's message", 'read readme.txt', historyTexts);
  const stored = (task.artifacts ?? []).flatMap((a) => textsOf(a.parts)).join('');
  check(stored === s.text, 'tasks/get artifacts = the streamed answer', s.text, stored);
  ok('tasks/get returns the completed task with history and the answer artifact');
}

async function approvalFlow(client) {
  const events = await stream(client, userMessage([textPart('write a.txt: hi and delete old.txt')]), "'write a.txt: hi and delete old.txt'");
  const s = summarize(events);
  check(s.finalState === 'TASK_STATE_INPUT_REQUIRED', 'turn pauses for approval', 'TASK_STATE_INPUT_REQUIRED', s);
  check(s.taskIds.length === 1 && s.contextIds.length === 1, 'one task and context', 'one each', s);
  const [taskId] = s.taskIds;
  const [contextId] = s.contextIds;
  check(
    s.lastStatusEvent?.metadata?.interrupt_type === 'tool_approval',
    'final status-update metadata.interrupt_type',
    'tool_approval',
    s.lastStatusEvent?.metadata,
  );
  const interrupt = interruptOf(s.finalMessage);
  check(interrupt !== undefined, 'input-required message has an interrupt_data DataPart', 'DataPart with metadata kagent_type=interrupt_data', s.finalMessage);
  check(interrupt.interrupt_type === 'tool_approval', 'interrupt_type', 'tool_approval', interrupt);
  const requests = interrupt.action_requests ?? [];
  const got = requests.map((r) => [r.name, r.args]);
  const want = [
    ['write_file', { path: 'a.txt', content: 'hi' }],
    ['delete_file', { path: 'old.txt' }],
  ];
  check(isDeepStrictEqual(got, want), 'action_requests (one batch: write then delete)', want, got);
  check(requests.every((r) => r.id), 'each action request has an id', 'ids', requests);
  check(s.results.length === 0, 'no held call ran before a decision', 'no function_response', s.results);
  if (sandbox) {
    check(!existsSync(join(sandbox, 'a.txt')), 'a.txt not written before approval', 'absent', 'present');
    check(existsSync(join(sandbox, 'old.txt')), 'old.txt not deleted before approval', 'present', 'absent');
  }
  ok("'write a.txt: hi and delete old.txt' ends input-required with the interrupt DataPart");

  let task = await getTask(client, taskId);
  check(stateName(task.status) === 'TASK_STATE_INPUT_REQUIRED', 'tasks/get on the paused task', 'TASK_STATE_INPUT_REQUIRED', stateName(task.status));
  const paused = interruptOf(task.status?.message);
  check(isDeepStrictEqual(paused, interrupt), 'tasks/get status message holds the same interrupt', interrupt, paused);
  ok('tasks/get shows the paused task with the same pending batch');

  const decision = userMessage([dataPart({ decision_type: 'approve' }), textPart('Approved')], taskId, contextId);
  const r = summarize(await stream(client, decision, 'the approve decision on the paused task'));
  check(isDeepStrictEqual(r.taskIds, [taskId]), 'resume continues the same task', [taskId], r.taskIds);
  check(r.finalState === 'TASK_STATE_COMPLETED', 'resumed task completes', 'TASK_STATE_COMPLETED', r);
  for (const req of requests) {
    const res = r.results.find((x) => x.id === req.id);
    check(res !== undefined, `function_response for ${req.name} (${req.id})`, 'present', r.results);
    check(res.name === req.name, 'function_response name', req.name, res.name);
    check(res.response && typeof res.response === 'object' && !res.response.isError, `${req.name} succeeded`, 'response without isError', res.response);
  }
  ok('approve decision on the same task resumes it: both calls ran, task completed');

  if (sandbox) {
    const a = join(sandbox, 'a.txt');
    check(existsSync(a) && statSync(a).isFile(), 'a.txt in the sandbox', a, 'missing');
    check(readFileSync(a, 'utf8') === 'hi', 'a.txt content', 'hi', readFileSync(a, 'utf8'));
    check(!existsSync(join(sandbox, 'old.txt')), 'old.txt deleted from the sandbox', 'absent', 'present');
    ok(`sandbox has a.txt = 'hi' and no old.txt (${sandbox})`);
  }

  task = await getTask(client, taskId);
  check(stateName(task.status) === 'TASK_STATE_COMPLETED', 'tasks/get after the resume', 'TASK_STATE_COMPLETED', stateName(task.status));
  ok('tasks/get shows the resumed task completed');
}

function show(v) {
  const text = JSON.stringify(v, (_k, x) => (x instanceof Map ? Object.fromEntries(x) : x));
  return text === undefined ? String(v) : text.length <= 4000 ? text : `${text.slice(0, 4000)} …`;
}

try {
  const client = await makeClient();
  await chatWithTool(client);
  await approvalFlow(client);
} catch (e) {
  if (e instanceof CheckFailed) {
    console.error(`interop FAIL: ${label}: ${e.what}`);
    console.error(`  expected: ${show(e.expected)}`);
    console.error(`  got:      ${show(e.got)}`);
  } else {
    console.error(`interop FAIL: ${label}: ${doing}`);
    console.error('  expected: the SDK call to succeed');
    console.error(`  got:      ${e?.name ?? 'Error'}: ${e?.message ?? e}`);
    if (process.env.INTEROP_DEBUG) console.error(e);
  }
  process.exit(1);
}
