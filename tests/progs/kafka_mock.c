/*
 * A Kafka cluster for the tests, without a Kafka server: librdkafka's mock
 * cluster (one broker) in this process, and a consumer in the same process
 * that reads the given topics from the start and appends every message to
 * OUT as "<topic>\t<value>\n".
 * usage: kafka_mock OUT TOPIC...
 * Prints "bootstrap <servers>" once the cluster serves.  SIGUSR1 takes the
 * broker down (its connections close, new ones are refused), SIGUSR2 brings
 * it back; SIGTERM ends.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop, want_down, want_up;

static void on_sig(int s)
{
	if (s == SIGUSR1)
		want_down = 1;
	else if (s == SIGUSR2)
		want_up = 1;
	else
		stop = 1;
}

static rd_kafka_conf_t *conf_with(const char *k1, const char *v1)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	char err[256];

	if (k1 && rd_kafka_conf_set(c, k1, v1, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "kafka_mock: %s\n", err);
		exit(1);
	}
	return c;
}

int main(int argc, char **argv)
{
	rd_kafka_t *owner, *consumer;
	rd_kafka_mock_cluster_t *mc;
	rd_kafka_topic_partition_list_t *topics;
	rd_kafka_conf_t *cc;
	const char *boot;
	char err[256];
	FILE *out;

	if (argc < 3) {
		fprintf(stderr, "usage: kafka_mock OUT TOPIC...\n");
		return 2;
	}
	out = fopen(argv[1], "a");
	if (!out)
		return 1;
	signal(SIGUSR1, on_sig);
	signal(SIGUSR2, on_sig);
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf_with(NULL, NULL), err, sizeof(err));
	if (!owner || !(mc = rd_kafka_mock_cluster_new(owner, 1))) {
		fprintf(stderr, "kafka_mock: no mock cluster: %s\n", err);
		return 1;
	}
	for (int i = 2; i < argc; i++)
		rd_kafka_mock_topic_create(mc, argv[i], 1, 1);
	boot = rd_kafka_mock_cluster_bootstraps(mc);
	cc = conf_with("bootstrap.servers", boot);
	if (rd_kafka_conf_set(cc, "group.id", "ember-test", err, sizeof(err)) ||
	    rd_kafka_conf_set(cc, "auto.offset.reset", "earliest", err, sizeof(err))) {
		fprintf(stderr, "kafka_mock: %s\n", err);
		return 1;
	}
	consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof(err));
	if (!consumer) {
		fprintf(stderr, "kafka_mock: no consumer: %s\n", err);
		return 1;
	}
	rd_kafka_poll_set_consumer(consumer);
	topics = rd_kafka_topic_partition_list_new(argc - 2);
	for (int i = 2; i < argc; i++)
		rd_kafka_topic_partition_list_add(topics, argv[i], RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(consumer, topics)) {
		fprintf(stderr, "kafka_mock: cannot subscribe\n");
		return 1;
	}
	rd_kafka_topic_partition_list_destroy(topics);
	printf("bootstrap %s\n", boot);
	fflush(stdout);
	while (!stop) {
		rd_kafka_message_t *m;

		if (want_down) {
			want_down = 0;
			rd_kafka_mock_broker_set_down(mc, 1);
			printf("broker down\n");
			fflush(stdout);
		}
		if (want_up) {
			want_up = 0;
			rd_kafka_mock_broker_set_up(mc, 1);
			printf("broker up\n");
			fflush(stdout);
		}
		m = rd_kafka_consumer_poll(consumer, 100);
		if (!m)
			continue;
		if (!m->err) {
			fprintf(out, "%s\t%.*s\n", rd_kafka_topic_name(m->rkt), (int)m->len, (const char *)m->payload);
			fflush(out);
		}
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(consumer);
	rd_kafka_destroy(consumer);
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(owner);
	fclose(out);
	return 0;
}
