"""One client connection of the binary protocol (``ServerCnx``).

The first command must be ``CONNECT``: the broker answers ``CONNECTED`` with the protocol version both
sides speak (the lower of the client's and ``PROTOCOL_VERSION``).  With ``authenticationEnabled`` the
client's ``auth_method_name`` must be ``token`` and its ``auth_data`` a token the HTTP rules accept
(``live.broker.auth``); otherwise the broker answers ``ERROR`` (``AuthenticationError``) and closes
(the anonymous role applies to a connection without credentials, as over HTTP).

Requests are answered by ``request_id``; a refused one gets ``ERROR`` with a ``ServerError`` code.
``SEND`` for a producer this connection does not have closes the connection (the client re-creates
its producers and re-sends what was not acknowledged), as Pulsar's broker does.  A connection that
sends nothing for ``keepAliveIntervalSeconds`` is probed with ``PING`` and closed when the next check
finds it still silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from typing import Any

import crc32c

from bundlewise.live.broker import values
from bundlewise.live.broker.auth import AuthenticationError, AuthorizationError
from bundlewise.live.broker.binary import codec
from bundlewise.live.broker.binary import wire_pb2 as pb
from bundlewise.live.broker.binary.service import (
    AUTHORIZATION_ERROR,
    SERVICE_NOT_READY,
    BinaryError,
    BinaryService,
    parse_topic,
)
from bundlewise.live.broker.binary.storage import Entry, LedgerFencedError, MessageLog
from bundlewise.live.broker.binary.topics import Consumer, Producer, SubscribeError, Subscription, Topic
from bundlewise.live.store import JSON, layout

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 21
T = pb.BaseCommand
NO_REQUEST = 2**64 - 1
UNKNOWN_ERROR, AUTHENTICATION_ERROR, CONSUMER_BUSY, CHECKSUM_ERROR = 0, 3, 5, 9
CONSUMER_NOT_FOUND = 13
_names = itertools.count()


def command(kind: int, **fields: Any) -> pb.BaseCommand:
    cmd = pb.BaseCommand(type=kind)  # type: ignore[arg-type]
    for name, value in fields.items():
        getattr(cmd, name).CopyFrom(value)
    return cmd


def message_id(log: MessageLog, index: int) -> pb.MessageIdData:
    """The message id of an index; an index before the first entry has the entry id 2**64-1 (-1)."""
    ledger_id, entry_id = log.locate(index)
    return pb.MessageIdData(ledgerId=ledger_id, entryId=entry_id if entry_id >= 0 else 2**64 - 1)


def signed(value: int) -> int:
    """A message id's field as the signed 64-bit number clients mean (the wire's field is unsigned)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def start_index(log: MessageLog, start: pb.MessageIdData) -> int:
    """Where a reader's subscription starts (its first entry's index): the earliest entry, the end for the
    latest id, else the entry of the id (the client drops that one itself unless the start is inclusive)."""
    ledger_id, entry_id = signed(start.ledgerId), signed(start.entryId)
    if ledger_id < 0:  # MessageId.earliest: -1, sent in an unsigned field
        return log.first
    index = log.index_of(ledger_id, entry_id)
    if index is None:  # the latest id, or an id of no ledger here: the nearer end
        return log.end if ledger_id > log.ledger_id else log.first
    return max(log.first, min(index, log.end))  # an id in a ledger retention deleted: the first entry left


class ServerConnection(asyncio.Protocol):
    def __init__(self, service: BinaryService) -> None:
        self.service = service
        self.reader = codec.FrameReader(service.settings.max_message_size + codec.FRAME_PADDING)
        self.transport: asyncio.Transport | None = None
        self.connected = False
        self.role: str | None = None
        self.producers: dict[int, tuple[Producer, Topic]] = {}
        self.consumers: dict[int, tuple[Consumer, Topic, Subscription]] = {}
        self.last_seen = time.monotonic()
        self.pinged = False
        self.tasks: set[asyncio.Task[None]] = set()
        # frames written since the last flush; a receipt carries its topic, re-checked at the flush
        self._out: list[tuple[bytes, Topic | None]] = []

    # -- transport -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.service.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.service.connections.discard(self)
        for producer, topic in self.producers.values():
            topic.producers.pop((id(self), producer.producer_id), None)
        for consumer, topic, sub in self.consumers.values():
            topic.leave(sub, consumer)
        self.producers.clear()
        self.consumers.clear()
        for task in self.tasks:
            task.cancel()
        self.transport = None

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def check_alive(self, now: float) -> None:
        interval = self.service.settings.keep_alive_s
        if now - self.last_seen < interval:
            self.pinged = False
            return
        if self.pinged:
            log.info("closing a connection silent for %.0f s", now - self.last_seen)
            self.abort()
            return
        self.pinged = True
        self.write(T(type=T.PING, ping=pb.CommandPing()))

    def write(self, cmd: pb.BaseCommand) -> None:
        self.write_raw(codec.encode(cmd))

    def write_raw(self, frame: bytes, served: Topic | None = None) -> None:
        """Queue a frame; the queue goes out in one write when the current callback is done.

        A frame given ``served`` (a send receipt) goes out only if the broker still serves that topic
        when the queue is written: a broker stopped (SIGSTOP, a long pause) between storing a message
        and writing the queue may be past its fencing deadline when it runs again, and must then
        acknowledge nothing -- the client re-sends to the new owner.
        """
        if self.transport is None or self.transport.is_closing():
            return
        if not self._out:
            asyncio.get_running_loop().call_soon(self.flush)
        self._out.append((frame, served))

    def flush(self) -> None:
        out, self._out = self._out, []
        if not out or self.transport is None or self.transport.is_closing():
            return
        verdicts: dict[int, bool] = {}
        frames = []
        for frame, served in out:
            if served is not None:
                ok = verdicts.get(id(served))
                if ok is None:
                    ok = verdicts[id(served)] = not served.closed and self.service.still_served(served)
                if not ok:
                    continue
            frames.append(frame)
        withheld = len(out) - len(frames)
        if withheld:
            log.info("withheld %d receipt(s): the topic is no longer served here", withheld)
        if frames:
            self.transport.write(b"".join(frames))

    def data_received(self, data: bytes) -> None:
        self.last_seen = time.monotonic()
        try:
            frames = self.reader.feed(data)
        except codec.FrameError as e:
            log.warning("closing a connection: %s", e)
            self.abort()
            return
        for frame in frames:
            try:
                self.handle(frame)
            except Exception:
                log.exception("failed to handle %s", T.Type.Name(frame.command.type))
        self.flush()

    def spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- dispatch --------------------------------------------------------------------------
    def handle(self, frame: codec.Frame) -> None:
        cmd = frame.command
        kind = cmd.type
        if kind == T.SEND:
            self.on_send(cmd.send, frame)
        elif kind == T.ACK:
            self.on_ack(cmd.ack)
        elif kind == T.FLOW:
            self.on_flow(cmd.flow)
        elif kind == T.PING:
            self.write(T(type=T.PONG, pong=pb.CommandPong()))
        elif kind == T.PONG:
            pass
        elif kind == T.CONNECT:
            self.on_connect(cmd.connect)
        elif not self.connected:
            log.warning("closing a connection that sent %s before CONNECT", T.Type.Name(kind))
            self.abort()
        elif kind == T.LOOKUP:
            self.spawn(self.on_lookup(cmd.lookupTopic))
        elif kind == T.PARTITIONED_METADATA:
            self.spawn(self.on_partitions(cmd.partitionMetadata))
        elif kind == T.PRODUCER:
            self.spawn(self.on_producer(cmd.producer))
        elif kind == T.SUBSCRIBE:
            self.spawn(self.on_subscribe(cmd.subscribe))
        elif kind == T.REDELIVER_UNACKNOWLEDGED_MESSAGES:
            self.on_redeliver(cmd.redeliverUnacknowledgedMessages)
        elif kind == T.GET_LAST_MESSAGE_ID:
            self.on_last_message_id(cmd.getLastMessageId)
        elif kind == T.CLOSE_PRODUCER:
            self.on_close_producer(cmd.close_producer)
        elif kind == T.CLOSE_CONSUMER:
            self.on_close_consumer(cmd.close_consumer)
        elif kind == T.UNSUBSCRIBE:
            self.on_unsubscribe(cmd.unsubscribe)
        elif kind == T.SEEK:
            self.on_seek(cmd.seek)
        elif kind == T.GET_TOPICS_OF_NAMESPACE:
            self.spawn(self.on_topics_of_namespace(cmd.getTopicsOfNamespace))
        elif kind == T.GET_OR_CREATE_SCHEMA:
            r = pb.CommandGetOrCreateSchemaResponse(request_id=cmd.getOrCreateSchema.request_id, schema_version=b"")
            self.write(command(T.GET_OR_CREATE_SCHEMA_RESPONSE, getOrCreateSchemaResponse=r))
        elif kind == T.GET_SCHEMA:
            r2 = pb.CommandGetSchemaResponse(request_id=cmd.getSchema.request_id, error_message="Schema not found")
            r2.error_code = pb.TopicNotFound
            self.write(command(T.GET_SCHEMA_RESPONSE, getSchemaResponse=r2))
        else:
            log.info("ignoring %s", T.Type.Name(kind))

    def error(self, request_id: int, code: int, message: str) -> None:
        e = pb.CommandError(request_id=request_id, error=code, message=message)  # type: ignore[arg-type]
        self.write(command(T.ERROR, error=e))

    def success(self, request_id: int) -> None:
        self.write(command(T.SUCCESS, success=pb.CommandSuccess(request_id=request_id)))

    # -- connect ---------------------------------------------------------------------------
    def on_connect(self, c: pb.CommandConnect) -> None:
        authority = self.service.host.authority
        if authority.enabled:
            try:
                self.role = self._authenticate(c)
            except AuthenticationError as e:
                self.error(NO_REQUEST, AUTHENTICATION_ERROR, str(e))
                self.flush()
                if self.transport is not None:
                    self.transport.close()
                return
        version = min(c.protocol_version, PROTOCOL_VERSION)
        ok = pb.CommandConnected(
            server_version=f"Pulsar Server{values.BROKER_VERSION}",
            protocol_version=version,
            max_message_size=self.service.settings.max_message_size,
            feature_flags=pb.FeatureFlags(supports_auth_refresh=False),
        )
        self.connected = True
        self.write(command(T.CONNECTED, connected=ok))

    def _authenticate(self, c: pb.CommandConnect) -> str | None:
        authority = self.service.host.authority
        assert authority.verifier is not None
        if c.auth_method_name == "token" and c.HasField("auth_data"):
            return authority.verifier.role_of(c.auth_data.decode("utf-8", "replace"))
        if authority.settings.anonymous_role and not c.auth_method_name:
            return authority.settings.anonymous_role
        raise AuthenticationError(f"Unsupported authentication method: [{c.auth_method_name or 'none'}]")

    # -- lookups ---------------------------------------------------------------------------
    async def on_lookup(self, c: pb.CommandLookupTopic) -> None:
        r = pb.CommandLookupTopicResponse(request_id=c.request_id)
        try:
            await self._authorize_lookup(c.topic)
            answer = await self.service.lookup(c.topic, c.authoritative)
        except BinaryError as e:
            r.response = pb.CommandLookupTopicResponse.Failed
            r.error, r.message = e.code, e.message  # type: ignore[assignment]
        else:
            r.response = (
                pb.CommandLookupTopicResponse.Redirect if answer.redirect else pb.CommandLookupTopicResponse.Connect
            )
            r.brokerServiceUrl = answer.url
            r.authoritative = answer.authoritative
        self.write(command(T.LOOKUP_RESPONSE, lookupTopicResponse=r))

    async def _authorize_lookup(self, topic: str) -> None:
        authority = self.service.host.authority
        if not authority.checks_permissions or authority.is_super_user(self.role):
            return
        t = parse_topic(topic)
        found = await self.service.host.topic_resources.store.get(layout.policies(str(t.namespace)))
        try:
            authority.require_lookup(self.role, str(t), None if found is None else JSON.decode(found.value))
        except AuthorizationError as e:
            raise BinaryError(AUTHORIZATION_ERROR, str(e)) from None

    async def on_partitions(self, c: pb.CommandPartitionedTopicMetadata) -> None:
        r = pb.CommandPartitionedTopicMetadataResponse(request_id=c.request_id)
        try:
            await self._authorize_lookup(c.topic)
            r.partitions = await self.service.partitions(c.topic)
            r.response = pb.CommandPartitionedTopicMetadataResponse.Success
        except BinaryError as e:
            r.response = pb.CommandPartitionedTopicMetadataResponse.Failed
            r.error, r.message = e.code, e.message  # type: ignore[assignment]
        except Exception as e:
            r.response = pb.CommandPartitionedTopicMetadataResponse.Failed
            r.error, r.message = SERVICE_NOT_READY, str(e)  # type: ignore[assignment]
        self.write(command(T.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=r))

    async def on_topics_of_namespace(self, c: pb.CommandGetTopicsOfNamespace) -> None:
        topics = await self.service.host.topic_resources.topics_of(c.namespace)
        r = pb.CommandGetTopicsOfNamespaceResponse(request_id=c.request_id, topics=topics)
        self.write(command(T.GET_TOPICS_OF_NAMESPACE_RESPONSE, getTopicsOfNamespaceResponse=r))

    async def _load(self, name: str, request_id: int) -> Topic | None:
        """The topic loaded for a producer or consumer; None after answering ``ERROR``."""
        try:
            await self._authorize_lookup(name)
            return await self.service.load(name)
        except BinaryError as e:
            self.error(request_id, e.code, e.message)
            return None

    # -- producers -------------------------------------------------------------------------
    async def on_producer(self, c: pb.CommandProducer) -> None:
        topic = await self._load(c.topic, c.request_id)
        if topic is None:
            return
        blocked = self.service.quota_blocks(topic)
        if blocked is not None:  # backlog quota exceeded under a producer policy (``retention``)
            self.error(c.request_id, *blocked)
            return
        existing = self.producers.get(c.producer_id)
        if existing is not None:  # a retried PRODUCER for a producer already created
            producer = existing[0]
        else:
            name = (
                c.producer_name
                or f"{self.service.host.identity.cluster}-{self.service.host.identity.broker_id}-{next(_names)}"
            )
            producer = Producer(c.producer_id, name, self)
            topic.producers[(id(self), c.producer_id)] = producer
            self.producers[c.producer_id] = (producer, topic)
        ok = pb.CommandProducerSuccess(request_id=c.request_id, producer_name=producer.name, last_sequence_id=-1)
        self.write(command(T.PRODUCER_SUCCESS, producer_success=ok))

    def on_send(self, c: pb.CommandSend, frame: codec.Frame) -> None:
        found = self.producers.get(c.producer_id)
        if found is None:
            log.warning("SEND for unknown producer %d: closing the connection", c.producer_id)
            self.abort()
            return
        topic = found[1]
        if not frame.checksum_ok or frame.body is None:
            e = pb.CommandSendError(producer_id=c.producer_id, sequence_id=c.sequence_id, message="Checksum failed")
            e.error = pb.ChecksumError
            self.write(command(T.SEND_ERROR, send_error=e))
            return
        if topic.closed or not self.service.still_served(topic):
            return  # neither stored nor acknowledged: the sweeper closes the topic, the client re-sends
        body = frame.body
        checksum = crc32c.crc32c(body) if frame.checksum is None else frame.checksum
        try:
            index = topic.publish(body, checksum, max(1, c.num_messages))
        except LedgerFencedError as e:  # another broker took the topic: neither stored nor acknowledged
            self.service.fenced(topic, str(e))
            return
        ledger_id, entry_id = topic.log.locate(index)
        receipt = pb.CommandSendReceipt(
            producer_id=c.producer_id,
            sequence_id=c.sequence_id,
            message_id=pb.MessageIdData(ledgerId=ledger_id, entryId=entry_id),
            highest_sequence_id=c.highest_sequence_id,
        )
        frame_out = codec.encode(command(T.SEND_RECEIPT, send_receipt=receipt))
        synced = topic.log.durable()
        if synced is None:
            self.write_raw(frame_out, served=topic)
        else:  # the receipt waits for the sync that covers the entry (group commit), in append order
            synced.add_done_callback(lambda f: self._receipt_after_sync(f, frame_out, topic))

    def _receipt_after_sync(self, synced: asyncio.Future[None], frame: bytes, topic: Topic) -> None:
        failed = "cancelled" if synced.cancelled() else synced.exception()
        if failed is not None:  # not acknowledged (the entry may be in the ledger: at-least-once)
            log.warning("no receipt for a message of %s: its sync failed (%r)", topic.name, failed)
            return
        self.write_raw(frame, served=topic)

    def on_close_producer(self, c: pb.CommandCloseProducer) -> None:
        found = self.producers.pop(c.producer_id, None)
        if found is not None:
            found[1].producers.pop((id(self), c.producer_id), None)
        self.success(c.request_id)

    def close_producer(self, producer_id: int, assigned_url: str | None) -> None:
        """The broker closes a producer (``CLOSE_PRODUCER``); the client reconnects."""
        if self.producers.pop(producer_id, None) is None:
            return
        c = pb.CommandCloseProducer(producer_id=producer_id, request_id=NO_REQUEST)
        if assigned_url:
            c.assignedBrokerServiceUrl = assigned_url
        self.write(command(T.CLOSE_PRODUCER, close_producer=c))

    # -- consumers -------------------------------------------------------------------------
    async def on_subscribe(self, c: pb.CommandSubscribe) -> None:
        topic = await self._load(c.topic, c.request_id)
        if topic is None:
            return
        if c.consumer_id in self.consumers:
            self.success(c.request_id)
            return
        consumer = Consumer(
            c.consumer_id,
            c.consumer_name or f"consumer-{next(_names)}",
            c.priority_level,
            self,
            self.deliver,
            self.active_change,
        )
        earliest = c.initialPosition == pb.CommandSubscribe.Earliest
        durable = c.durable if c.HasField("durable") else True
        start = start_index(topic.log, c.start_message_id) if c.HasField("start_message_id") else None
        new_cursor = c.subscription not in topic.log.cursors
        try:
            sub = topic.subscribe(c.subscription, int(c.subType), consumer, earliest, durable, start)
        except SubscribeError as e:
            self.error(c.request_id, CONSUMER_BUSY, str(e))
            return
        if new_cursor and durable:  # persisted before the subscribe succeeds (``ManagedLedgerImpl#asyncOpenCursor``)
            try:
                await topic.log.flush()
            except Exception as e:  # flushed again on the interval
                log.warning("could not persist the new cursor %s of %s: %r", c.subscription, topic.name, e)
        self.consumers[c.consumer_id] = (consumer, topic, sub)
        self.success(c.request_id)

    def deliver(self, consumer: Consumer, position: tuple[int, int], entry: Entry, redelivery: int) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        m = pb.CommandMessage(
            consumer_id=consumer.consumer_id,
            message_id=pb.MessageIdData(ledgerId=position[0], entryId=position[1]),
            redelivery_count=redelivery,
        )
        self.write_raw(codec.encode_with_body(command(T.MESSAGE, message=m), entry.body, entry.checksum))

    def active_change(self, consumer: Consumer, active: bool) -> None:
        a = pb.CommandActiveConsumerChange(consumer_id=consumer.consumer_id, is_active=active)
        self.write(command(T.ACTIVE_CONSUMER_CHANGE, active_consumer_change=a))

    def on_flow(self, c: pb.CommandFlow) -> None:
        found = self.consumers.get(c.consumer_id)
        if found is None:
            return
        consumer, _, sub = found
        consumer.permits += c.messagePermits
        sub.dispatch()

    def on_ack(self, c: pb.CommandAck) -> None:
        found = self.consumers.get(c.consumer_id)
        if found is not None:
            _, topic, sub = found
            cumulative = c.ack_type == pb.CommandAck.Cumulative
            for mid in c.message_id:
                index = topic.log.index_of(int(mid.ledgerId), int(mid.entryId))
                if index is None:
                    continue
                if len(mid.ack_set) and any(mid.ack_set):
                    continue  # a batch not yet acknowledged whole
                sub.ack(index, cumulative)
            sub.dispatch()
        if c.HasField("request_id"):
            r = pb.CommandAckResponse(consumer_id=c.consumer_id, request_id=c.request_id)
            self.write(command(T.ACK_RESPONSE, ackResponse=r))

    def on_redeliver(self, c: pb.CommandRedeliverUnacknowledgedMessages) -> None:
        found = self.consumers.get(c.consumer_id)
        if found is None:
            return
        consumer, topic, sub = found
        found_ids = (topic.log.index_of(int(m.ledgerId), int(m.entryId)) for m in c.message_ids)
        ids = [i for i in found_ids if i is not None] if c.message_ids else None
        sub.redeliver_unacked(consumer, ids)

    def on_last_message_id(self, c: pb.CommandGetLastMessageId) -> None:
        found = self.consumers.get(c.consumer_id)
        if found is None:
            self.error(c.request_id, CONSUMER_NOT_FOUND, f"Consumer {c.consumer_id} not found")
            return
        _, topic, sub = found
        last = topic.last_entry()
        mid = message_id(topic.log, topic.log.end - 1)
        if last is not None and last.messages > 1:
            mid.batch_index = last.messages - 1
        r = pb.CommandGetLastMessageIdResponse(
            request_id=c.request_id,
            last_message_id=mid,
            consumer_mark_delete_position=message_id(topic.log, sub.mark_delete),
        )
        self.write(command(T.GET_LAST_MESSAGE_ID_RESPONSE, getLastMessageIdResponse=r))

    def on_close_consumer(self, c: pb.CommandCloseConsumer) -> None:
        found = self.consumers.pop(c.consumer_id, None)
        if found is not None:
            found[1].leave(found[2], found[0])
        self.success(c.request_id)

    def close_consumer(self, consumer_id: int, assigned_url: str | None) -> None:
        """The broker closes a consumer (``CLOSE_CONSUMER``); the client reconnects."""
        found = self.consumers.pop(consumer_id, None)
        if found is None:
            return
        found[1].leave(found[2], found[0])
        c = pb.CommandCloseConsumer(consumer_id=consumer_id, request_id=NO_REQUEST)
        if assigned_url:
            c.assignedBrokerServiceUrl = assigned_url
        self.write(command(T.CLOSE_CONSUMER, close_consumer=c))

    def on_unsubscribe(self, c: pb.CommandUnsubscribe) -> None:
        found = self.consumers.get(c.consumer_id)
        if found is None:
            self.error(c.request_id, CONSUMER_NOT_FOUND, f"Consumer {c.consumer_id} not found")
            return
        consumer, topic, sub = found
        if [x for x in sub.consumers if x is not consumer]:
            self.error(c.request_id, CONSUMER_BUSY, "Subscription has other connected consumers")
            return
        del self.consumers[c.consumer_id]
        sub.remove(consumer)
        topic.subscriptions.pop(sub.name, None)
        topic.log.drop_cursor(sub.name)
        self.success(c.request_id)

    def on_seek(self, c: pb.CommandSeek) -> None:
        found = self.consumers.get(c.consumer_id)
        if found is None or not c.HasField("message_id"):
            self.error(c.request_id, UNKNOWN_ERROR, "seek needs a consumer and a message id")
            return
        consumer, topic, sub = found
        target = start_index(topic.log, c.message_id)
        with contextlib.suppress(ValueError):
            sub.redeliver_unacked(consumer, None)
        sub.redeliver.clear()
        sub.acked.clear()
        topic.log.cursors[sub.name] = target - 1
        sub.read_pos = target
        self.success(c.request_id)
