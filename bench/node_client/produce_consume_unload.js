// Produce / consume / unload with Apache Pulsar's Node.js client (`pulsar-client` from npm) against bundlewise
// brokers.  Driven by bench/bench_node_client.py (docs/clients.md §6); prints one JSON line with its figures.
//
//   node produce_consume_unload.js '<config JSON>'
//
// config: {"module": where `require` finds pulsar-client, "serviceUrl": "pulsar://…", "webUrl": "http://…" (any
// broker's web port), "topic": "persistent://t/ns/name", "messages": N, "rate": messages per second,
// "brokers": [{"id": broker id, "port": its binary port}]}.
//
// A consumer subscribes (Earliest) before the first send and acknowledges what it receives; a producer (no
// batching) sends N messages at `rate`; when half are sent, the topic's bundle is unloaded to another broker
// (`PUT /admin/v2/namespaces/{t}/{ns}/{bundle}/unload?destinationBroker=…`) while sending goes on.  The run
// checks that every acknowledged send was received, counts duplicates (redeliveries), the client's reconnects
// (from its log) and the longest gap between two receipts around the unload.
'use strict';

const config = JSON.parse(process.argv[2]);
const Pulsar = require(config.module);

const LEDGER_TAG_SHIFT = 41n; // MemoryStorage's ledger ids carry the storing broker's binary port from bit 41

const created = { producer: 0, consumer: 0 };
const logLines = [];

function onLog(level, file, line, message) {
  if (/Created producer on broker/.test(message)) created.producer += 1;
  if (/Created consumer on broker/.test(message)) created.consumer += 1;
  if (level >= 2) logLines.push(`${file}:${line} ${message}`); // warnings and errors, for the report
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function topicPath(topic) {
  const [domain, rest] = topic.split('://');
  return { domain, rest, namespace: rest.split('/').slice(0, 2).join('/') };
}

async function request(method, url) {
  // Follow 307s by hand (at most 20), keeping the method, like Pulsar's admin client.
  let target = url;
  for (let hop = 0; hop < 21; hop += 1) {
    const response = await fetch(target, { method, redirect: 'manual' });
    if (response.status !== 307) return { status: response.status, text: await response.text() };
    target = response.headers.get('location');
  }
  throw new Error(`more than 20 redirects from ${url}`);
}

async function ownerPort(topic) {
  const { domain, rest } = topicPath(topic);
  const r = await request('GET', `${config.webUrl}/lookup/v2/topic/${domain}/${rest}`);
  if (r.status !== 200) throw new Error(`lookup of ${topic}: ${r.status} ${r.text}`);
  return Number(JSON.parse(r.text).brokerUrl.split(':').pop());
}

async function unload(topic) {
  const { domain, rest, namespace } = topicPath(topic);
  const bundle = await request('GET', `${config.webUrl}/lookup/v2/topic/${domain}/${rest}/bundle`);
  if (bundle.status !== 200) throw new Error(`bundle of ${topic}: ${bundle.status} ${bundle.text}`);
  const before = await ownerPort(topic);
  const destination = config.brokers.find((b) => b.port !== before);
  const url = `${config.webUrl}/admin/v2/namespaces/${namespace}/${bundle.text}/unload`
    + `?destinationBroker=${encodeURIComponent(destination.id)}`;
  const started = performance.now();
  const answer = await request('PUT', url);
  const finished = performance.now();
  if (answer.status !== 204 && answer.status !== 200) throw new Error(`unload: ${answer.status} ${answer.text}`);
  return { bundle: `${namespace}/${bundle.text}`, before, destination: destination.port, started, finished };
}

function storedBy(messageId) {
  // MessageId#toString is "(ledger,entry,partition,batchIndex)".
  return Number(BigInt(messageId.toString().match(/\d+/)[0]) >> LEDGER_TAG_SHIFT);
}

async function main() {
  Pulsar.Client.setLogHandler(onLog);
  const client = new Pulsar.Client({ serviceUrl: config.serviceUrl, operationTimeoutSeconds: 30, logLevel: 1 });
  const received = new Map(); // index -> times received
  let receivedTotal = 0;
  const consumer = await client.subscribe({
    topic: config.topic,
    subscription: 'node-client',
    subscriptionType: 'Exclusive',
    subscriptionInitialPosition: 'Earliest',
    listener: (message, c) => {
      const index = Number(message.getData().toString().slice(2));
      received.set(index, (received.get(index) || 0) + 1);
      receivedTotal += 1;
      c.acknowledge(message).catch(() => {}); // an ack lost to a reconnect only means a redelivery
    },
  });
  const producer = await client.createProducer({
    topic: config.topic,
    batchingEnabled: false,
    sendTimeoutMs: 30000,
    blockIfQueueFull: true,
  });

  const acks = []; // {index, at, by}
  const failures = [];
  const pending = [];
  let move = null;
  let moving = null;
  const start = performance.now();
  for (let i = 0; i < config.messages; i += 1) {
    const due = start + (i * 1000) / config.rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    if (i === Math.floor(config.messages / 2)) moving = unload(config.topic).then((m) => { move = m; });
    pending.push(producer.send({ data: Buffer.from(`m-${i}`) }).then(
      (id) => acks.push({ index: i, at: performance.now(), by: storedBy(id) }),
      (err) => failures.push({ index: i, error: String(err) }),
    ));
  }
  await Promise.all(pending);
  await moving;
  await producer.flush();

  const acked = new Set(acks.map((a) => a.index));
  const deadline = performance.now() + 30000;
  while ([...acked].some((i) => !received.has(i)) && performance.now() < deadline) await sleep(50);
  const after = await ownerPort(config.topic);

  const times = acks.map((a) => a.at).sort((a, b) => a - b);
  let gap = 0;
  for (let k = 1; k < times.length; k += 1) {
    if (times[k] >= move.started - 500 && times[k - 1] <= move.finished + 2000) {
      gap = Math.max(gap, times[k] - times[k - 1]);
    }
  }
  const missing = [...acked].filter((i) => !received.has(i));
  const duplicates = [...received.values()].reduce((s, n) => s + n - 1, 0);
  const storers = [...new Set(acks.map((a) => a.by))].sort();
  await consumer.close();
  await producer.close();
  await client.close();
  process.stdout.write(`${JSON.stringify({
    sent: config.messages,
    acked: acked.size,
    failed: failures.length,
    received_unique: received.size,
    received_total: receivedTotal,
    duplicates,
    missing: missing.length,
    received_not_acked: [...received.keys()].filter((i) => !acked.has(i)).length,
    producer_reconnects: Math.max(0, created.producer - 1),
    consumer_reconnects: Math.max(0, created.consumer - 1),
    unload_request_ms: Math.round(move.finished - move.started),
    unload_gap_ms: Math.round(gap),
    owner_before: move.before,
    unload_destination: move.destination,
    owner_after: after,
    stored_by: storers,
    first_failures: failures.slice(0, 3),
    warnings: logLines.length,
  })}\n`);
}

main().catch((err) => {
  process.stderr.write(`error: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
