// KafkaJS 2.2.4 against one Kafka-compatible target: every step's observable result as one JSON line
// {"step": name, "result": ...} on stdout, normalised of what legitimately varies (names carry the run's prefix,
// member ids and timestamps are left out). compat_tests/test_kafkajs.py runs it on Kafka 4.4 and on pykbroker and
// compares the lines. Usage: node scenario.js BOOTSTRAP PREFIX REPLICATION_FACTOR [quick]
'use strict'

const {
  Kafka, CompressionTypes, CompressionCodecs, logLevel, PartitionAssigners, ConfigResourceTypes,
  AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes,
} = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const xxh32 = require('lz4js/xxh32.js')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
// KafkaJS has no LZ4 codec of its own; lz4js writes and reads the LZ4 frame format, marked as Kafka's Java client
// and liblz4 mark theirs: independent blocks (FLG bit 5; lz4js's blocks are, it just leaves the bit clear), with the
// frame descriptor's checksum recomputed.
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress (encoder) {
    const frame = Buffer.from(lz4.compress(encoder.buffer))
    frame[4] |= 0x20
    frame[6] = (xxh32.hash(0, frame, 4, 2) >> 8) & 0xff
    return frame
  },
  async decompress (buffer) { return Buffer.from(lz4.decompress(buffer)) },
})

const [bootstrap, prefix, rfArg, mode] = process.argv.slice(2)
const RF = Number(rfArg)
const QUICK = mode === 'quick'
const name = s => `${prefix}-${s}`
const strip = s => (typeof s === 'string' ? s.split(`${prefix}-`).join('') : s)

const kafka = new Kafka({
  clientId: 'kafkajs-scenario',
  brokers: bootstrap.split(','),
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 100, retries: 8 },
})
// The error cases: few retries, so that a retriable error ends the call soon.
const quickFail = new Kafka({
  clientId: 'kafkajs-scenario-errors',
  brokers: bootstrap.split(','),
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 50, retries: 1 },
})

function emit (step, result) {
  process.stdout.write(JSON.stringify({ step, result }) + '\n')
}

function describeError (e) {
  if (!e || typeof e !== 'object') return String(e)
  const out = { name: e.name, message: strip(e.message) }
  for (const k of ['type', 'code', 'retriable', 'topic', 'groupId']) {
    if (e[k] !== undefined) out[k] = strip(e[k])
  }
  if (Array.isArray(e.errors)) out.errors = e.errors.map(describeError)
  if (Array.isArray(e.groups)) {
    out.groups = e.groups.map(g => ({ groupId: strip(g.groupId), errorCode: g.errorCode, error: describeError(g.error) }))
  }
  if (e.originalError) out.originalError = describeError(e.originalError)
  return out
}

// Runs one step: its result, or the error KafkaJS threw, is the step's observation.
async function step (label, fn) {
  try {
    emit(label, { ok: normalise(await fn()) })
  } catch (e) {
    emit(label, { error: describeError(e) })
  }
}

function normalise (v) {
  if (v === undefined) return null
  return JSON.parse(JSON.stringify(v, (k, x) => (typeof x === 'string' ? strip(x) : x)))
}

const settled = r => { if (r.status === 'rejected') throw r.reason; return r.value }
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function until (what, cond, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

// KRaft brokers learn the controller's changes (topics, partitions, configs) asynchronously, so a 3-node Kafka may
// answer from before a change it has acknowledged: reads that follow a change retry until they see it (or the
// deadline passes, when the last answer is the observation); one node, or pykbroker, sees it at once.
async function eventually (read, seen, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    let value, error
    try { value = await read() } catch (e) { error = e }
    if (error === undefined && seen(value)) return value
    if (Date.now() > deadline) { if (error !== undefined) throw error; return value }
    await sleep(200)
  }
}

// createTopics: with waitForLeaders on one node; on a cluster KafkaJS's wait asks the broker it took for the controller
// (any broker, on KRaft) and gives up on UNKNOWN_TOPIC_OR_PARTITION while that broker lags, so the scenario waits.
async function createTopics (admin, options) {
  const created = await admin.createTopics({ ...options, waitForLeaders: RF === 1 })
  const topics = options.topics.map(t => t.topic)
  await eventually(() => admin.fetchTopicMetadata({ topics }),
    md => md.topics.length === topics.length && md.topics.every(t => t.partitions.every(p => p.leader >= 0)))
  return created
}

const byPartition = (a, b) => a.partition - b.partition
const messageView = (partition, m) => ({
  partition,
  offset: m.offset,
  key: m.key && m.key.toString(),
  value: m.value && m.value.toString(),
  headers: Object.fromEntries(Object.entries(m.headers || {}).map(([k, v]) => [k, v && v.toString()])),
})
const sortMessages = list => list.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset))

function consumerOf (groupId, extra = {}) {
  return kafka.consumer({
    groupId, sessionTimeout: 10000, rebalanceTimeout: 10000, heartbeatInterval: 300, maxWaitTimeInMs: 100,
    partitionAssigners: [PartitionAssigners.roundRobin], retry: { initialRetryTime: 100, retries: 8 }, ...extra,
  })
}

// Reads `count` messages of `topic` from the beginning in group `groupId`; then `settleMs` more for any extra.
// The high watermark of the last batch readAll got, by partition (KafkaJS's batch.highWatermark).
const highWatermarks = {}

async function readAll (groupId, topic, count, extra = {}, settleMs = 0) {
  const consumer = consumerOf(groupId, extra)
  const got = []
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      highWatermarks[batch.partition] = batch.highWatermark
      for (const m of batch.messages) {
        got.push(messageView(batch.partition, m))
        resolveOffset(m.offset)
      }
      await heartbeat()
    },
  })
  try {
    await until(`${count} messages of ${topic}`, () => got.length >= count)
    if (settleMs) await sleep(settleMs)
  } finally {
    await consumer.disconnect()
  }
  return sortMessages(got)
}

const messagesFor = (codec, n) => Array.from({ length: n }, (_, i) => ({
  partition: i % 3, key: `${codec}-k${i}`, value: `${codec}-v${i}`, headers: { codec, i: String(i) },
}))

async function produceIdempotent (admin, codecs) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  let total = 3
  for (const [label, type] of codecs) {
    await step(`produce idempotent ${label}`, async () => {
      const meta = await producer.send({ topic: name('p'), compression: type, acks: -1, messages: messagesFor(label, 6) })
      total += 6
      return meta.sort(byPartition).map(({ topicName, partition, errorCode, baseOffset, logStartOffset }) =>
        ({ topicName, partition, errorCode, baseOffset, logStartOffset }))
    })
  }
  await step('produce sendBatch', async () => {
    const meta = await producer.sendBatch({
      compression: CompressionTypes.GZIP,
      topicMessages: [{ topic: name('p'), messages: messagesFor('batch', 3) },
        { topic: name('g'), messages: messagesFor('g', 6) }],
    })
    return meta.sort((a, b) => a.topicName.localeCompare(b.topicName) || byPartition(a, b))
      .map(({ topicName, partition, errorCode, baseOffset }) => ({ topicName, partition, errorCode, baseOffset }))
  })
  await producer.disconnect()
  await step('consume all codecs', () => readAll(name('read-all'), name('p'), total))
  await step('committed offsets after eachBatch', () => admin.fetchOffsets({ groupId: name('read-all'), topics: [name('p')] }))
}

async function transactions (admin) {
  const producer = kafka.producer({ transactionalId: name('tx'), idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await step('transaction commit with sendOffsets', async () => {
    const tx = await producer.transaction()
    const meta = await tx.send({ topic: name('tx'), messages: [
      { partition: 0, value: 'c1' }, { partition: 1, value: 'c2' }, { partition: 0, value: 'c3' }] })
    await tx.sendOffsets({ consumerGroupId: name('tx-group'),
      topics: [{ topic: name('p'), partitions: [{ partition: 0, offset: '5' }, { partition: 1, offset: '3' }] }] })
    await tx.commit()
    return meta.sort(byPartition).map(({ partition, errorCode, baseOffset }) => ({ partition, errorCode, baseOffset }))
  })
  await step('transaction abort', async () => {
    const tx = await producer.transaction()
    await tx.send({ topic: name('tx'), messages: [{ partition: 0, value: 'a1' }, { partition: 1, value: 'a2' }] })
    await tx.sendOffsets({ consumerGroupId: name('tx-group'),
      topics: [{ topic: name('p'), partitions: [{ partition: 0, offset: '9' }] }] })
    await tx.abort()
    return tx.isActive()
  })
  await step('transaction commit after abort', async () => {
    const tx = await producer.transaction()
    await tx.send({ topic: name('tx'), messages: [{ partition: 1, value: 'c4' }] })
    await tx.commit()
    return tx.isActive()
  })
  await step('transaction send outside a transaction', () =>
    producer.send({ topic: name('tx'), messages: [{ partition: 0, value: 'x' }] }))
  await producer.disconnect()
  // Both isolation levels at once; each reads on for 800 ms after the records it expects, so that any more show.
  const [committed, uncommitted] = await Promise.allSettled([readAll(name('rc'), name('tx'), 4, {}, 800),
    readAll(name('ru'), name('tx'), 6, { readUncommitted: true }, 800)])
  await step('read_committed consumer', async () => settled(committed))
  await step('read_uncommitted consumer', async () => settled(uncommitted))
  await step('transactional offsets committed', () => admin.fetchOffsets({ groupId: name('tx-group'), topics: [name('p')] }))
  await step('transactional topic offsets', async () => (await admin.fetchTopicOffsets(name('tx'))).sort(byPartition))
}

// Members of one group joining and leaving: after each change, the round-robin assignment of every live member.
async function rebalances (admin, errAdmin) {
  const group = name('rebalance')
  const topic = name('g')
  const members = []
  const consumed = []
  let changedAt = 0
  const start = async label => {
    const consumer = consumerOf(group)
    const member = { label, consumer, joins: [] }
    consumer.on(consumer.events.GROUP_JOIN, e => member.joins.push({ at: Date.now(), payload: e.payload }))
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    changedAt = Date.now()
    members.push(member)
    await consumer.run({ eachMessage: async ({ partition, message }) => { consumed.push(messageView(partition, message)) } })
  }
  const settled = async () => {
    await until('the group to settle', () => {
      const latest = members.map(m => m.joins.length && m.joins[m.joins.length - 1])
      if (latest.some(j => !j || j.at < changedAt)) return false
      const parts = latest.flatMap(j => j.payload.memberAssignment[topic] || [])
      return parts.length === 3 && new Set(parts).size === 3
    })
    const latest = members.map(m => m.joins[m.joins.length - 1].payload)
    return {
      members: members.length,
      leaders: latest.filter(j => j.isLeader).length,
      protocol: latest[0].groupProtocol,
      partitionsPerMember: latest.map(j => (j.memberAssignment[topic] || []).length).sort(),
    }
  }
  await step('group: one member', async () => { await start('a'); return settled() })
  await step('group: eachMessage read everything', async () => {
    await until('6 messages', () => consumed.length >= 6)
    return sortMessages(consumed.slice())
  })
  await step('group: second member joins', async () => { await start('b'); return settled() })
  await step('group: third member joins', async () => { await start('c'); return settled() })
  await step('group: describeGroups while stable', async () => {
    const { groups } = await admin.describeGroups([group])
    return groups.map(g => ({ groupId: g.groupId, state: g.state, protocolType: g.protocolType, protocol: g.protocol,
      errorCode: g.errorCode, members: g.members.length,
      clientIds: g.members.map(m => m.clientId).sort(),
      assignments: g.members.map(m => m.memberAssignment.length > 0).sort() }))
  })
  await step('group: delete a group with members', () => errAdmin.deleteGroups([group]))
  await step('group: setOffsets while running', () =>
    admin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '0' }] }))
  await step('group: third member leaves', async () => {
    const c = members.pop()
    await c.consumer.disconnect()
    changedAt = Date.now()
    return settled()
  })
  await step('group: committed offsets', () => admin.fetchOffsets({ groupId: group, topics: [topic] }))
  for (const m of members.splice(0)) await m.consumer.disconnect()
  await step('group: describeGroups when empty', async () => {
    const { groups } = await admin.describeGroups([group])
    return groups.map(g => ({ state: g.state, protocolType: g.protocolType, protocol: g.protocol, members: g.members.length }))
  })
}

// One consumer pausing its partition mid-batch, resuming, and seeking back.
async function pauseResumeSeek () {
  const topic = name('ts')
  const consumer = consumerOf(name('pause'))
  const got = []
  let paused = false
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      got.push(Number(message.offset))
      if (message.offset === '1' && !paused) {
        paused = true
        consumer.pause([{ topic }])
      }
    },
  })
  try {
    await pauseSteps(consumer, topic, got, () => paused)
  } finally {
    await consumer.disconnect()
  }
}

async function pauseSteps (consumer, topic, got, paused) {
  await step('pause: consumed before pause', async () => {
    await until('the pause', paused)
    await sleep(1000)
    return { consumed: got.slice(), paused: consumer.paused().map(t => ({ topic: t.topic, partitions: t.partitions })) }
  })
  await step('resume: consumed after resume', async () => {
    consumer.resume([{ topic }])
    await until('the rest', () => got.length >= 5)
    return got.slice()
  })
  await step('seek: consumed after seek to 3', async () => {
    got.length = 0
    consumer.seek({ topic, partition: 0, offset: '3' })
    await until('after seek', () => got.length >= 2)
    await sleep(500)
    return got.slice()
  })
}

async function timestamps (admin) {
  const topic = name('ts')
  // A minute ago (whole seconds): timestamps older than retention.ms (7 days) could be deleted by a retention check
  // while the scenario runs; the observations show them relative to it.
  const base = Math.floor(Date.now() / 1000) * 1000 - 60000
  const producer = kafka.producer()
  await producer.connect()
  await step('produce with timestamps', async () => (await producer.send({ topic, messages:
    Array.from({ length: 5 }, (_, i) => ({ value: `t${i}`, timestamp: String(base + i * 1000) })) }))
    .map(({ partition, errorCode, baseOffset }) => ({ partition, errorCode, baseOffset })))
  await producer.disconnect()
  for (const [label, ts] of [['middle', base + 2000], ['between', base + 2500], ['before', base - 1], ['after', base + 10000]]) {
    await step(`fetchTopicOffsetsByTimestamp ${label}`, () => admin.fetchTopicOffsetsByTimestamp(topic, ts))
  }
  await step('consume from a timestamp', async () => {
    const [{ offset }] = await admin.fetchTopicOffsetsByTimestamp(topic, base + 3000)
    const consumer = consumerOf(name('from-ts'))
    const got = []
    await consumer.connect()
    await consumer.subscribe({ topics: [topic] })
    let sought = false
    consumer.on(consumer.events.GROUP_JOIN, () => {
      if (!sought) { sought = true; consumer.seek({ topic, partition: 0, offset }) }
    })
    await consumer.run({ eachMessage: async ({ message }) => { got.push({ offset: message.offset, value: message.value.toString(), sinceBase: Number(message.timestamp) - base }) } })
    try {
      await until('2 messages', () => got.length >= 2)
    } finally {
      await consumer.disconnect()
    }
    return got
  })
}

async function adminCalls (admin, errAdmin) {
  const topics = ['p', 'g', 'tx', 'ts', 'adm', 'del']
  const partitions = { p: 3, g: 3, tx: 2, ts: 1, adm: 1, del: 2 }
  await step('describeCluster', async () => {
    const c = await admin.describeCluster()
    return { brokers: c.brokers.length, controllerIsABroker: c.brokers.some(b => b.nodeId === c.controller),
      clusterIdIsString: typeof c.clusterId === 'string' && c.clusterId.length > 0 }
  })
  await step('createTopics', () => createTopics(admin, { topics: topics.map(t => ({
    topic: name(t), numPartitions: partitions[t], replicationFactor: RF })) }))
  await step('createTopics again (topic already exists)', () =>
    errAdmin.createTopics({ topics: [{ topic: name('adm'), numPartitions: 1, replicationFactor: RF }] }))
  await step('createTopics with invalid partitions', () =>
    errAdmin.createTopics({ topics: [{ topic: name('bad'), numPartitions: -5, replicationFactor: RF }] }))
  await step('createTopics with too high a replication factor', () =>
    errAdmin.createTopics({ topics: [{ topic: name('bad-rf'), numPartitions: 1, replicationFactor: 7 }] }))
  await step('createTopics validateOnly', () =>
    admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: name('validate'), numPartitions: 2, replicationFactor: RF }] }))
  await step('createTopics with configs', () => createTopics(admin, { topics: [{ topic: name('compact'), numPartitions: 1,
    replicationFactor: RF, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] }))
  await step('listTopics', async () => (await eventually(() => admin.listTopics(), ts => ts.includes(name('compact'))))
    .filter(t => t.startsWith(prefix)).sort())
  await step('fetchTopicMetadata', async () => {
    const { topics: md } = await admin.fetchTopicMetadata({ topics: [name('p'), name('tx')] })
    return md.sort((a, b) => a.name.localeCompare(b.name)).map(t => ({ name: t.name, partitions: t.partitions.sort((a, b) => a.partitionId - b.partitionId).map(p => ({
      partitionId: p.partitionId, partitionErrorCode: p.partitionErrorCode, hasLeader: p.leader >= 0,
      replicas: p.replicas.length, isr: p.isr.length, offlineReplicas: p.offlineReplicas.length })) }))
  })
  await step('fetchTopicMetadata of an unknown topic', () => errAdmin.fetchTopicMetadata({ topics: [name('nope')] }))
  await step('createPartitions', () => admin.createPartitions({ topicPartitions: [{ topic: name('adm'), count: 3 }] }))
  await step('createPartitions fewer (invalid partitions)', () =>
    errAdmin.createPartitions({ topicPartitions: [{ topic: name('adm'), count: 2 }] }))
  await step('createPartitions of an unknown topic', () =>
    errAdmin.createPartitions({ topicPartitions: [{ topic: name('nope'), count: 2 }] }))
  await step('fetchTopicOffsets after createPartitions', async () =>
    (await eventually(() => admin.fetchTopicOffsets(name('adm')), o => o.length === 3)).sort(byPartition))
  const configsOf = async (type, nameOf, configNames) => {
    const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type, name: nameOf, configNames }] })
    return resources.map(r => ({ errorCode: r.errorCode, errorMessage: r.errorMessage, resourceType: r.resourceType,
      resourceName: strip(r.resourceName), configEntries: r.configEntries.sort((a, b) => a.configName.localeCompare(b.configName)) }))
  }
  const topicConfigs = ['cleanup.policy', 'retention.ms', 'max.message.bytes', 'compression.type']
  await step('describeConfigs topic', () => configsOf(ConfigResourceTypes.TOPIC, name('compact'), topicConfigs))
  await step('alterConfigs topic', async () => {
    const r = await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: name('compact'),
      configEntries: [{ name: 'retention.ms', value: '3600000' }, { name: 'cleanup.policy', value: 'delete' }] }] })
    return r.resources.map(x => ({ errorCode: x.errorCode, errorMessage: x.errorMessage, resourceName: x.resourceName }))
  })
  await step('describeConfigs topic after alterConfigs', () => eventually(
    () => configsOf(ConfigResourceTypes.TOPIC, name('compact'), topicConfigs),
    r => r[0].configEntries.some(e => e.configName === 'retention.ms' && e.configValue === '3600000')))
  await step('alterConfigs with an unknown config', () => errAdmin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC,
    name: name('compact'), configEntries: [{ name: 'no.such.config', value: '1' }] }] }))
  await step('describeConfigs of an unknown topic', () => errAdmin.describeConfigs({ includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: name('nope') }] }))
  await step('describeConfigs broker', async () => {
    const { brokers } = await admin.describeCluster()
    const id = String(Math.min(...brokers.map(b => b.nodeId)))
    const r = await configsOf(ConfigResourceTypes.BROKER, id, ['num.partitions', 'log.retention.hours', 'auto.create.topics.enable'])
    return r.map(x => ({ ...x, resourceName: 'min node id' }))
  })
  await step('deleteTopics', () => admin.deleteTopics({ topics: [name('del')] }))
  await step('deleteTopics of an unknown topic', () => errAdmin.deleteTopics({ topics: [name('nope')] }))
  await step('listTopics after deleteTopics', async () => (await eventually(() => admin.listTopics(), ts => !ts.includes(name('del'))))
    .filter(t => t.startsWith(prefix)).sort())
}

async function groupAdmin (admin, errAdmin) {
  const group = name('read-all')
  await step('listGroups', async () => (await admin.listGroups()).groups.filter(g => g.groupId.startsWith(prefix))
    .sort((a, b) => a.groupId.localeCompare(b.groupId)))
  await step('setOffsets', async () => {
    await admin.setOffsets({ groupId: group, topic: name('p'), partitions: [{ partition: 0, offset: '1' }, { partition: 2, offset: '4' }] })
    return admin.fetchOffsets({ groupId: group, topics: [name('p')] })
  })
  await step('resetOffsets latest', async () => {
    await admin.resetOffsets({ groupId: group, topic: name('p') })
    return admin.fetchOffsets({ groupId: group, topics: [name('p')] })
  })
  await step('resetOffsets earliest', async () => {
    await admin.resetOffsets({ groupId: group, topic: name('p'), earliest: true })
    return admin.fetchOffsets({ groupId: group, topics: [name('p')] })
  })
  await step('fetchOffsets resolveOffsets', () => admin.fetchOffsets({ groupId: group, topics: [name('p')], resolveOffsets: true }))
  await step('fetchOffsets of an unknown group', () => admin.fetchOffsets({ groupId: name('no-group'), topics: [name('p')] }))
  await step('deleteTopicRecords', async () => {
    await admin.deleteTopicRecords({ topic: name('p'), partitions: [{ partition: 0, offset: '2' }, { partition: 1, offset: '-1' }] })
    return (await admin.fetchTopicOffsets(name('p'))).sort(byPartition)
  })
  await step('deleteTopicRecords beyond the high watermark', () =>
    errAdmin.deleteTopicRecords({ topic: name('p'), partitions: [{ partition: 2, offset: '1000' }] }))
  await step('deleteGroups', () => admin.deleteGroups([group, name('no-group')]))
  await step('listGroups after deleteGroups', async () => (await admin.listGroups()).groups
    .filter(g => g.groupId.startsWith(prefix)).map(g => g.groupId).sort())
}

async function acls (admin) {
  const acl = { resourceType: AclResourceTypes.TOPIC, resourceName: name('p'), resourcePatternType: ResourcePatternTypes.LITERAL,
    principal: 'User:alice', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW }
  await step('createAcls', () => admin.createAcls({ acl: [acl] }))
  await step('describeAcls', () => admin.describeAcls({ resourceType: AclResourceTypes.TOPIC, resourceName: name('p'),
    resourcePatternType: ResourcePatternTypes.LITERAL, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }))
  await step('deleteAcls', () => admin.deleteAcls({ filters: [acl] }))
}

async function unknownTopicProduce () {
  const producer = quickFail.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  await step('produce to an unknown topic without auto-creation', () =>
    producer.send({ topic: name('unknown'), messages: [{ value: 'x' }] }))
  await step('produce to an invalid partition', () =>
    producer.send({ topic: name('ts'), messages: [{ value: 'x', partition: 7 }] }))
  await producer.disconnect()
}

// A second producer taking a transactional id fences the first: its open transaction is aborted, its commit refused.
async function fencing () {
  const options = { transactionalId: name('fence'), idempotent: true, maxInFlightRequests: 1 }
  const first = quickFail.producer(options)
  const second = kafka.producer(options)
  await first.connect()
  try {
    const tx = await first.transaction()
    await step('fencing: send in the first producer\'s transaction', async () =>
      (await tx.send({ topic: name('tx'), messages: [{ partition: 0, value: 'fenced' }] })).map(m => m.errorCode))
    // KafkaJS asks for its producer id at a transactional producer's first transaction(), not at connect().
    let tx2
    await step('fencing: the second producer begins a transaction', async () => { await second.connect(); tx2 = await second.transaction(); return null })
    await step('fencing: the first producer commits', () => tx.commit())
    await step('fencing: the second producer commits', async () => {
      await tx2.send({ topic: name('tx'), messages: [{ partition: 1, value: 'after-fence' }] })
      await tx2.commit()
      return null
    })
  } finally {
    await first.disconnect().catch(() => null)
    await second.disconnect().catch(() => null)
  }
  await step('fencing: read_committed sees the second producer only', async () =>
    (await readAll(name('fence-reader'), name('tx'), 6, {}, 800)).map(m => m.value))
}

// Manual commits (autoCommit off), the consumer's own describeGroup, and the group and reassignment look-ups.
async function manualCommits (admin, errAdmin) {
  const topic = name('g')
  const group = name('manual')
  const consumer = consumerOf(group)
  const got = []
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => { got.push(messageView(partition, message)) } })
  try {
    await until('6 messages', () => got.length >= 6)
    await step('manual: consumer.describeGroup', async () => {
      const g = await consumer.describeGroup()
      return { state: g.state, protocol: g.protocol, protocolType: g.protocolType, members: g.members.length, errorCode: g.errorCode }
    })
    await step('manual: nothing committed with autoCommit off', () => admin.fetchOffsets({ groupId: group, topics: [topic] }))
    await step('manual: commitOffsets', async () => {
      await consumer.commitOffsets([{ topic, partition: 0, offset: '1' }, { topic, partition: 2, offset: '2' }])
      return admin.fetchOffsets({ groupId: group, topics: [topic] })
    })
    await step('manual: commitOffsets of a partition the topic lacks', () =>
      consumer.commitOffsets([{ topic, partition: 7, offset: '1' }]))
  } finally {
    await consumer.disconnect()
  }
  await step('fetchOffsets of every topic', async () => (await admin.fetchOffsets({ groupId: group }))
    .map(t => ({ topic: t.topic, partitions: t.partitions.sort(byPartition) })))
  await step('describeGroups of an unknown group', () => admin.describeGroups([name('no-such-group')]))
  await step('listPartitionReassignments', () => admin.listPartitionReassignments({ topics: [{ topic: name('adm'), partitions: [0] }] }))
  await step('alterPartitionReassignments to a broker that does not exist', () => errAdmin.alterPartitionReassignments({
    topics: [{ topic: name('adm'), partitionAssignment: [{ partition: 0, replicas: [99] }] }] }))
  await step('alterPartitionReassignments of an unknown topic', () => errAdmin.alterPartitionReassignments({
    topics: [{ topic: name('nope'), partitionAssignment: [{ partition: 0, replicas: [1] }] }] }))
  await step('produce acks 0 and 1', async () => {
    const producer = kafka.producer()
    await producer.connect()
    try {
      const none = await producer.send({ topic: name('adm'), acks: 0, messages: [{ partition: 1, value: 'a0' }] })
      const one = await producer.send({ topic: name('adm'), acks: 1, messages: [{ partition: 1, value: 'a1' }] })
      return { acks0: none, acks1: one.map(({ partition, errorCode, baseOffset }) => ({ partition, errorCode, baseOffset })) }
    } finally {
      await producer.disconnect()
    }
  })
}

// Where a broker checks what a producer sends, and every config of a topic with its synonyms.
async function limitsAndConfigs (admin, errAdmin) {
  await step('createTopics with LogAppendTime and a small max.message.bytes', () => createTopics(admin, { topics: [{
    topic: name('limits'), numPartitions: 1, replicationFactor: RF, configEntries: [
      { name: 'message.timestamp.type', value: 'LogAppendTime' }, { name: 'max.message.bytes', value: '2048' }] }] }))
  const producer = quickFail.producer()
  await producer.connect()
  try {
    await step('produce to a LogAppendTime topic', async () => {
      const before = Date.now()
      const [m] = await producer.send({ topic: name('limits'), messages: [{ value: 'lat', timestamp: '1000' }] })
      return { errorCode: m.errorCode, baseOffset: m.baseOffset, logAppendTimeIsNow: Number(m.logAppendTime) >= before - 5000 }
    })
    await step('produce a record over max.message.bytes', () =>
      producer.send({ topic: name('limits'), messages: [{ value: 'x'.repeat(4096) }] }))
    await step('produce lz4 frames marked as dependent blocks', async () => {
      // lz4js's own frames leave FLG's block-independence bit clear; Kafka's lz4 reader refuses them.
      const independent = CompressionCodecs[CompressionTypes.LZ4]
      CompressionCodecs[CompressionTypes.LZ4] = () => ({
        async compress (encoder) { return Buffer.from(lz4.compress(encoder.buffer)) },
        async decompress (buffer) { return Buffer.from(lz4.decompress(buffer)) },
      })
      try {
        return await producer.send({ topic: name('limits'), compression: CompressionTypes.LZ4, messages: [{ value: 'dependent' }] })
      } finally {
        CompressionCodecs[CompressionTypes.LZ4] = independent
      }
    })
    await step('produce a record two hours in the future', () =>
      producer.send({ topic: name('ts'), messages: [{ value: 'future', timestamp: String(Date.now() + 7200000) }] }))
  } finally {
    await producer.disconnect()
  }
  await step('consume a LogAppendTime topic', async () => {
    const [m] = await readAll(name('lat-reader'), name('limits'), 1)
    return { offset: m.offset, value: m.value }
  })
  await step('describeConfigs every topic config with synonyms', async () => {
    const { resources } = await admin.describeConfigs({ includeSynonyms: true,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: name('limits') }] })
    return Object.fromEntries(resources[0].configEntries.map(e => [e.configName, {
      value: e.configValue, source: e.configSource, readOnly: e.readOnly, isDefault: e.isDefault, isSensitive: e.isSensitive,
      synonyms: e.configSynonyms.map(y => `${y.configName}=${y.configValue} (${y.configSource})`) }]))
  })
  await step('a message larger than maxBytesPerPartition', async () => {
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic: name('adm'), messages: [{ partition: 2, value: 'b'.repeat(20000) }] })
    await producer.disconnect()
    const consumer = consumerOf(name('big-reader'), { maxBytesPerPartition: 1024, maxBytes: 2048 })
    const got = []
    await consumer.connect()
    await consumer.subscribe({ topics: [name('adm')], fromBeginning: true })
    await consumer.run({ eachMessage: async ({ partition, message }) => { if (partition === 2) got.push(message.value.length) } })
    try {
      await until('the large message', () => got.length >= 1)
    } finally {
      await consumer.disconnect()
    }
    return got
  })
}

// A read_committed consumer stops at an open transaction's first record (the last stable offset), records after it
// included, until the transaction commits.
async function openTransaction (admin) {
  const topic = name('lso')
  await createTopics(admin, { topics: [{ topic, numPartitions: 1, replicationFactor: RF }] })
  const plain = kafka.producer()
  const open = kafka.producer({ transactionalId: name('open'), idempotent: true, maxInFlightRequests: 1 })
  await plain.connect()
  await open.connect()
  const values = ms => ms.map(m => `${m.offset}:${m.value}`)
  const read = async (group, count, extra, settleMs) => {
    for (const k of Object.keys(highWatermarks)) delete highWatermarks[k]
    const ms = await readAll(name(group), topic, count, extra, settleMs)
    return { values: values(ms), highWatermark: highWatermarks[0] }
  }
  try {
    await plain.send({ topic, messages: [{ value: 'before' }] })
    const tx = await open.transaction()
    await tx.send({ topic, messages: [{ value: 'open' }] })
    await plain.send({ topic, messages: [{ value: 'after-open' }] })
    await step('lso: read_committed during an open transaction', () => read('lso-rc', 1, {}, 1500))
    await step('lso: read_uncommitted during an open transaction', () => read('lso-ru', 3, { readUncommitted: true }, 500))
    await step('lso: fetchTopicOffsets during an open transaction', () => admin.fetchTopicOffsets(topic))
    await tx.commit()
    await step('lso: read_committed after the commit', () => read('lso-rc2', 3, {}, 800))
    await step('lso: fetchTopicOffsets after the commit', () => admin.fetchTopicOffsets(topic))
  } finally {
    await plain.disconnect()
    await open.disconnect()
  }
}

// ACLs on a broker with an authorizer (the client is a super user): created, described by filters, deleted.
async function aclsWithAuthorizer (admin, errAdmin) {
  await createTopics(admin, { topics: [{ topic: name('p'), numPartitions: 1, replicationFactor: RF }] })
  const acl = (principal, resourceName, patternType, operation, permissionType, resourceType = AclResourceTypes.TOPIC) =>
    ({ resourceType, resourceName, resourcePatternType: patternType, principal, host: '*', operation, permissionType })
  const sorted = resources => resources.map(r => ({ ...r, acls: r.acls.sort((a, b) =>
    `${a.principal}${a.operation}`.localeCompare(`${b.principal}${b.operation}`)) }))
    .sort((a, b) => `${a.resourceType}${a.resourceName}`.localeCompare(`${b.resourceType}${b.resourceName}`))
  await step('acls: createAcls', () => admin.createAcls({ acl: [
    acl('User:alice', name('p'), ResourcePatternTypes.LITERAL, AclOperationTypes.READ, AclPermissionTypes.ALLOW),
    acl('User:alice', name('p'), ResourcePatternTypes.LITERAL, AclOperationTypes.DESCRIBE, AclPermissionTypes.ALLOW),
    acl('User:bob', name(''), ResourcePatternTypes.PREFIXED, AclOperationTypes.WRITE, AclPermissionTypes.DENY),
    acl('User:bob', name('group'), ResourcePatternTypes.LITERAL, AclOperationTypes.READ, AclPermissionTypes.ALLOW,
      AclResourceTypes.GROUP)] }))
  const describe = (label, filter) => step(label, async () => {
    const r = await eventually(() => admin.describeAcls(filter), x => x.resources.length > 0, 5000)
    return { errorCode: r.errorCode, resources: sorted(r.resources) }
  })
  await describe('acls: describeAcls of a topic', { resourceType: AclResourceTypes.TOPIC, resourceName: name('p'),
    resourcePatternType: ResourcePatternTypes.LITERAL, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY })
  await describe('acls: describeAcls matching a topic (prefixed ones too)', { resourceType: AclResourceTypes.TOPIC,
    resourceName: name('p'), resourcePatternType: ResourcePatternTypes.MATCH, operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY })
  await describe('acls: describeAcls of a principal', { resourceType: AclResourceTypes.ANY, principal: 'User:bob',
    resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY })
  await step('acls: createAcls with operation ANY', () => errAdmin.createAcls({ acl: [
    acl('User:carol', name('p'), ResourcePatternTypes.LITERAL, AclOperationTypes.ANY, AclPermissionTypes.ALLOW)] }))
  await step('acls: createAcls with a principal without a type', () => errAdmin.createAcls({ acl: [
    acl('carol', name('p'), ResourcePatternTypes.LITERAL, AclOperationTypes.READ, AclPermissionTypes.ALLOW)] }))
  await step('acls: deleteAcls', async () => {
    const r = await admin.deleteAcls({ filters: [{ resourceType: AclResourceTypes.ANY, principal: 'User:alice',
      resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }] })
    return r.filterResponses.map(f => ({ errorCode: f.errorCode, errorMessage: f.errorMessage,
      matchingAcls: f.matchingAcls.map(m => ({ ...m, resourceName: strip(m.resourceName) }))
        .sort((a, b) => a.operation - b.operation) }))
  })
  await step('acls: describeAcls after deleteAcls', async () => {
    const filter = { resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY,
      operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }
    const r = await eventually(() => admin.describeAcls(filter), x => !JSON.stringify(x).includes('User:alice'), 5000)
    return { errorCode: r.errorCode, resources: sorted(r.resources.filter(x => x.resourceName.startsWith(prefix))) }
  })
}

// A topic's compression.type makes the broker recompress what KafkaJS sends (zstd, a codec this KafkaJS lacks, so its
// consumer fails on the batch); a fetch position beyond the log end is reset to the earliest offset.
async function recompressionAndReset (admin) {
  const topic = name('zstd')
  await step('createTopics with compression.type zstd', () => createTopics(admin, { topics: [{ topic, numPartitions: 1,
    replicationFactor: RF, configEntries: [{ name: 'compression.type', value: 'zstd' }] }] }))
  const producer = kafka.producer()
  await producer.connect()
  await step('produce uncompressed to a zstd topic', async () => (await producer.send({ topic, messages: [{ value: 'z0' }, { value: 'z1' }] }))
    .map(({ errorCode, baseOffset }) => ({ errorCode, baseOffset })))
  await producer.disconnect()
  await step('consume a zstd topic', async () => {
    const consumer = consumerOf(name('zstd-reader'), { retry: { retries: 0 } })
    const got = []
    const crashes = []
    consumer.on(consumer.events.CRASH, e => crashes.push({ name: e.payload.error.name, message: e.payload.error.message }))
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
    try {
      await until('a message or a crash', () => got.length >= 2 || crashes.length > 0)
    } finally {
      await consumer.disconnect()
    }
    return { got, crash: crashes[0] || null }
  })
  await step('seek beyond the log end resets to earliest', async () => {
    const consumer = consumerOf(name('reset'))
    const got = []
    let sought = false
    consumer.on(consumer.events.GROUP_JOIN, () => {
      if (!sought) { sought = true; consumer.seek({ topic: name('ts'), partition: 0, offset: '1000' }) }
    })
    await consumer.connect()
    await consumer.subscribe({ topics: [name('ts')], fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { got.push(message.offset) } })
    try {
      await until('5 messages', () => got.length >= 5)
      await sleep(500)
    } finally {
      await consumer.disconnect()
    }
    return got
  })
}

// KafkaJS heartbeats between messages only: a member stuck in eachMessage past its session timeout is expired by the
// coordinator, its partitions move to the other member, and it joins again when it comes back.
async function sessionExpiry () {
  const group = name('expire')
  const topic = name('g')
  const members = []
  let blockedAt = 0
  let blockSeen = 0
  const start = async () => {
    const consumer = consumerOf(group, { sessionTimeout: 6000, rebalanceTimeout: 10000 })
    const member = { consumer, joins: [] }
    consumer.on(consumer.events.GROUP_JOIN, e => member.joins.push({ at: Date.now(), payload: e.payload }))
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    members.push(member)
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value.toString() !== 'block') return
        blockSeen += 1
        if (blockSeen === 1) { blockedAt = Date.now(); await sleep(10000) }
      },
    })
  }
  const assignments = since => {
    const latest = members.map(m => m.joins.filter(j => j.at >= since).pop())
    return latest.map(j => (j ? (j.payload.memberAssignment[topic] || []).length : null))
  }
  try {
    await start()
    await start()
    await step('expire: two members', async () => {
      await until('two members settled', () => {
        const a = assignments(0)
        return a.every(n => n !== null) && a.reduce((x, y) => x + y, 0) === 3 && a.every(n => n > 0)
      })
      return assignments(0).sort()
    })
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic, messages: [{ partition: 0, value: 'block' }] })
    await producer.disconnect()
    await step('expire: the other member takes every partition', async () => {
      await until('the block', () => blockedAt > 0)
      await until('the expiry', () => assignments(blockedAt).some(n => n === 3), 20000)
      return { assignments: assignments(blockedAt).map(n => n === null ? 'blocked' : n).sort() }
    })
    await step('expire: the blocked member joins again', async () => {
      const back = blockedAt + 10000
      await until('the rejoin', () => {
        const a = assignments(back)
        return a.every(n => n !== null) && a.reduce((x, y) => x + y, 0) === 3 && a.every(n => n > 0)
      }, 30000)
      return { assignments: assignments(back).sort(), blockConsumed: blockSeen }
    })
  } finally {
    for (const m of members) await m.consumer.disconnect()
  }
}

async function main () {
  const admin = kafka.admin()
  const errAdmin = quickFail.admin()
  await admin.connect()
  await errAdmin.connect()
  if (mode === 'acls') {
    await aclsWithAuthorizer(admin, errAdmin)
  } else if (QUICK) {
    await step('createTopics', () => createTopics(admin, { topics: [['p', 3], ['g', 3], ['tx', 2]].map(([t, n]) => ({
      topic: name(t), numPartitions: n, replicationFactor: RF })) }))
    await produceIdempotent(admin, [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]])
    await transactions(admin)
  } else {
    await adminCalls(admin, errAdmin)
    await produceIdempotent(admin, [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP],
      ['snappy', CompressionTypes.Snappy], ['lz4', CompressionTypes.LZ4]])
    await rebalances(admin, errAdmin)
    await transactions(admin)
    await timestamps(admin)
    await pauseResumeSeek()
    await groupAdmin(admin, errAdmin)
    await acls(admin)
    await fencing()
    await manualCommits(admin, errAdmin)
    await limitsAndConfigs(admin, errAdmin)
    await openTransaction(admin)
    await recompressionAndReset(admin)
    await sessionExpiry()
    await unknownTopicProduce()
  }
  await admin.disconnect()
  await errAdmin.disconnect()
}

main().then(() => process.exit(0), e => {
  emit('fatal', describeError(e))
  process.stderr.write(`${e && e.stack}\n`)
  process.exit(1)
})
