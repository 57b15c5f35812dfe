// Writes dead letters with Spring Kafka's own DeadLetterPublishingRecoverer, for fieldwork's
// dead-letter convention tests (cmd/dlq): the header names and bytes are Spring's, not a copy.
//
//   java -cp CLASSPATH SpringDeadLetters BROKERS ORIGINAL RETRY DLT
//
// writes to DLT (partition 0), in this order:
//   0. what DefaultErrorHandler's recoverer writes for a record of ORIGINAL/3/42 whose listener
//      threw: the kafka_dlt-* headers;
//   1. what the retry topics (@RetryableTopic) write: the recoverer with the header names
//      DeadLetterPublishingRecovererFactory gives it (kafka_original-*, kafka_exception-*,
//      kafka_dlt-original-consumer-group), for the same record after a first hop through RETRY
//      (the hop is written to RETRY partition 0, then read back as the record that failed again).
// Every record carries the producer's own headers traceparent and x-bin (bytes 00 ff 10 80).
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.KafkaUtils;

public final class SpringDeadLetters {
	static final long ORIGINAL_TIMESTAMP = 1773476813589L; // 2026-03-14T08:26:53.589Z

	public static void main(String[] args) throws Exception {
		String brokers = args[0], original = args[1], retryTopic = args[2], dlt = args[3];
		Map<String, Object> props = new HashMap<>();
		props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
		props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
		props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
		DefaultKafkaProducerFactory<byte[], byte[]> pf = new DefaultKafkaProducerFactory<>(props);
		KafkaTemplate<byte[], byte[]> template = new KafkaTemplate<>(pf);
		KafkaUtils.setConsumerGroupId("order-service");

		DeadLetterPublishingRecoverer recoverer = new DeadLetterPublishingRecoverer(template, (r, e) -> new TopicPartition(dlt, 0));
		recoverer.accept(record(original, 3, 42L, "order-17", "{\"event_id\":\"evt-spring-real-1\"}", userHeaders()),
				failure("no such customer: c-17"));

		AtomicReference<Headers> hop = new AtomicReference<>();
		DeadLetterPublishingRecoverer toRetry = retryTopics(template, retryTopic, hop);
		toRetry.accept(record(original, 3, 43L, "order-18", "{\"event_id\":\"evt-spring-real-2\"}", userHeaders()),
				failure("no such customer: c-18"));
		DeadLetterPublishingRecoverer toDLT = retryTopics(template, dlt, new AtomicReference<>());
		toDLT.accept(record(retryTopic, 0, 0L, "order-18", "{\"event_id\":\"evt-spring-real-2\"}", hop.get()),
				failure("no such customer: c-18, again"));

		template.flush();
		pf.destroy();
	}

	// retryTopics is the recoverer as DeadLetterPublishingRecovererFactory configures it for the
	// retry topics; published keeps the headers of what it sent.
	static DeadLetterPublishingRecoverer retryTopics(KafkaTemplate<byte[], byte[]> template, String to, AtomicReference<Headers> published) {
		DeadLetterPublishingRecoverer r = new DeadLetterPublishingRecoverer(template, (cr, e) -> new TopicPartition(to, 0)) {
			@Override
			protected void publish(ProducerRecord<Object, Object> out, KafkaOperations<Object, Object> ops, ConsumerRecord<?, ?> in) {
				published.set(out.headers());
				super.publish(out, ops, in);
			}
		};
		r.setHeaderNamesSupplier(() -> DeadLetterPublishingRecoverer.HeaderNames.Builder.original()
				.offsetHeader(KafkaHeaders.ORIGINAL_OFFSET)
				.timestampHeader(KafkaHeaders.ORIGINAL_TIMESTAMP)
				.timestampTypeHeader(KafkaHeaders.ORIGINAL_TIMESTAMP_TYPE)
				.topicHeader(KafkaHeaders.ORIGINAL_TOPIC)
				.partitionHeader(KafkaHeaders.ORIGINAL_PARTITION)
				.consumerGroupHeader(KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP)
				.exception()
				.keyExceptionFqcn(KafkaHeaders.KEY_EXCEPTION_FQCN)
				.exceptionFqcn(KafkaHeaders.EXCEPTION_FQCN)
				.exceptionCauseFqcn(KafkaHeaders.EXCEPTION_CAUSE_FQCN)
				.keyExceptionMessage(KafkaHeaders.KEY_EXCEPTION_MESSAGE)
				.exceptionMessage(KafkaHeaders.EXCEPTION_MESSAGE)
				.keyExceptionStacktrace(KafkaHeaders.KEY_EXCEPTION_STACKTRACE)
				.exceptionStacktrace(KafkaHeaders.EXCEPTION_STACKTRACE)
				.build());
		return r;
	}

	static Headers userHeaders() {
		RecordHeaders h = new RecordHeaders();
		h.add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".getBytes(StandardCharsets.UTF_8));
		h.add("x-bin", new byte[] {0x00, (byte) 0xff, 0x10, (byte) 0x80});
		return h;
	}

	static ConsumerRecord<byte[], byte[]> record(String topic, int partition, long offset, String key, String value, Headers headers) {
		byte[] k = key.getBytes(StandardCharsets.UTF_8), v = value.getBytes(StandardCharsets.UTF_8);
		return new ConsumerRecord<>(topic, partition, offset, ORIGINAL_TIMESTAMP, TimestampType.CREATE_TIME, k.length, v.length, k, v,
				headers, Optional.empty());
	}

	static Exception failure(String message) {
		return new ListenerExecutionFailedException(
				"Listener method 'public void com.example.OrderListener.on(java.lang.String)' threw exception", "order-service",
				new IllegalStateException(message));
	}
}
