/* The MQTT baseline for scripts/bench: the correct exchange of docs/CONTRACT.md#protocol in C on
 * libmosquitto, as gate does it, with the network loop on the calling thread:
 * connect (MQTT 3.1.1, keep-alive 60, client id bench-XXXXXXXX), subscribe to
 * the status topic at QoS 0, wait for the SUBACK, publish the trigger (Unix time,
 * QoS 0, not retained), then wait for a non-retained `1` and then `0`; 5 s budget.
 * Usage: baseline-mqtt HOST PORT [--tls CAFILE] [--nodelay] [--exchange] [--udp IPV4 PORT]
 * --nodelay sets MOSQ_OPT_TCP_NODELAY (off by default in libmosquitto, as in gate):
 * without it, Nagle's algorithm holds CONNECT back until the server acknowledges the
 * TLS Finished, one round trip more through a remote broker (scripts/bench/remote).
 * --exchange prints the milliseconds from the PUBLISH to the `0` on stdout: the exchange
 * as a client whose connection is already up sees it (the daemon's warm link), the
 * floor under a delegated opening (wire, broker and relay, no process of gate's).
 * --udp sends the trigger as a UDP datagram (0x01) to the ESP32 instead of publishing it,
 * once the SUBACK is in: `gate open` with [udp] and [mqtt], which watches the status topic
 * before its UDP trigger leaves; the cycle is confirmed on the status topic.
 * Exit 0 on a confirmed relay cycle; 1 with a one-line reason on stderr otherwise. */
#include <arpa/inet.h>
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#define STATUS "iot/house/gate/esp32/status"
#define TRIGGER "iot/house/gate/esp32/trigger"

enum phase { CONNECTING, SUBSCRIBING, WAITING_FOR_1, WAITING_FOR_0, DONE, FAILED };
static const char *waiting_for[] = { "CONNACK", "SUBACK", "`1`", "`0`" };
static enum phase phase = CONNECTING;
static char reason[160];
static struct timespec published, released;
static int udp_fd = -1;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void fail(const char *text, const char *detail) {
    snprintf(reason, sizeof reason, "%s%s", text, detail);
    phase = FAILED;
}

static void on_connect(struct mosquitto *mosq, void *data, int rc) {
    (void)data;
    if (rc != 0) { fail("broker refused the connection: ", mosquitto_connack_string(rc)); return; }
    if (mosquitto_subscribe(mosq, NULL, STATUS, 0) != MOSQ_ERR_SUCCESS) { fail("subscribe failed", ""); return; }
    phase = SUBSCRIBING;
}

static void on_subscribe(struct mosquitto *mosq, void *data, int mid, int count, const int *granted) {
    (void)data; (void)mid;
    if (count < 1 || granted[0] == 0x80) { fail("broker refused the subscription", ""); return; }
    char trigger[24];
    int length = snprintf(trigger, sizeof trigger, "%lld", (long long)time(NULL));
    if (udp_fd >= 0) {
        unsigned char datagram = 1;
        if (send(udp_fd, &datagram, 1, 0) != 1) { fail("UDP send failed", ""); return; }
    } else if (mosquitto_publish(mosq, NULL, TRIGGER, length, trigger, 0, false) != MOSQ_ERR_SUCCESS) {
        fail("publish failed", "");
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &published);
    phase = WAITING_FOR_1;
}

static void on_message(struct mosquitto *mosq, void *data, const struct mosquitto_message *message) {
    (void)mosq; (void)data;
    if (message->retain || strcmp(message->topic, STATUS) != 0 || phase < WAITING_FOR_1) return;  /* stale, or before our trigger */
    const char *p = message->payload, *end = p + message->payloadlen;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n')) end--;
    if (end - p == 1 && *p == '1') phase = WAITING_FOR_0;           /* a repeated `1` is harmless */
    else if (end - p == 1 && *p == '0') {  /* a `0` before our `1`: another cycle's end */
        if (phase == WAITING_FOR_0) { clock_gettime(CLOCK_MONOTONIC, &released); phase = DONE; }
    }
    else {
        char shown[40];
        snprintf(shown, sizeof shown, "%.*s", (int)(end - p < 32 ? end - p : 32), p);
        fail("invalid status payload: ", shown);
    }
}

int main(int argc, char **argv) {
    const char *cafile = NULL;
    int nodelay = 0, exchange = 0;
    int usage = argc < 3;
    for (int i = 3; i < argc && !usage; i++) {
        if (strcmp(argv[i], "--tls") == 0 && i + 1 < argc) cafile = argv[++i];
        else if (strcmp(argv[i], "--nodelay") == 0) nodelay = 1;
        else if (strcmp(argv[i], "--exchange") == 0) exchange = 1;
        else if (strcmp(argv[i], "--udp") == 0 && i + 2 < argc) {
            struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[i + 2])) };
            if (inet_pton(AF_INET, argv[i + 1], &to.sin_addr) != 1) usage = 1;
            udp_fd = socket(AF_INET, SOCK_DGRAM, 0);
            if (udp_fd < 0 || connect(udp_fd, (struct sockaddr *)&to, sizeof to) != 0) { perror("udp"); return 1; }
            i += 2;
        } else usage = 1;
    }
    if (usage) {
        fprintf(stderr, "usage: %s HOST PORT [--tls CAFILE] [--nodelay] [--exchange] [--udp IPV4 PORT]\n", argv[0]);
        return 64;
    }
    long long deadline = now_ms() + 5000;
    unsigned int bits;
    if (getrandom(&bits, sizeof bits, 0) != sizeof bits) { perror("getrandom"); return 1; }
    char id[16];
    snprintf(id, sizeof id, "bench-%08x", bits);

    mosquitto_lib_init();
    struct mosquitto *mosq = mosquitto_new(id, true, NULL);
    if (!mosq) { perror("mosquitto_new"); return 1; }
    mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_connect_callback_set(mosq, on_connect);
    mosquitto_subscribe_callback_set(mosq, on_subscribe);
    mosquitto_message_callback_set(mosq, on_message);
    if (nodelay) mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1);
    int rc;
    if (cafile && (rc = mosquitto_tls_set(mosq, cafile, NULL, NULL, NULL, NULL)) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "tls: %s\n", mosquitto_strerror(rc));
        return 1;
    }
    /* Blocking, as gate's: DNS, TCP (and TLS), then CONNECT sent. */
    if ((rc = mosquitto_connect(mosq, argv[1], atoi(argv[2]), 60)) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "connect to %s:%s: %s\n", argv[1], argv[2], mosquitto_strerror(rc));
        return 1;
    }
    while (phase != DONE && phase != FAILED) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            snprintf(reason, sizeof reason, "timeout: no %s within 5 s", waiting_for[phase]);
            break;
        }
        if ((rc = mosquitto_loop(mosq, (int)left, 1)) != MOSQ_ERR_SUCCESS) {
            if (phase != FAILED) snprintf(reason, sizeof reason, "connection lost: %s", mosquitto_strerror(rc));
            break;
        }
    }
    if (phase == DONE) mosquitto_disconnect(mosq);
    mosquitto_destroy(mosq);
    mosquitto_lib_cleanup();
    if (phase == DONE) {
        if (exchange) printf("%.3f\n", (released.tv_sec - published.tv_sec) * 1e3 + (released.tv_nsec - published.tv_nsec) / 1e6);
        return 0;
    }
    fprintf(stderr, "%s\n", reason);
    return 1;
}
